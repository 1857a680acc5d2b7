/* SPDX-License-Identifier: MIT */
/*
 * accelfs: accelerator hardware as a filesystem.
 *
 * Start-up order matters:
 *   1. the command line is checked (fs/options.c, a --log=FILE that cannot
 *      be opened included, and FUSE's -o options by creating the session):
 *      a usage error exits 2 having changed nothing;
 *   2. the mountpoint is checked (fs/startup.c): missing or not a directory
 *      exits 2, a live accelfs there exits 1 (naming its pid when it is
 *      the one serving our state directory);
 *   3. the state directory is made and locked: another accelfs on it exits
 *      1 naming its pid, before anything of it is touched;
 *   4. only then are side effects allowed: a dead mount left by a killed
 *      accelfs is detached, the simulators are set up, the process forks;
 *   5. the node (driver libraries, threads) is started in the process that
 *      will serve, after the fork, and the parent returns only once the
 *      mount is up and the tree is complete, so a script can use the mount
 *      the moment `accelfs` exits.
 * It ends with 0 once unmounted or stopped by SIGTERM or SIGINT (reset to
 * their defaults first, so that libfuse's handlers take them even where
 * they were ignored at exec), 1 on a failure, 2 on a usage error.
 * The lock is taken before the fork and shared with the child (a flock
 * belongs to the open file, which the child's descriptor keeps open when
 * the parent exits); the child then writes its own pid into it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "core/state/cdi_dir.h"
#include "core/state/delegation.h"
#include "core/model/log.h"
#include "core/engine/metrics.h"
#include "core/engine/node.h"
#include "core/state/record.h"
#include "fs/accelfs.h"
#include "fs/attached.h"
#include "fs/crashguard.h"
#include "fs/dies_setup.h"
#include "fs/fusectl.h"
#include "fs/hook_setup.h"
#include "fs/notify.h"
#include "fs/waiters.h"
#include "fs/options.h"
#include "fs/service.h"
#include "fs/textfile.h"
#include "fs/reclaimer.h"
#include "fs/request_timeout.h"
#include "fs/layout_files.h"
#include "fs/sim_setup.h"
#include "fs/startup.h"
#include "fs/stop_reason.h"
#include "fs/takeover.h"

/* Readiness pipe: the background child writes one byte (0 = ready) before it serves. */
static int ready_fd = -1;

static void report_ready(int status)
{
	unsigned char b = (unsigned char)status;

	if (ready_fd < 0)
		return;
	if (write(ready_fd, &b, 1) != 1)
		log_warn("could not tell the parent that the mount is ready");
	close(ready_fd);
	ready_fd = -1;
}

/* Fork; the parent waits for the child's verdict and exits with it. */
static int go_background(void)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds)) {
		perror("accelfs: pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("accelfs: fork");
		return -1;
	}
	if (pid > 0) {
		unsigned char b = 1;
		close(fds[1]);
		if (read(fds[0], &b, 1) != 1)
			b = 1; /* the child died before it was ready */
		_exit(b);
	}
	close(fds[0]);
	ready_fd = fds[1];
	setsid();
	return 0;
}

/* <state-dir>/accelfs.pid names the serving process, for scripts and for a kill -9 test. */
static void write_pid_file(const char *state_dir)
{
	char path[PATH_MAX], text[32];
	int n = snprintf(text, sizeof(text), "%d\n", (int)getpid());

	snprintf(path, sizeof(path), "%s/accelfs.pid", state_dir);
	if (accel_durable_write(path, text, (size_t)n, 0644))
		log_warn("cannot write %s", path);
}

static void remove_pid_file(const char *state_dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/accelfs.pid", state_dir);
	unlink(path);
}

/*
 * In the background, stdin and stdout are /dev/null and stderr is the log
 * file (log: its path, "" for none): what is written there by what does not
 * use the log (a failed assertion, the C library's abort on a corrupted
 * heap, a sanitizer without log_path, libfuse) is the last word of a daemon
 * that dies, and would otherwise be lost with the terminal it started from.
 */
static void detach_stdio(const char *log)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	int err = *log ? open(log, O_WRONLY | O_APPEND | O_CLOEXEC) : -1;

	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(err >= 0 ? err : fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (err > STDERR_FILENO)
		close(err);
	accel_log_use_syslog(false, false); /* the log's lines once, to the file: none copied to stderr */
}

