/* SPDX-License-Identifier: MIT */
/*
 * `accel-smi sim ...`: staging situations on a simulated node through the
 * simulators' control extension (sim/accelsim.h).  On a real driver every
 * one of these says so and fails: nothing here may touch real hardware.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/accelsim.h"
#include "tools/smi-commands.h"
#include "tools/smi-sim-health.h"

/* The control function <prefix><suffix> of the loaded library, or NULL. */
static void *control(struct smi *s, const char *suffix)
{
	char name[96];

	snprintf(name, sizeof(name), "%s%s", s->lib.prefix, suffix);
	return dlsym(s->lib.handle, name);
}

#define CONTROL(s, fn) ((accelsim_fn_##fn##_t)control(s, #fn))

static bool is_simulated(struct smi *s)
{
	if (control(s, "SimGetPath"))
		return true;
	fprintf(stderr, "%s is not a simulated driver: the sim commands work only on accelfs's simulators\n",
	        s->lib.path);
	return false;
}

static int sim_path(struct smi *s, enum accelsim_path which, char *buf, size_t len)
{
	mig_return_t r = CONTROL(s, SimGetPath)(which, buf, (unsigned)len);

	return r ? smi_fail(s, r, "Unable to read the simulator's paths") : SMI_OK;
}

/* A return code by name ("IN_USE", "MIG_ERROR_IN_USE") or number. */
static int parse_return(const char *arg, mig_return_t *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*arg && !*end) {
		*out = (mig_return_t)v;
		return 0;
	}
	if (!strncmp(arg, "MIG_ERROR_", 10))
		arg += 10;
	for (int code = 1; code < 1000; code++) {
		const char *name = mig_return_name((mig_return_t)code);

		if (strcmp(name, "UNRECOGNIZED") && !strcasecmp(name, arg)) {
			*out = (mig_return_t)code;
			return 0;
		}
	}
	fprintf(stderr, "Unknown return code \"%s\"\n", arg);
	return -1;
}

