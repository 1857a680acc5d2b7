/* SPDX-License-Identifier: MIT */
/*
 * accelfs: accelerator hardware as a filesystem.
 *
 * Start-up order matters: the node (driver libraries, threads) is started
 * in the process that will serve, after any fork, and the parent returns
 * only once the mount is up and the tree is complete, so a script can use
 * the mount the moment `accelfs` exits.
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

#include "core/delegation.h"
#include "core/log.h"
#include "core/node.h"
#include "core/record.h"
#include "fs/accelfs.h"
#include "fs/dies_setup.h"
#include "fs/notify.h"
#include "fs/sim_setup.h"

struct options {
	int foreground;
	int debug;
	int show_help;
	int show_version;
	int sim;
	int read_only;
	char *sim_topology;
	char *state_dir;
	char *cdi_dir;
	char *log_file;
	char *poll_interval;
	char *orphan_grace;
	char *busy_retries;
	char *mountpoint;
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("-f", foreground),
	OPT("--foreground", foreground),
	OPT("-d", debug),
	OPT("--debug", debug),
	OPT("-h", show_help),
	OPT("--help", show_help),
	OPT("-V", show_version),
	OPT("--version", show_version),
	OPT("--sim", sim),
	OPT("--read-only", read_only),
	{ "--sim=%s", offsetof(struct options, sim_topology), 0 },
	{ "--state-dir=%s", offsetof(struct options, state_dir), 0 },
	{ "--cdi-dir=%s", offsetof(struct options, cdi_dir), 0 },
	{ "--log=%s", offsetof(struct options, log_file), 0 },
	{ "--poll-interval=%s", offsetof(struct options, poll_interval), 0 },
	{ "--orphan-grace=%s", offsetof(struct options, orphan_grace), 0 },
	{ "--busy-retries=%s", offsetof(struct options, busy_retries), 0 },
	FUSE_OPT_END
};

static void usage(const char *prog)
{
	printf("usage: %s [OPTIONS] MOUNTPOINT\n"
	       "\n"
	       "Accelerator hardware as a filesystem: MIG partitions of T-Head PPUs and NVIDIA GPUs\n"
	       "are carved with mkdir and given back with rmdir.\n"
	       "\n"
	       "  -f, --foreground        stay in the foreground (default: return once the mount is ready)\n"
	       "  --sim[=TOPOLOGY.json]   serve a simulated node (built-in topology when no file is given)\n"
	       "  --state-dir=DIR         ownership records and simulated hardware (default /var/lib/accelfs)\n"
	       "  --cdi-dir=DIR           where the node-level CDI spec is kept (default /var/run/cdi)\n"
	       "  --log=FILE              also append the log to FILE (default when in the background:\n"
	       "                          STATE_DIR/accelfs.log)\n"
	       "  --poll-interval=SEC     how often the drivers are re-read for what udev cannot report\n"
	       "                          (MIG mode, instances carved by hand); default 2\n"
	       "  --orphan-grace=SEC      how long an unmanaged instance is left before it is reclaimed;\n"
	       "                          default 10\n"
	       "  --busy-retries=N        retries of a destroy the driver calls busy; default 4\n"
	       "  --read-only             observe only: never carve, destroy or reclaim (mkdir: EROFS)\n"
	       "  -o OPT[,OPT...]         FUSE mount options (allow_other, ...)\n"
	       "  -d, --debug             log every FUSE request (implies -f)\n"
	       "  -h, --help, -V, --version\n",
	       prog);
}

static int parse_seconds_ms(const char *s, const char *what, unsigned *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < 0.001 || v > 86400) {
		fprintf(stderr, "accelfs: %s=%s: expected seconds between 0.001 and 86400\n", what, s);
		return -1;
	}
	*out = (unsigned)(v * 1000.0 + 0.5);
	return 0;
}

/* The one non-option argument is the mountpoint; it is not a FUSE option. */
static int take_mountpoint(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *o = data;

	(void)outargs;
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (o->mountpoint) {
		fprintf(stderr, "accelfs: more than one mountpoint given (%s, %s)\n", o->mountpoint, arg);
		return -1;
	}
	o->mountpoint = strdup(arg);
	return o->mountpoint ? 0 : -1;
}

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

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options o = { 0 };
	struct accel_node_options nopt;
	struct sim_setup sim;
	struct accelfs fs;
	struct fs_dies *dies = NULL;
	char err[1024], state_dir[PATH_MAX], sim_cdi_dir[PATH_MAX];
	int ret = 1;

	memset(&fs, 0, sizeof(fs));
	memset(&nopt, 0, sizeof(nopt));
	if (fuse_opt_parse(&args, &o, option_spec, take_mountpoint) == -1)
		return 2;
	if (o.show_help) {
		usage(argv[0]);
		return 0;
	}
	if (o.show_version) {
		printf("accelfs %s (libfuse %s)\n", ACCELFS_VERSION, fuse_pkgversion());
		return 0;
	}
	if (!o.mountpoint) {
		usage(argv[0]);
		return 2;
	}
	if (o.sim_topology)
		o.sim = 1;
	if (o.debug)
		o.foreground = 1;

	{
		const char *want = o.state_dir ? o.state_dir : "/var/lib/accelfs";
		if (accel_mkdirs(want, 0755) || !realpath(want, state_dir)) {
			fprintf(stderr, "accelfs: cannot use the state directory %s: %s\n", want, strerror(errno));
			return 1;
		}
	}
	nopt.state_dir = state_dir;
	nopt.read_only = o.read_only;
	/* A simulated node's nodes cannot be opened: keep its CDI spec out of the system's unless asked. */
	snprintf(sim_cdi_dir, sizeof(sim_cdi_dir), "%s/cdi", state_dir);
	nopt.cdi_dir = o.cdi_dir ? o.cdi_dir : o.sim ? sim_cdi_dir : "/var/run/cdi";
	if (o.poll_interval && parse_seconds_ms(o.poll_interval, "--poll-interval", &nopt.poll_ms))
		return 2;
	if (o.orphan_grace && parse_seconds_ms(o.orphan_grace, "--orphan-grace", &nopt.orphan_grace_ms))
		return 2;
	if (o.busy_retries) {
		char *end;
		long v = strtol(o.busy_retries, &end, 10);
		if (*end || v < 1 || v > 100) {
			fprintf(stderr, "accelfs: --busy-retries=%s: expected 1..100\n", o.busy_retries);
			return 2;
		}
		nopt.busy_retries = (unsigned)v;
	}
	if (o.sim && sim_setup(&sim, state_dir, o.sim_topology, &nopt, err, sizeof(err))) {
		fprintf(stderr, "accelfs: %s\n", err);
		return 1;
	}

	if (geteuid() == 0) {
		/*
		 * As root: let other users in (their access is then checked
		 * against the tree's modes), and honour device nodes in jobs'
		 * dev/ directories, which need a "dev" mount.
		 */
		fuse_opt_add_arg(&args, "-odefault_permissions,allow_other,dev,fsname=accelfs,subtype=accelfs");
		fs.mounted_with_dev = true;
	} else {
		fuse_opt_add_arg(&args, "-odefault_permissions,fsname=accelfs,subtype=accelfs");
	}
	if (o.debug)
		fuse_opt_add_arg(&args, "-d");
	/* dies/<n>/vram moves bulk data: 1 MiB per request (see fs_dies_tune). */
	fuse_opt_add_arg(&args, "-omax_read=1048576");

	if (!o.foreground && go_background())
		return 1;
	if (!o.foreground)
		accel_log_set_stderr_level(ACCEL_LOG_WARN); /* the rest goes to the log file */
	if (o.log_file || !o.foreground) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s", o.log_file ? o.log_file : state_dir);
		if (!o.log_file)
			snprintf(path, sizeof(path), "%s/accelfs.log", state_dir);
		if (accel_log_open_file(path))
			fprintf(stderr, "accelfs: cannot open the log file %s\n", path);
	}

	if (!fs.mounted_with_dev)
		log_warn("not running as root: the mount is nodev (the device nodes in jobs' dev/ cannot be "
			 "opened) and only this user can enter it; run as root for both");
	fs.started = time(NULL);
	fs.entry_timeout = 1.0;
	fs.attr_timeout = 1.0;
	fs.inodes = fs_inodes_new();
	if (!fs.inodes)
		goto out;
	fs.deleg = accel_delegation_load(state_dir, err, sizeof(err));
	if (!fs.deleg) {
		log_error("%s", err);
		goto out;
	}
	nopt.on_change = fs_notify_changed;
	nopt.ctx = &fs;
	fs.node = accel_node_start(&nopt, err, sizeof(err));
	if (!fs.node) {
		log_error("%s", err);
		goto out;
	}
	/* After the fork: the dies' arbiter runs a thread of its own. */
	if (fs_dies_setup(o.sim, o.sim_topology, state_dir, o.read_only, &dies, err, sizeof(err))) {
		log_error("%s", err);
		goto out;
	}
	fs.se = fuse_session_new(&args, &accelfs_ops, sizeof(accelfs_ops), &fs);
	if (!fs.se)
		goto out;
	if (fuse_set_signal_handlers(fs.se))
		goto out;
	if (fuse_session_mount(fs.se, o.mountpoint)) {
		log_error("cannot mount on %s", o.mountpoint);
		goto out_signals;
	}
	fs_dies_mounted(dies, o.mountpoint);
	fs.notifier = fs_notifier_start(&fs);
	if (!fs.notifier)
		goto out_unmount;
	log_info("serving %s%s (state in %s)", o.mountpoint, o.sim ? " as a simulated node" : "", state_dir);
	write_pid_file(state_dir);
	if (!o.foreground) {
		if (chdir("/"))
			log_warn("cannot leave the current directory: %s", strerror(errno));
		detach_stdio();
		report_ready(0);
	}
	{
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		if (!cfg)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(cfg, 0);
		fuse_loop_cfg_set_max_threads(cfg, 16);
		ret = fuse_session_loop_mt(fs.se, cfg) ? 1 : 0;
		fuse_loop_cfg_destroy(cfg);
	}
	log_info("unmounted %s", o.mountpoint);
	remove_pid_file(state_dir);

out_unmount:
	fs_notifier_stop(fs.notifier);
	fs.notifier = NULL;
	fuse_session_unmount(fs.se);
out_signals:
	fuse_remove_signal_handlers(fs.se);
out:
	report_ready(1);
	fs_dies_free(dies); /* before the session: parked opens are answered */
	if (fs.se)
		fuse_session_destroy(fs.se);
	accel_node_stop(fs.node);
	accel_delegation_free(fs.deleg);
	fs_inodes_free(fs.inodes);
	fuse_opt_free_args(&args);
	free(o.sim_topology);
	free(o.state_dir);
	free(o.cdi_dir);
	free(o.log_file);
	free(o.poll_interval);
	free(o.orphan_grace);
	free(o.busy_retries);
	free(o.mountpoint);
	return ret;
}