/* SIGHUP: log rotation, nothing else (libfuse's handler would end the session). */
static void on_sighup(int sig)
{
	(void)sig;
	accel_log_reopen();
}

static int install_sighup(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sighup;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	return sigaction(SIGHUP, &sa, NULL);
}

/* The FUSE options every mount gets; the session checks them (and the user's -o) at once. */
static void add_fuse_args(struct fuse_args *args, const struct fs_options *o, struct accelfs *fs)
{
	if (geteuid() == 0) {
		/*
		 * As root: let other users in (their access is then checked
		 * against the tree's modes), and honour device nodes in jobs'
		 * dev/ directories, which need a "dev" mount.
		 */
		fuse_opt_add_arg(args, "-odefault_permissions,allow_other,dev,fsname=accelfs,subtype=accelfs");
		fs->mounted_with_dev = true;
	} else {
		fuse_opt_add_arg(args, "-odefault_permissions,fsname=accelfs,subtype=accelfs");
	}
	if (o->read_only)
		fuse_opt_add_arg(args, "-oro"); /* the kernel refuses writes first; the daemon too (fs/ops.c) */
	if (o->debug)
		fuse_opt_add_arg(args, "-d");
	/* dies/<n>/vram moves bulk data: 1 MiB per request (see fs_dies_tune). */
	fuse_opt_add_arg(args, "-omax_read=1048576");
}

/*
 * The log file: --log (checked with the options, so this seldom fails), or
 * the state directory's in the background.  A daemon that cannot open it
 * would log nowhere once it detaches: that is a failure.
 */
/* path: where the log went, for the crash guard ("" for none). */
static int open_log(const struct fs_options *o, const char *state_dir, char *path, size_t len)
{
	int ret;

	*path = '\0';
	if (!o->log_file && o->foreground)
		return 0;
	snprintf(path, len, "%s", o->log_file ? o->log_file : state_dir);
	if (!o->log_file)
		snprintf(path, len, "%s/accelfs.log", state_dir);
	ret = accel_log_open_file(path);
	if (ret)
		fprintf(stderr, "accelfs: cannot open the log file %s: %s: fix it or give another with --log=FILE\n",
		        path, strerror(-ret));
	return ret;
}

/*
 * SIGINT and SIGTERM end the session, whatever this process inherited: a
 * shell script's `accelfs ... &` starts it with SIGINT ignored, and libfuse
 * installs its handlers only over the default disposition.  Before any
 * thread exists, so that every thread inherits the unblocked mask.
 */
