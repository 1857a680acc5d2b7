/* SPDX-License-Identifier: MIT */
#include "fs/options.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/model/log.h"
#include "fs/service.h"
#include "sim/locate.h"

#define OPT(t, p)                                                                                                      \
	{                                                                                                              \
		t, offsetof(struct fs_options, p), 1                                                                   \
	}
#define STR(t, p)                                                                                                      \
	{                                                                                                              \
		t, offsetof(struct fs_options, p), 0                                                                   \
	}
static const struct fuse_opt option_spec[] = { OPT("-f", foreground),
	                                       OPT("--foreground", foreground),
	                                       OPT("-d", debug),
	                                       OPT("--debug", debug),
	                                       OPT("-h", show_help),
	                                       OPT("--help", show_help),
	                                       OPT("-V", show_version),
	                                       OPT("--version", show_version),
	                                       OPT("--sim", sim),
	                                       OPT("--read-only", read_only),
	                                       STR("--sim=%s", sim_topology),
	                                       STR("--state-dir=%s", state_dir),
	                                       STR("--cdi-dir=%s", cdi_dir),
	                                       STR("--hook=%s", hook),
	                                       STR("--log=%s", log_file),
	                                       STR("--poll-interval=%s", poll_interval),
	                                       STR("--orphan-grace=%s", orphan_grace),
	                                       STR("--foreign=%s", foreign),
	                                       STR("--busy-retries=%s", busy_retries),
	                                       STR("--metrics-textfile=%s", metrics_textfile),
	                                       FUSE_OPT_END };

void fs_options_usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "usage: %s [OPTIONS] MOUNTPOINT\n"
	        "\n"
	        "Accelerator hardware as a filesystem: MIG partitions of T-Head PPUs and NVIDIA GPUs\n"
	        "are carved with mkdir and given back with rmdir.\n"
	        "\n"
	        "MOUNTPOINT must be an existing directory.  A mount left behind by an accelfs that was\n"
	        "killed is detached first; a running accelfs there is refused.\n"
	        "\n"
	        "  -f, --foreground        stay in the foreground (default: return once the mount is ready;\n"
	        "                          under systemd's Type=notify, NOTIFY_SOCKET set, always)\n"
	        "  --sim[=TOPOLOGY]        serve a simulated node: the built-in one, an installed topology\n"
	        "                          by name (default, small, nvidia-only, thead-quirks) or a JSON file\n"
	        "  --state-dir=DIR         ownership records and simulated hardware (default /var/lib/accelfs);\n"
	        "                          one accelfs per state directory (DIR/accelfs.lock names the one\n"
	        "                          that serves it, DIR/accelfs.pid too)\n"
	        "  --cdi-dir=DIR           where the node-level CDI spec is kept (default /var/run/cdi;\n"
	        "                          with --sim, STATE_DIR/cdi)\n"
	        "  --hook=PATH             the OCI hook the CDI specs run to record which containers hold a\n"
	        "                          job (default: accelfs-hook beside accelfs)\n"
	        "  --log=FILE              also append the log to FILE (default when in the background:\n"
	        "                          STATE_DIR/accelfs.log); SIGHUP reopens it (log rotation)\n"
	        "  --metrics-textfile=DIR  keep DIR/accelfs.prom equal to MOUNTPOINT/metrics, for\n"
	        "                          node_exporter's textfile collector (DIR must exist)\n"
	        "  --poll-interval=SEC     how often the drivers are re-read for what udev cannot report\n"
	        "                          (MIG mode, instances carved by hand); default 2\n"
	        "  --orphan-grace=SEC      how long an instance accelfs made but has no job for (a carve\n"
	        "                          cut short by a crash) is left before it is reclaimed; default 10\n"
	        "  --foreign=keep|reclaim  what becomes of instances accelfs did not make (partitioned\n"
	        "                          by hand, mig-parted, another tool): keep (default) shows them\n"
	        "                          and never destroys them; reclaim destroys them once idle for\n"
	        "                          --orphan-grace. A card's mig/foreign says otherwise for it\n"
	        "  --busy-retries=N        retries of a destroy the driver calls busy; default 4\n"
	        "  --read-only             observe only: a read-only mount that changes nothing (no carve,\n"
	        "                          reclaim, delegation, attachment or CDI spec); every write and\n"
	        "                          directory operation, and opening vram, answers EROFS\n"
	        "  -o OPT[,OPT...]         FUSE mount options (allow_other, ...)\n"
	        "  -d, --debug             log every FUSE request (implies -f)\n"
	        "  -h, --help              this text\n"
	        "  -V, --version           the version of accelfs and libfuse\n"
	        "\n"
	        "Environment:\n"
	        "  ACCELFS_LOG=LEVEL       error, warning, notice, info (default) or debug: what is logged\n"
	        "                          (any other value is a usage error)\n"
	        "  JOURNAL_STREAM          set by systemd: when stderr is the journal, log lines carry\n"
	        "                          their priority (<3> error ... <7> debug) and no timestamp\n"
	        "  NOTIFY_SOCKET           set by systemd (Type=notify): READY=1 is sent once the mount\n"
	        "                          serves the first complete snapshot, STOPPING=1 on the way out\n"
	        "  PPU_HOME                where libhgml.so is looked for (default /usr/local/PPU_SDK)\n"
	        "\n"
	        "An option's value follows '=' or comes as the next argument (--state-dir=DIR or\n"
	        "--state-dir DIR), but --sim's, which is optional: --sim=TOPOLOGY.\n"
	        "\n"
	        "Exit status: 0 mounted (or help; in the foreground: unmounted, or stopped by SIGTERM\n"
	        "or SIGINT), 1 refused or failed (the message says why), 2 usage error (nothing was\n"
	        "changed, a --log=FILE that cannot be opened included).  accelfs(8) runs it; accelfs(5)\n"
	        "is the tree.\n",
	        prog);
}

