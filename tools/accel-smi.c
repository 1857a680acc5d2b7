/* SPDX-License-Identifier: MIT */
/*
 * accel-smi: the command line, the choice of driver library, and dispatch.
 *
 *   accel-smi [-f ppu|gpu] [--sim[=STATE_DIR] [--sim-create]] [--topology=FILE] COMMAND
 *
 * Without --sim the driver is found exactly as the product finds it
 * ($PPU_HOME/lib64/libhgml.so, the loader path); with --sim the simulator is
 * pointed at STATE_DIR/sim and loaded from the build or install location
 * (sim/locate.c).  Nothing else ever selects a simulator.  STATE_DIR must
 * exist (a typo would otherwise conjure up an empty node that no daemon
 * serves) unless --sim-create asks for a fresh one.
 */
#include <stdlib.h>
#include <string.h>

#include "core/model/log.h"
#include "tools/smi-commands.h"
#include "tools/smi-layout.h"
#include "sim/locate.h"

/* A usage error's last line, when the full text was not printed: where the rest is. */
static bool usage_shown;

static void usage(FILE *f)
{
	usage_shown = f == stderr;
	fputs("usage: accel-smi [-f ppu|gpu] [--sim[=STATE_DIR] [--sim-create]] [--topology=FILE] COMMAND\n"
	      "\n"
	      "  -f ppu|gpu                 the family: T-Head PPUs (default) or NVIDIA GPUs\n"
	      "  --sim[=STATE_DIR]          drive the simulated node kept under STATE_DIR/sim\n"
	      "                             (default " ACCEL_SIM_DEFAULT_STATE_DIR "); STATE_DIR must exist\n"
	      "  --sim-create               with --sim: create STATE_DIR if it does not exist (a fresh\n"
	      "                             node driven by accel-smi alone)\n"
	      "  --topology=FILE            with --sim: the hardware a fresh state directory starts with\n"
	      "  -h, --help                 this text\n"
	      "  -V, --version              the version of accel-smi\n"
	      "\n"
	      "commands (as ppu-smi / nvidia-smi):\n"
	      "  (none)                     a status table: every card (-i N: one) and its MIG devices\n"
	      "  --json [-i N]              the cards as JSON, as node.json's devices[] (the keys the\n"
	      "                             driver knows: name, vendor, product, uuid, minor, bus_id,\n"
	      "                             memory_mib, mig_mode, mig_pending, driver_library, ordinal\n"
	      "                             or index, instances[])\n"
	      "  -L                         list the cards and their MIG devices\n"
	      "  -q [-i N]                  details, MIG Mode Current/Pending included\n"
	      "  health [-i N]              the driver's health seam, read-only: supported events, a 10 ms\n"
	      "                             wait, ECC mode and counters, the recovery action\n"
	      "  -i N -mig 0|1              disable or enable MIG mode on one card\n"
	      "  mig [-i N] -lgip           GPU-instance profiles (Instances Free/Total)\n"
	      "  mig [-i N] -lgipp          legal placements per profile, {Start,...}:Size\n"
	      "  mig [-i N] -lgi            GPU instances\n"
	      "  mig -i N -cgi P[:S][,...] [-C]  create GPU instances (profile id or name, optional start),\n"
	      "                             -C: each with a compute instance covering it\n"
	      "  mig -i N [-gi G] -dgi      destroy a GPU instance (without -gi: every one!)\n"
	      "  mig -i N [-gi G] -lcip [--ids]  compute-instance profiles (--ids: id:slices lines)\n"
	      "  mig -i N -gi G -cci [P,...]  create compute instances (default: the whole-GI profile)\n"
	      "  mig -i N [-gi G] -lci      compute instances\n"
	      "  mig -i N -gi G [-ci C] -dci  destroy compute instances\n"
	      "\n"
	      "the mounted tree (a mig-parted configuration: version: v1, mig-configs):\n"
	      "  layout apply -f CONFIG.yaml -c NAME [--mount DIR] [--dry-run] [--wait[=SECONDS]]\n"
	      "                             write each card's entry as its <dev>/mig/layout; exit 0\n"
	      "                             when every line is applied, 3 while some are pending\n"
	      "  layout assert -f CONFIG.yaml -c NAME [--mount DIR]\n"
	      "                             exit 0 if the cards are as the configuration asks, else 1\n"
	      "  layout export [-c NAME] [--mount DIR]\n"
	      "                             the cards as they are, as a configuration (default: current)\n"
	      "\n"
	      "simulated drivers only:\n"
	      "  sim busy -i N -gi G -ci C COUNT [PID[:MIB]...]\n"
	      "                             processes running on a compute instance (blocks destroy);\n"
	      "                             the PIDs name the first of them, with their memory in MiB\n"
	      "  sim fault FUNCTION [--ret NAME|NUM] [--skip N] [--times K]   arm a driver fault\n"
	      "  sim faults | sim clear-faults\n"
	      "  sim hold -i N [--control]  hold the card's node (and the control nodes) until killed\n"
	      "  sim remove -i N | sim add -i N    the card falls off / comes back on the bus\n"
	      "  sim kmsg                   the simulated kernel log\n"
	      "  sim paths                  where the simulated node keeps its files\n"
	      "  sim calls [--reset]        each driver function called, with its count\n"
	      "  sim xid -i N [-gi G [-ci C]] [--action A] [--count K] XID   the card raises an Xid\n"
	      "  sim ecc -i N [--uncorrected] [--location L] COUNT   more ECC errors, and their event\n"
	      "  sim recover -i N           the card was reset: recovery action none\n"
	      "  sim usage -i N [-gi G] [--sm P] [--occupancy P] [--dram P] [--memory B]   GPM rates, memory used\n"
	      "  sim energy -i N MJ         the card's energy counter, millijoules\n"
	      "  sim gpm -i N on|off        the card has GPM or not\n"
	      "  sim help                   every sim command, in full\n"
	      "\n"
	      "Exit status: 0 done, 1 the driver refused or failed, 2 usage error, 6 no such device.\n",
	      f);
}