static int parse_uint(const char *arg, const char *what, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!arg) {
		fprintf(stderr, "%s needs a value\n", what);
		return -1;
	}
	v = strtoul(arg, &end, 10);
	if (!*arg || *end || v > 0xffffffffUL) {
		fprintf(stderr, "%s: \"%s\" is not a number\n", what, arg);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static mig_device_t one_device(struct smi *s)
{
	mig_device_t dev = NULL;
	mig_return_t r;

	if (s->device == SMI_ALL) {
		fprintf(stderr, "Select the %s with -i\n", s->word);
		return NULL;
	}
	r = s->lib.DeviceGetHandleByIndex_v2((unsigned)s->device, &dev);
	if (r) {
		smi_fail(s, r, "Unable to open %s %d", s->word, s->device);
		return NULL;
	}
	return dev;
}

/* PID or PID:MIB, a process the busy instance runs (its memory in MiB, 0 if not given). */
static int parse_process(const char *arg, mig_process_info_t *p)
{
	unsigned long long mib = 0;
	unsigned long pid;
	char *end;

	pid = strtoul(arg, &end, 10);
	if (*end == ':') {
		const char *m = end + 1;
		mib = strtoull(m, &end, 10);
		if (end == m)
			end = (char *)"x";
	}
	if (end == arg || *end || pid == 0 || pid > ACCELSIM_UNSEEN_PID || mib > (1ULL << 40)) {
		fprintf(stderr, "busy: \"%s\" is not PID or PID:MIB (a pid from 1 to %u, then its memory in MiB)\n",
		        arg, ACCELSIM_UNSEEN_PID);
		return -1;
	}
	*p = (mig_process_info_t){ .pid = (unsigned)pid, .usedGpuMemory = mib << 20 };
	return 0;
}

static int cmd_busy(struct smi *s, char **args, int n)
{
	mig_device_t dev = one_device(s);
	mig_process_info_t named[ACCELSIM_MAX_PROCESSES];
	unsigned count;
	mig_return_t r;

	if (!dev)
		return SMI_FAILED;
	if (s->gi == SMI_ALL || s->ci == SMI_ALL || n < 1 || parse_uint(args[0], "busy", &count) ||
	    (unsigned)(n - 1) > count || n - 1 > ACCELSIM_MAX_PROCESSES) {
		fprintf(stderr,
		        "usage: accel-smi sim busy -i N -gi G -ci C COUNT [PID[:MIB]...]  (at most COUNT and %d "
		        "named processes)\n",
		        ACCELSIM_MAX_PROCESSES);
		return SMI_USAGE;
	}
	for (int i = 1; i < n; i++)
		if (parse_process(args[i], &named[i - 1]))
			return SMI_USAGE;
	if (n > 1)
		r = CONTROL(s, SimSetProcesses)(dev, (unsigned)s->gi, (unsigned)s->ci, count, (unsigned)(n - 1), named);
	else
		r = CONTROL(s, SimSetBusy)(dev, (unsigned)s->gi, (unsigned)s->ci, count);
	if (r)
		return smi_fail(s, r, "Unable to mark %s %d GPU instance %d compute instance %d busy", s->word,
		                s->device, s->gi, s->ci);
	printf("%s %d GPU instance %d compute instance %d: %u running process%s\n", s->word, s->device, s->gi, s->ci,
	       count, count == 1 ? "" : "es");
	return SMI_OK;
}

/* "hgmlGpuInstanceDestroy", or "any driver call" for the wildcard. */
static void fault_target(struct smi *s, const char *function, char *buf, size_t len)
{
	if (!strcmp(function, "*"))
		snprintf(buf, len, "any driver call");
	else
		snprintf(buf, len, "%s%s", s->lib.prefix, function);
}

static int cmd_fault(struct smi *s, int argc, char **argv)
{
	mig_return_t ret = MIG_ERROR_UNKNOWN, r;
	unsigned skip = 0, times = 1;
	const char *function = NULL;
	bool have_ret = false;
	char target[128];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--ret") && i + 1 < argc && !have_ret) {
			if (parse_return(argv[++i], &ret))
				return SMI_USAGE;
			have_ret = true;
		} else if (!strcmp(argv[i], "--skip")) {
			if (parse_uint(i + 1 < argc ? argv[++i] : NULL, "--skip", &skip))
				return SMI_USAGE;
		} else if (!strcmp(argv[i], "--times")) {
			if (parse_uint(i + 1 < argc ? argv[++i] : NULL, "--times", &times))
				return SMI_USAGE;
		} else if (!function && argv[i][0] != '-') {
			function = argv[i];
			/* Accept the full symbol too: hgmlGpuInstanceDestroy. */
			if (!strncmp(function, s->lib.prefix, strlen(s->lib.prefix)))
				function += strlen(s->lib.prefix);
		} else if (function && !have_ret && argv[i][0] != '-') {
			/* The code may also follow the function: `sim fault '*' IN_USE`. */
			if (parse_return(argv[i], &ret))
				return SMI_USAGE;
			have_ret = true;
		} else {
			function = NULL;
			break;
		}
	}
	if (!function) {
		fprintf(stderr,
		        "usage: accel-smi sim fault FUNCTION|'*' [RET] [--ret NAME|NUM] [--skip N] [--times K]\n");
		return SMI_USAGE;
	}
	fault_target(s, function, target, sizeof(target));
	r = CONTROL(s, SimArmFault)(function, ret, skip, times);
	if (r)
		return smi_fail(s, r, "Unable to arm a fault on %s", target);
	printf("Armed: %s returns %s after %u call%s, %u time%s\n", target, mig_return_name(ret), skip,
	       skip == 1 ? "" : "s", times, times == 1 ? "" : "s");
	return SMI_OK;
}

static int cmd_faults(struct smi *s)
{
	accelsim_fault_t faults[ACCELSIM_MAX_FAULTS];
	unsigned n = ACCELSIM_MAX_FAULTS;
	mig_return_t r = CONTROL(s, SimGetFaults)(faults, &n);

	if (r)
		return smi_fail(s, r, "Unable to list the armed faults");
	if (n == 0)
		printf("No faults armed.\n");
	for (unsigned i = 0; i < n; i++) {
		char target[128];

		fault_target(s, faults[i].function, target, sizeof(target));
		printf("%s returns %s: skip %u, times %u, fired %u%s\n", target, mig_return_name(faults[i].ret),
		       faults[i].skip, faults[i].times, faults[i].fired, faults[i].times ? "" : " (spent)");
	}
	return SMI_OK;
}

static int by_function(const void *a, const void *b)
{
	return strcmp(((const accelsim_call_count_t *)a)->function, ((const accelsim_call_count_t *)b)->function);
}

/*
 * `sim calls`: "<function> <count>" for every ABI function called at least
 * once, by name; this very command's Init_v2 is among them.  `--reset`
 * zeroes the counts instead.
 */