/* A usage error: the usage line, and where the rest is (the whole text would bury the message). */
int fs_options_usage_error(const char *prog)
{
	fprintf(stderr, "usage: %s [OPTIONS] MOUNTPOINT  (%s --help lists the options)\n", prog, prog);
	return 2;
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
	struct fs_options *o = data;

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

/*
 * fuse_opt_parse keeps what it does not know for FUSE: the -o options
 * (gathered into one "-o" "a,b" pair, checked by fuse_session_new) and any
 * other unknown argument, which would otherwise be silently ignored.
 */
static int reject_leftovers(const struct fuse_args *args)
{
	for (int i = 1; i < args->argc; i++) {
		const char *a = args->argv[i];

		if (!strcmp(a, "-o") && i + 1 < args->argc) {
			i++;
			continue;
		}
		if (!strcmp(a, "--"))
			continue;
		fprintf(stderr, "accelfs: unknown option %s\n", a);
		return -1;
	}
	return 0;
}

static int nonempty(const char *value, const char *what)
{
	if (value && !*value) {
		fprintf(stderr, "accelfs: %s= needs a value\n", what);
		return -1;
	}
	return 0;
}

/* Checked now, like the mountpoint: the daemon creates nothing outside its state directory. */
static int check_textfile_dir(const char *dir)
{
	const char *why = NULL;
	struct stat st;

	if (!*dir)
		why = "needs a value";
	else if (stat(dir, &st))
		why = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory";
	if (!why)
		return 0;
	fprintf(stderr,
	        "accelfs: --metrics-textfile=%s: %s: give the directory of node_exporter's "
	        "--collector.textfile.directory\n",
	        dir, why);
	return -1;
}

/*
 * --log=FILE is checked now, without creating it: a background daemon whose
 * log cannot be opened would write nowhere.  It can be opened for appending
 * if it exists, or created if its directory exists and may be written.
 */
static int check_log_file(const char *path)
{
	char dir[PATH_MAX];
	const char *why = NULL;
	struct stat st;
	char *slash;
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != ENOENT) {
		why = strerror(errno);
	} else {
		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == dir)
			dir[1] = '\0';
		else
			*slash = '\0';
		if (stat(dir, &st))
			why = errno == ENOENT ? "its directory does not exist" : strerror(errno);
		else if (!S_ISDIR(st.st_mode))
			why = "its directory is not a directory";
		else if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS))
			why = errno == EROFS ? "its directory is on a read-only filesystem"
			                     : "its directory may not be written";
	}
	if (!why)
		return 0;
	fprintf(stderr,
	        "accelfs: --log=%s: the log file cannot be opened for appending (%s): give a file in a directory "
	        "that exists and may be written\n",
	        path, why);
	return -1;
}

/* --sim=NAME or --sim=FILE: the file it means, in place of what was given. */
static int resolve_topology(struct fs_options *o)
{
	char path[PATH_MAX], err[5 * PATH_MAX];
	char *found;

	/* Checked now: later it would be found missing after the state directory was made. */
	if (accel_sim_find_topology(o->sim_topology, path, sizeof(path), err, sizeof(err))) {
		fprintf(stderr, "accelfs: --sim=%s: %s\n", o->sim_topology, err);
		return -1;
	}
	found = strdup(path);
	if (!found) {
		fprintf(stderr, "accelfs: out of memory\n");
		return -1;
	}
	free(o->sim_topology);
	o->sim_topology = found;
	return 0;
}

/*
 * An option whose value may also come as the next argument ("--state-dir
 * /x"), as getopt_long takes it: every "--name=%s" of option_spec but
 * --sim's, whose value is optional.  Its length, 0 if a is none.
 */
static size_t valued_option(const char *a)
{
	for (const struct fuse_opt *spec = option_spec; spec->templ; spec++) {
		size_t n = strlen(spec->templ);

		if (n > 5 && !strncmp(spec->templ, "--", 2) && !strcmp(spec->templ + n - 3, "=%s") &&
		    strcmp(spec->templ, "--sim=%s") && strlen(a) == n - 3 && !strncmp(a, spec->templ, n - 3))
			return n - 3;
	}
	return 0;
}