struct cli {
	const char *family;
	bool sim;
	bool sim_create; /* --sim-create: a missing STATE_DIR is made, not refused */
	const char *state_dir;
	const char *topology;
	enum { CMD_NONE, CMD_LIST, CMD_QUERY, CMD_SET_MIG, CMD_MIG, CMD_SIM, CMD_JSON, CMD_HEALTH, CMD_LAYOUT } cmd;
	int mig_mode;
	int rest_argc;
	char **rest_argv;
};

static int set_cmd(struct cli *c, int cmd)
{
	if (c->cmd != CMD_NONE) {
		fprintf(stderr, "accel-smi: one command at a time\n");
		return -1;
	}
	c->cmd = cmd;
	return 0;
}

static int parse(int argc, char **argv, struct cli *c, struct smi *s)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if ((!strcmp(a, "-f") || !strcmp(a, "--family")) && next) {
			c->family = argv[++i];
		} else if (!strncmp(a, "--family=", 9)) {
			c->family = a + 9;
		} else if (!strcmp(a, "--sim")) {
			c->sim = true;
		} else if (!strcmp(a, "--sim-create")) {
			c->sim_create = true;
		} else if (!strncmp(a, "--sim=", 6)) {
			c->sim = true;
			c->state_dir = a + 6;
		} else if (!strncmp(a, "--topology=", 11)) {
			c->topology = a + 11;
		} else if (!strcmp(a, "--topology") && next) {
			c->topology = argv[++i];
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(SMI_OK);
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("accel-smi %s\n", ACCELFS_VERSION);
			exit(SMI_OK);
		} else if (!strcmp(a, "-L") || !strcmp(a, "--list-gpus")) {
			if (set_cmd(c, CMD_LIST))
				return -1;
		} else if (!strcmp(a, "--json")) {
			if (set_cmd(c, CMD_JSON))
				return -1;
		} else if (!strcmp(a, "health")) {
			if (set_cmd(c, CMD_HEALTH))
				return -1;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--query")) {
			if (set_cmd(c, CMD_QUERY))
				return -1;
		} else if ((!strcmp(a, "-i") || !strcmp(a, "--id")) && next) {
			char *end;
			long v = strtol(next, &end, 10);

			/* One card per call: a list reads like missing hardware, as in ppu-smi. */
			if (!*next || *end || v < 0) {
				fprintf(stderr, "No devices were found\n");
				exit(SMI_NO_DEVICE);
			}
			s->device = (int)v;
			i++;
		} else if (!strcmp(a, "-mig") || !strcmp(a, "--multi-instance-gpu") ||
		           !strncmp(a, "--multi-instance-gpu=", 21)) {
			const char *v = a[1] == '-' && a[20] == '=' ? a + 21 : next;

			if (v == next)
				i++;
			if (set_cmd(c, CMD_SET_MIG))
				return -1;
			if (v && (!strcmp(v, "1") || !strcasecmp(v, "ENABLED")))
				c->mig_mode = 1;
			else if (v && (!strcmp(v, "0") || !strcasecmp(v, "DISABLED")))
				c->mig_mode = 0;
			else {
				fprintf(stderr, "accel-smi: -mig takes 0 or 1\n");
				return -1;
			}
		} else if (!strcmp(a, "mig") || !strcmp(a, "sim") || !strcmp(a, "layout")) {
			if (set_cmd(c, a[0] == 'm' ? CMD_MIG : a[0] == 's' ? CMD_SIM : CMD_LAYOUT))
				return -1;
			c->rest_argc = argc - i - 1;
			c->rest_argv = argv + i + 1;
			return 0;
		} else {
			fprintf(stderr, "accel-smi: unknown option \"%s\"\n", a);
			return -1;
		}
	}
	return 0;
}