static void reset_stop_signals(void)
{
	sigset_t set;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* The metrics textfile writer, if any: set once it runs, read by the threads that kick it. */
static struct fs_textfile *textfile_of(struct accelfs *fs)
{
	return __atomic_load_n(&fs->textfile, __ATOMIC_ACQUIRE);
}

/* A new snapshot: the kernel's caches and the metrics textfile follow (both only queue work here). */
/* A layout_status or a cordon moved (no snapshot does): its waiters are woken, once the notifier runs. */
static void on_layout_change(void *ctx)
{
	struct accelfs *fs = ctx;

	fs_side_moved(fs); /* counted even before the notifier runs */
	if (__atomic_load_n(&fs->notifier, __ATOMIC_ACQUIRE))
		fs_notify_check(fs);
}

static void on_node_change(void *ctx, struct accel_snapshot *old_snap, struct accel_snapshot *new_snap)
{
	fs_notify_changed(ctx, old_snap, new_snap);
	fs_textfile_kick(textfile_of(ctx));
	fs_layouts_kick(ctx); /* what a layout waited for may be there now */
}

/* A counter moved (a carve failed, an orphan was reclaimed): the textfile follows. */
static void on_metrics_change(void *ctx)
{
	fs_side_moved(ctx); /* metrics shows counters no snapshot counts */
	fs_textfile_kick(textfile_of(ctx));
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fs_options o;
	struct accel_node_options nopt;
	struct startup_mountpoint mp;
	struct sim_setup sim;
	struct accelfs fs;
	char err[1024], state_dir[PATH_MAX], sim_cdi_dir[PATH_MAX], taken_over[2 * PATH_MAX + 1024] = "";
	char log_path[PATH_MAX] = "";
	const char *want_state_dir;
	int ret, lock_fd = -1, cdi_fd = -1;
	unsigned conn = 0;              /* the mount's FUSE connection, once fs_crashguard_arm found it */
	unsigned request_timeout_s = 0; /* the kernel's bound on an answer for it (fs/request_timeout.h) */
	bool taken_over_routinely = false;

	reset_stop_signals();
	memset(&o, 0, sizeof(o));
	memset(&fs, 0, sizeof(fs));
	pthread_mutex_init(&fs.files_lock, NULL);
	memset(&nopt, 0, sizeof(nopt));
	ret = fs_options_parse(&args, &o);
	if (ret != FS_OPTIONS_GO_ON)
		goto out;
	want_state_dir = o.state_dir ? o.state_dir : "/var/lib/accelfs";
	fs.read_only = o.read_only;
	add_fuse_args(&args, &o, &fs);
	/* Nothing happens yet: the session is only mounted later, after the fork. */
	fs.se = fuse_session_new(&args, &accelfs_ops, sizeof(accelfs_ops), &fs);
	if (!fs.se) {
		fprintf(stderr, "accelfs: FUSE refused the -o options (its message is above)\n");
		ret = fs_options_usage_error(argv[0]);
		goto out;
	}
	/* Before the mountpoint is looked at: a predecessor that died holding it would hang the look. */
	ret = takeover_dead_holder(want_state_dir, taken_over, sizeof(taken_over), &taken_over_routinely);
	if (!ret)
		ret = startup_check_mountpoint(o.mountpoint, &mp);
	if (ret == STARTUP_USAGE)
		ret = fs_options_usage_error(argv[0]); /* a usage error ends with the usage line, as every other */
	if (!ret && mp.live)
		ret = startup_refuse_live(want_state_dir, &mp);
	if (ret)
		goto out;

	ret = 1;
	/* A row without its freshness class is a build that must not serve (fs/tree.h). */
	char rows_err[256];
	if (fs_tree_check(rows_err, sizeof(rows_err))) {
		fprintf(stderr, "accelfs: %s\n", rows_err);
		goto out;
	}
	/* The CDI specs name the hook that records containers (fs/hook_setup.c). */
	bool no_hook = false;
	char hook_err[1024];
	if (fs_hook_setup(o.hook, mp.path, hook_err, sizeof(hook_err))) {
		if (o.hook) {
			fprintf(stderr, "accelfs: %s\n", hook_err); /* asked for by name: a usage error to fix now */
			goto out;
		}
		/*
		 * Not installed: serve everything else (the dies need no hook), but
		 * write no node-level CDI spec, since a container given a job by it
		 * could not be recorded.  Said on stderr and in the log file, once
		 * it is open (below).
		 */
		no_hook = true;
	}
	if (accel_mkdirs(want_state_dir, 0755) || !realpath(want_state_dir, state_dir)) {
		fprintf(stderr, "accelfs: cannot use the state directory %s: %s\n", want_state_dir, strerror(errno));
		goto out;
	}
	if (startup_lock_state_dir(state_dir, mp.path, &lock_fd))
		goto out;
	if (open_log(&o, state_dir, log_path, sizeof(log_path))) /* before the fork: the detach is logged there too */
		goto out;
	if (*taken_over && taken_over_routinely)
		log_notice("%s", taken_over);
	else if (*taken_over)
		log_warn("%s", taken_over);
	if (no_hook)
		log_warn("%s; no CDI spec is written until it is", hook_err);
	if (startup_detach_stale(&mp))
		goto out;

	nopt.state_dir = state_dir;
	nopt.read_only = o.read_only;
	/* A simulated node's nodes cannot be opened: keep its CDI spec out of the system's unless asked. */
	snprintf(sim_cdi_dir, sizeof(sim_cdi_dir), "%s/cdi", state_dir);
	nopt.cdi_dir = o.cdi_dir ? o.cdi_dir : o.sim ? sim_cdi_dir : "/var/run/cdi";
	if (no_hook)
		nopt.cdi_dir = NULL;
	/* One daemon per CDI directory (core/state/cdi_dir.h); a daemon that writes no spec claims none. */
	if (nopt.cdi_dir && !o.read_only &&
	    accel_cdi_claim(nopt.cdi_dir, state_dir, mp.path, &cdi_fd, err, sizeof(err))) {
		fprintf(stderr, "accelfs: %s\n", err);
		goto out;
	}
	nopt.poll_ms = o.poll_ms;
	nopt.orphan_grace_ms = o.orphan_grace_ms;
	nopt.foreign_reclaim = o.foreign && !strcmp(o.foreign, "reclaim");
	nopt.busy_retries = o.busy_retry_count;
	if (o.sim && sim_setup(&sim, state_dir, o.sim_topology, &nopt, err, sizeof(err))) {
		fprintf(stderr, "accelfs: %s\n", err);
		goto out;
	}

	if (!o.foreground) {
		if (go_background())
			goto out;
		startup_lock_note(lock_fd, mp.path, 0, 0); /* the lock came along; now it names us */
		if (cdi_fd >= 0)
			accel_cdi_claim_note(cdi_fd, state_dir, mp.path); /* the CDI directory's too */
		accel_log_set_stderr_level(ACCEL_LOG_WARN);               /* the rest goes to the log file */
	}

	if (!fs.mounted_with_dev)
		log_warn("not running as root: the mount is nodev (the device nodes in jobs' dev/ cannot be "
		         "opened) and only this user can enter it; run as root for both");
	fs.started = time(NULL);
	fs.inodes = fs_inodes_new();
	fs.pollers = fs_pollers_new();
	if (!fs.inodes || !fs.pollers)
		goto out;
	fs.deleg = accel_delegation_load(state_dir, err, sizeof(err));
	if (!fs.deleg) {
		log_error("%s", err);
		goto out;
	}
	nopt.on_change = on_node_change;
	nopt.ctx = &fs;
	fs.node = accel_node_start(&nopt, err, sizeof(err));
	if (!fs.node) {
		log_error("%s", err);
		goto out;
	}
	/* Before the mount serves: a job a container holds must refuse rmdir from the first request on. */
	if (fs_attached_open(&fs, state_dir, err, sizeof(err))) {
		log_error("%s", err);
		goto out;
	}
	if (fs_layouts_open(&fs, state_dir, nopt.poll_ms, o.read_only, on_layout_change)) {
		log_error("cannot open the layouts: out of memory");
		goto out;
	}
	/* After the fork: the dies' arbiter runs a thread of its own. */
	if (fs_dies_setup(o.sim, o.sim_topology, state_dir, o.read_only, &fs.mount.dies, err, sizeof(err))) {
		log_error("%s", err);
		goto out;
	}
	if (fuse_set_signal_handlers(fs.se))
		goto out;
	if (fs_stop_reason_arm()) {
		log_error("cannot install the SIGTERM and SIGINT handlers: %s", strerror(errno));
		goto out_signals;
	}
	if (install_sighup()) {
		log_error("cannot install the SIGHUP handler: %s", strerror(errno));
		goto out_signals;
	}
	if (fuse_session_mount(fs.se, mp.path)) {
		log_error("cannot mount on %s", mp.path);
		goto out_signals;
	}
	/* From here on, dying aborts the mount's connection: no caller can be left waiting (fs/crashguard.h). */
	{
		struct fs_crashguard_files reports = { *log_path ? log_path : NULL, o.metrics_textfile };

		if (fs_crashguard_arm(mp.path, &reports, &conn, err, sizeof(err)))
			log_warn("%s; if accelfs dies, callers of %s may stay blocked until the next accelfs starts",
			         err, mp.path);
		startup_lock_note(lock_fd, mp.path, conn, conn ? fs_fusectl_id(conn) : 0);
	}
	request_timeout_s = fs_request_timeout_note(mp.path, fs.mount.dies != NULL);
	fs_dies_mounted(fs.mount.dies, mp.path);
	fs_dies_limit_waits(fs.mount.dies, request_timeout_s); /* a wait that long is answered, not aborted */
	/* The node's threads publish already: they find the notifier once it is whole. */
	__atomic_store_n(&fs.notifier, fs_notifier_start(&fs), __ATOMIC_RELEASE);
	if (!fs.notifier)
		goto out_unmount;
	/* It clears attachments and reclaims jobs: both writes, neither done on a read-only mount. */
	if (!o.read_only) {
		int why;
		fs.reclaimer = fs_reclaimer_start(&fs, nopt.poll_ms, &why);
		if (!fs.reclaimer) {
			log_error("cannot start the thread that clears stale attachments: %s", strerror(-why));
			goto out_unmount;
		}
	}
	if (!o.read_only && fs_layouts_start(&fs)) {
		log_error("cannot start the thread that applies the layouts");
		goto out_unmount;
	}
	if (o.metrics_textfile) {
		struct fs_textfile *tf =
			fs_textfile_start(fs.node, fs.mount.dies, o.metrics_textfile, err, sizeof(err));
		if (!tf) {
			log_error("%s", err);
			goto out_unmount;
		}
		__atomic_store_n(&fs.textfile, tf, __ATOMIC_RELEASE);
		accel_metrics_set_listener(on_metrics_change, &fs);
	}
	log_info("serving %s%s (state in %s)", mp.path, o.sim ? " as a simulated node" : "", state_dir);
	if (o.read_only)
		log_info("read-only: every write, mkdir, rmdir, chmod and chown answers EROFS, vram does not open; "
		         "nothing is carved, reclaimed or recorded, and no CDI spec file is written or removed");
	write_pid_file(state_dir);
	if (!o.foreground) {
		if (chdir("/"))
			log_warn("cannot leave the current directory: %s", strerror(errno));
		detach_stdio(log_path);
		report_ready(0);
	}
	fs_service_ready(mp.path, o.sim); /* under systemd: the tree is complete, as report_ready says above */
	{
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		if (!cfg)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(cfg, 0);
		fuse_loop_cfg_set_max_threads(cfg, 16);
		/* 0: unmounted; a signal's number: SIGTERM or SIGINT stopped it (both exit 0); -errno: failed. */
		int loop = fuse_session_loop_mt(fs.se, cfg);

		ret = loop < 0 ? 1 : 0;
		fuse_loop_cfg_destroy(cfg);
		fs_stop_reason_log(loop, mp.path, conn,
		                   request_timeout_s); /* a stop, an unmount or an abort: before we unmount */
	}
	fs_service_stopping(mp.path);
	remove_pid_file(state_dir);

out_unmount:
	fs_layouts_close(&fs);           /* it carves and reclaims: before the node and the session go */
	fs_reclaimer_stop(fs.reclaimer); /* it rmdirs and invalidates: before the node and the session go */
	fs.reclaimer = NULL;
	/* The poller and the health threads still publish: none may reach the notifier being freed. */
	accel_node_mute(fs.node);
	fs_notifier_stop(fs.notifier);
	__atomic_store_n(&fs.notifier, NULL, __ATOMIC_RELEASE);
	fuse_session_unmount(fs.se);
out_signals:
	fs_stop_reason_disarm();
	fuse_remove_signal_handlers(fs.se);
out:
	report_ready(1);
	fs_layouts_close(&fs); /* held() reads the attachments */
	fs_attached_close(&fs);
	/*
	 * The textfile writer renders the dies: it stops first, taking its file
	 * with it (a publish or a counter moving from now on kicks it in vain);
	 * it is freed once the node, which kicks it, has stopped.
	 */
	accel_metrics_set_listener(NULL, NULL);
	fs_textfile_stop(fs.textfile);
	fs_dies_free(fs.mount.dies); /* before the session: parked opens are answered */
	if (fs.se)
		fuse_session_destroy(fs.se);
	fs_open_files_free(&fs);
	fs_open_dirs_free(&fs);
	accel_node_stop(fs.node);
	fs_textfile_free(fs.textfile);
	accel_cdi_claim_release(cdi_fd); /* the node wrote its last spec file */
	startup_lock_release(lock_fd);   /* last: until here this process still acted on the state directory */
	accel_delegation_free(fs.deleg);
	fs_pollers_free(fs.pollers);
	fs_inodes_free(fs.inodes);
	pthread_mutex_destroy(&fs.files_lock);
	fuse_opt_free_args(&args);
	fs_options_free(&o);
	fs_crashguard_stopping(); /* last: a crash before here is a death the guardian reports */
	return ret;
}