/*
 * fuse_opt knows "--opt=VALUE" only: "--opt VALUE" is joined into that
 * spelling first, in a copy of the arguments (up to a "--", after which
 * everything is an operand).  An option with no value after it is a usage
 * error here, not an unknown option later.
 */
static int join_separate_values(struct fuse_args *args)
{
	struct fuse_args joined = FUSE_ARGS_INIT(0, NULL);
	bool operands = false;
	int ret = 0;

	for (int i = 0; i < args->argc && !ret; i++) {
		const char *a = args->argv[i];
		const char *name = i > 0 && !operands && valued_option(a) ? a : NULL;

		operands = operands || (i > 0 && !strcmp(a, "--"));
		if (!name) {
			ret = fuse_opt_add_arg(&joined, a);
			continue;
		}
		if (i + 1 >= args->argc) {
			fprintf(stderr, "accelfs: %s needs a value (%s=VALUE or %s VALUE)\n", name, name, name);
			ret = 1;
			break;
		}
		char *both = malloc(strlen(name) + strlen(args->argv[i + 1]) + 2);
		if (!both) {
			ret = -1;
			break;
		}
		sprintf(both, "%s=%s", name, args->argv[++i]);
		ret = fuse_opt_add_arg(&joined, both);
		free(both);
	}
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "accelfs: out of memory\n");
		fuse_opt_free_args(&joined);
		return -1;
	}
	fuse_opt_free_args(args);
	*args = joined;
	return 0;
}

/* ACCELFS_LOG names a level or nothing: a typo would otherwise log at info and say nothing. */
static int check_log_env(void)
{
	enum accel_log_level level;

	if (!accel_log_level_from_env(&level))
		return 0;
	fprintf(stderr, "accelfs: ACCELFS_LOG=%s is not a level: give error, warning, notice, info or debug\n",
	        getenv("ACCELFS_LOG"));
	return -1;
}

int fs_options_parse(struct fuse_args *args, struct fs_options *o)
{
	const char *prog = args->argc > 0 ? args->argv[0] : "accelfs";

	/* prog stays the caller's argv[0]: fuse_opt_parse frees the copies it is given. */
	if (join_separate_values(args))
		return fs_options_usage_error(prog);
	if (fuse_opt_parse(args, o, option_spec, take_mountpoint) == -1)
		return fs_options_usage_error(prog);
	if (o->show_help) {
		fs_options_usage(stdout, prog);
		return 0;
	}
	if (o->show_version) {
		printf("accelfs %s (libfuse %s)\n", ACCELFS_VERSION, fuse_pkgversion());
		return 0;
	}
	if (reject_leftovers(args) || check_log_env())
		return fs_options_usage_error(prog);
	if (!o->mountpoint) {
		fprintf(stderr, "accelfs: no mountpoint given\n");
		return fs_options_usage_error(prog);
	}
	if (nonempty(o->state_dir, "--state-dir") || nonempty(o->cdi_dir, "--cdi-dir") || nonempty(o->hook, "--hook") ||
	    nonempty(o->log_file, "--log") || nonempty(o->sim_topology, "--sim"))
		return fs_options_usage_error(prog);
	if (o->metrics_textfile && check_textfile_dir(o->metrics_textfile))
		return fs_options_usage_error(prog);
	if (o->log_file && check_log_file(o->log_file))
		return fs_options_usage_error(prog);
	if (o->poll_interval && parse_seconds_ms(o->poll_interval, "--poll-interval", &o->poll_ms))
		return fs_options_usage_error(prog);
	if (o->orphan_grace && parse_seconds_ms(o->orphan_grace, "--orphan-grace", &o->orphan_grace_ms))
		return fs_options_usage_error(prog);
	if (o->foreign && strcmp(o->foreign, "keep") && strcmp(o->foreign, "reclaim")) {
		fprintf(stderr, "accelfs: --foreign=%s: expected keep or reclaim\n", o->foreign);
		return fs_options_usage_error(prog);
	}
	if (o->busy_retries) {
		char *end;
		long v = strtol(o->busy_retries, &end, 10);
		if (!*o->busy_retries || *end || v < 1 || v > 100) {
			fprintf(stderr, "accelfs: --busy-retries=%s: expected 1..100\n", o->busy_retries);
			return fs_options_usage_error(prog);
		}
		o->busy_retry_count = (unsigned)v;
	}
	if (o->sim_topology) {
		if (resolve_topology(o))
			return fs_options_usage_error(prog);
		o->sim = 1;
	}
	/* A service manager waiting for READY=1 watches this process: it must not fork away. */
	if (o->debug || fs_service_managed())
		o->foreground = 1;
	return FS_OPTIONS_GO_ON;
}

void fs_options_free(struct fs_options *o)
{
	free(o->sim_topology);
	free(o->state_dir);
	free(o->cdi_dir);
	free(o->hook);
	free(o->log_file);
	free(o->poll_interval);
	free(o->orphan_grace);
	free(o->foreign);
	free(o->busy_retries);
	free(o->metrics_textfile);
	free(o->mountpoint);
}