static int open_driver(struct smi *s, const struct cli *c)
{
	char path[PATH_MAX], err[1024];
	const char *topology = c->topology;
	int ret;

	if (c->sim) {
		const char *state = c->state_dir && *c->state_dir ? c->state_dir : ACCEL_SIM_DEFAULT_STATE_DIR;

		/* A topology from the environment still applies to a fresh state directory. */
		if (!topology && getenv("ACCELFS_SIM_TOPOLOGY") && *getenv("ACCELFS_SIM_TOPOLOGY"))
			topology = getenv("ACCELFS_SIM_TOPOLOGY");
		/* Before anything is created: accel_sim_setup_env makes STATE_DIR/sim, parents included. */
		if (!c->sim_create && accel_sim_state_dir_check(state, "--sim-create", err, sizeof(err))) {
			fprintf(stderr, "accel-smi: %s\n", err);
			return SMI_USAGE;
		}
		ret = accel_sim_setup_env(state, topology, err, sizeof(err));
		if (!ret)
			ret = accel_sim_locate_lib(s->family, path, sizeof(path), err, sizeof(err));
		if (ret) {
			fprintf(stderr, "accel-smi: %s\n", err);
			return SMI_FAILED;
		}
	} else if (topology) {
		fprintf(stderr, "accel-smi: --topology only goes with --sim\n");
		return SMI_USAGE;
	} else if (c->sim_create) {
		fprintf(stderr, "accel-smi: --sim-create only goes with --sim\n");
		return SMI_USAGE;
	}
	ret = accel_family_open_lib(s->family, c->sim ? path : NULL, &s->lib, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "accel-smi: %s %s driver: %s\n", s->family->vendor, s->family->sym_prefix, err);
		return SMI_FAILED;
	}
	return SMI_OK;
}

static int smi_main(int argc, char **argv)
{
	struct smi s = { .device = SMI_ALL, .gi = SMI_ALL, .ci = SMI_ALL };
	struct cli c = { .family = "ppu" };
	int rc;

	if (parse(argc, argv, &c, &s)) {
		usage(stderr);
		return SMI_USAGE;
	}
	s.family = accel_family_by_prefix(c.family);
	if (!s.family) {
		fprintf(stderr, "accel-smi: -f takes ppu or gpu, not \"%s\"\n", c.family);
		return SMI_USAGE;
	}
	s.thead = !strcmp(s.family->tree_prefix, "ppu");
	s.word = s.thead ? "PPU" : "GPU";
	if (c.cmd == CMD_SET_MIG && s.device == SMI_ALL) {
		fprintf(stderr, "accel-smi: -mig changes one card: give it with -i\n");
		return SMI_USAGE;
	}
	rc = open_driver(&s, &c);
	if (rc != SMI_OK && c.cmd == CMD_LAYOUT) {
		/* The tree is what it writes: the driver only reads PCI ids for device-filter. */
		memset(&s.lib, 0, sizeof(s.lib));
		rc = smi_cmd_layout(&s, c.rest_argc, c.rest_argv);
		fflush(stdout);
		return rc;
	}
	if (rc != SMI_OK)
		return rc;
	switch (c.cmd) {
	case CMD_LIST:
		rc = smi_cmd_list(&s);
		break;
	case CMD_QUERY:
		rc = smi_cmd_query(&s);
		break;
	case CMD_SET_MIG:
		rc = smi_cmd_set_mig(&s, c.mig_mode);
		break;
	case CMD_MIG:
		rc = smi_cmd_mig(&s, c.rest_argc, c.rest_argv);
		break;
	case CMD_SIM:
		rc = smi_cmd_sim(&s, c.rest_argc, c.rest_argv);
		break;
	case CMD_JSON:
		rc = smi_cmd_json(&s);
		break;
	case CMD_HEALTH:
		rc = smi_cmd_health(&s);
		break;
	case CMD_LAYOUT:
		rc = smi_cmd_layout(&s, c.rest_argc, c.rest_argv);
		break;
	case CMD_NONE:
		rc = smi_cmd_status(&s); /* as nvidia-smi with no arguments */
		break;
	}
	mig_lib_close(&s.lib);
	fflush(stdout);
	return rc;
}

int main(int argc, char **argv)
{
	int rc;

	/* A typo in ACCELFS_LOG is said at once (core/model/log.c), not at the first message, which may never come. */
	accel_log_get_level();
	rc = smi_main(argc, argv);

	/* Every usage error ends with the usage line on stderr, whichever command found it. */
	if (rc == SMI_USAGE && !usage_shown)
		fputs("usage: accel-smi [-f ppu|gpu] [--sim[=STATE_DIR] [--sim-create]] [--topology=FILE] COMMAND  "
		      "(accel-smi --help lists the commands)\n",
		      stderr);
	return rc;
}