static int cmd_calls(struct smi *s, int argc, char **argv)
{
	accelsim_call_count_t *calls;
	unsigned n = 0, room;
	mig_return_t r;

	if (argc == 1 && !strcmp(argv[0], "--reset")) {
		r = CONTROL(s, SimResetCalls)();
		if (r)
			return smi_fail(s, r, "Unable to reset the call counts");
		return SMI_OK;
	}
	if (argc != 0) {
		fprintf(stderr, "usage: accel-smi sim calls [--reset]\n");
		return SMI_USAGE;
	}
	r = CONTROL(s, SimGetCalls)(NULL, &n);
	if (r)
		return smi_fail(s, r, "Unable to read the call counts");
	room = n;
	calls = calloc(room ? room : 1, sizeof(*calls));
	if (!calls) {
		fprintf(stderr, "Out of memory reading %u call counts\n", room);
		return SMI_FAILED;
	}
	/* Another library build may add a function between the two calls: then n > room, and we show room. */
	r = CONTROL(s, SimGetCalls)(calls, &n);
	if (r && r != MIG_ERROR_INSUFFICIENT_SIZE) {
		free(calls);
		return smi_fail(s, r, "Unable to read the call counts");
	}
	n = n < room ? n : room;
	qsort(calls, n, sizeof(*calls), by_function);
	for (unsigned i = 0; i < n; i++)
		if (calls[i].count)
			printf("%s %llu\n", calls[i].function, calls[i].count);
	free(calls);
	return SMI_OK;
}

static int cmd_present(struct smi *s, unsigned present)
{
	mig_return_t r;

	if (s->device == SMI_ALL) {
		fprintf(stderr, "Select the %s with -i\n", s->word);
		return SMI_USAGE;
	}
	r = CONTROL(s, SimSetDevicePresent)((unsigned)s->device, present);
	if (r)
		return smi_fail(s, r, "Unable to change %s %d", s->word, s->device);
	printf("%s %d %s\n", s->word, s->device, present ? "is back on the bus" : "fell off the bus (GPU_IS_LOST)");
	return SMI_OK;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * Hold O_PATH descriptors on the card's node (and the control nodes) until
 * killed: the simulated nodes cannot be opened for real, and a holder is
 * what makes the driver refuse a mode change.
 */
static int cmd_hold(struct smi *s, bool control_nodes)
{
	char dev_root[PATH_MAX], path[PATH_MAX + 64], node[64];
	mig_device_t dev = one_device(s);
	unsigned minor = 0, held = 0;
	struct sigaction sa;

	if (!dev || sim_path(s, ACCELSIM_PATH_DEV, dev_root, sizeof(dev_root)))
		return SMI_FAILED;
	if (s->family->card_node_by_minor && s->lib.DeviceGetMinorNumber(dev, &minor) != MIG_SUCCESS)
		return SMI_FAILED;
	snprintf(node, sizeof(node), "%s%u", s->family->card_node_prefix,
	         s->family->card_node_by_minor ? minor : (unsigned)s->device);
	snprintf(path, sizeof(path), "%s/%s", dev_root, node);
	if (open(path, O_PATH | O_CLOEXEC) < 0) {
		fprintf(stderr, "Unable to hold %s: %s\n", path, strerror(errno));
		return SMI_FAILED;
	}
	held++;
	printf("holding %s\n", path);
	for (size_t i = 0; control_nodes && s->family->control_nodes[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dev_root, s->family->control_nodes[i]);
		if (open(path, O_PATH | O_CLOEXEC) < 0) {
			fprintf(stderr, "Unable to hold %s: %s\n", path, strerror(errno));
			return SMI_FAILED;
		}
		held++;
		printf("holding %s\n", path);
	}
	/* The library is not needed while holding; what holds is the descriptors. */
	mig_lib_close(&s->lib);
	printf("pid %d holds %u node%s; kill it to release\n", (int)getpid(), held, held == 1 ? "" : "s");
	fflush(stdout);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!stop)
		pause();
	return SMI_OK;
}

static int cmd_kmsg(struct smi *s)
{
	char path[PATH_MAX], buf[4096];
	FILE *f;
	size_t n;

	if (sim_path(s, ACCELSIM_PATH_KMSG, path, sizeof(path)))
		return SMI_FAILED;
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? SMI_OK : SMI_FAILED; /* nothing logged yet */
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	return SMI_OK;
}

static int cmd_paths(struct smi *s)
{
	static const struct {
		enum accelsim_path which;
		const char *label;
	} paths[] = {
		{ ACCELSIM_PATH_ROOT, "root" }, { ACCELSIM_PATH_DEV, "dev" },     { ACCELSIM_PATH_PROC, "proc" },
		{ ACCELSIM_PATH_KMSG, "kmsg" }, { ACCELSIM_PATH_STATE, "state" },
	};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (sim_path(s, paths[i].which, path, sizeof(path)))
			return SMI_FAILED;
		printf("%-6s %s\n", paths[i].label, path);
	}
	return SMI_OK;
}

/* Every sim command, for `accel-smi sim help` and any usage error without a narrower message. */
static void sim_usage(FILE *f)
{
	fputs("usage: accel-smi [-f ppu|gpu] --sim[=STATE_DIR] sim COMMAND\n"
	      "  busy -i N -gi G -ci C COUNT [PID[:MIB]...]\n"
	      "                                  processes running on a compute instance (blocks its destroy);\n"
	      "                                  the PIDs name the first of them, with their memory in MiB\n"
	      "  fault FUNCTION|'*' [RET] [--ret NAME|NUM] [--skip N] [--times K]\n"
	      "                                  the next driver calls of FUNCTION answer RET (default UNKNOWN)\n"
	      "                                  without side effect, after N calls, K times (default once);\n"
	      "                                  '*' is any driver call except Init_v2 and Shutdown, its skip\n"
	      "                                  counting every call, whatever the function\n"
	      "  faults | clear-faults           the armed faults (spent ones too) / disarm them all\n"
	      "  calls [--reset]                 \"FUNCTION COUNT\" for each driver function called (every\n"
	      "                                  process; this command's own Init_v2 too) / zero the counts\n"
	      "  hold -i N [--control]           hold the card's node (and the control nodes) until killed\n"
	      "  remove -i N | add -i N          the card falls off (raising Xid 79) / comes back on the bus\n"
	      "  kmsg                            the simulated kernel log\n"
	      "  paths                           where the simulated node keeps its files\n"
	      "  help                            this text\n",
	      f);
	smi_sim_health_usage(f);
}

int smi_cmd_sim(struct smi *s, int argc, char **argv)
{
	const char *cmd;
	char **rest;
	int nrest = 0;
	bool control_nodes = false;

	if (argc < 1) {
		sim_usage(stderr);
		return SMI_USAGE;
	}
	cmd = argv[0];
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		sim_usage(stdout);
		return SMI_OK;
	}
	rest = calloc((size_t)argc + 1, sizeof(*rest));
	if (!rest)
		return SMI_FAILED;
	/* -i/-gi/-ci/--control anywhere; the rest stays in order for the command. */
	for (int i = 1; i < argc; i++) {
		int *target = !strcmp(argv[i], "-i")                                ? &s->device
		              : !strcmp(argv[i], "-gi") || !strcmp(argv[i], "--gi") ? &s->gi
		              : !strcmp(argv[i], "-ci") || !strcmp(argv[i], "--ci") ? &s->ci
		                                                                    : NULL;
		unsigned v;

		if (target) {
			if (parse_uint(i + 1 < argc ? argv[i + 1] : NULL, argv[i], &v)) {
				free(rest);
				return SMI_USAGE;
			}
			*target = (int)v;
			i++;
		} else if (!strcmp(argv[i], "--control")) {
			control_nodes = true;
		} else {
			rest[nrest++] = argv[i];
		}
	}
	int rc = SMI_USAGE;

	if (!is_simulated(s))
		rc = SMI_FAILED;
	else if (!strcmp(cmd, "busy"))
		rc = cmd_busy(s, rest, nrest);
	else if (!strcmp(cmd, "fault"))
		rc = cmd_fault(s, nrest, rest);
	else if (!strcmp(cmd, "faults") && nrest == 0)
		rc = cmd_faults(s);
	else if (!strcmp(cmd, "clear-faults") && nrest == 0)
		rc = CONTROL(s, SimClearFaults)() ? SMI_FAILED : SMI_OK;
	else if (!strcmp(cmd, "hold") && nrest == 0)
		rc = cmd_hold(s, control_nodes);
	else if (!strcmp(cmd, "remove") && nrest == 0)
		rc = cmd_present(s, 0);
	else if (!strcmp(cmd, "add") && nrest == 0)
		rc = cmd_present(s, 1);
	else if (!strcmp(cmd, "kmsg") && nrest == 0)
		rc = cmd_kmsg(s);
	else if (!strcmp(cmd, "paths") && nrest == 0)
		rc = cmd_paths(s);
	else if (!strcmp(cmd, "calls"))
		rc = cmd_calls(s, nrest, rest);
	else if ((rc = smi_sim_health(s, cmd, nrest, rest)) >= 0)
		;
	else {
		rc = SMI_USAGE;
		fprintf(stderr, "Unknown sim command or arguments: \"%s\"\n", cmd);
		sim_usage(stderr);
	}
	free(rest);
	return rc;
}
