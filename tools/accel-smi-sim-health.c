/* SPDX-License-Identifier: MIT */
/*
 * `accel-smi sim xid|ecc|recover`: what a card raises about its health, on
 * a simulated node, through the simulators' control extension
 * (SimRaiseEvent, SimAddEccErrors, SimSetRecoveryAction in sim/accelsim.h).
 * A daemon's event set receives each exactly as it would the real driver's.
 * `accel-smi sim usage|energy|gpm`: what its GPM counters, memory and energy
 * meter say (SimSetUsage, SimSetEnergy, SimSetGpmSupport).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/accelsim.h"
#include "tools/smi-sim-health.h"

static void *control(struct smi *s, const char *suffix)
{
	char name[96];

	snprintf(name, sizeof(name), "%s%s", s->lib.prefix, suffix);
	return dlsym(s->lib.handle, name);
}

#define CONTROL(s, fn) ((accelsim_fn_##fn##_t)control(s, #fn))

static const char *const action_words[] = {
	[MIG_GPU_RECOVERY_ACTION_NONE] = "none",
	[MIG_GPU_RECOVERY_ACTION_GPU_RESET] = "reset",
	[MIG_GPU_RECOVERY_ACTION_NODE_REBOOT] = "reboot",
	[MIG_GPU_RECOVERY_ACTION_DRAIN_P2P] = "drain-p2p",
	[MIG_GPU_RECOVERY_ACTION_DRAIN_AND_RESET] = "drain-reset",
};

static const char *const location_words[MIG_MEMORY_LOCATION_COUNT] = {
	"l1", "l2", "dram", "register-file", "texture", "texture-shm", "cbu", "sram",
};

static int word_index(const char *arg, const char *const *words, unsigned n)
{
	for (unsigned i = 0; arg && i < n; i++)
		if (!strcasecmp(arg, words[i]))
			return (int)i;
	return -1;
}

static bool parse_count(const char *arg, unsigned long long *out)
{
	char *end;

	if (!arg || !*arg || *arg == '-')
		return false;
	*out = strtoull(arg, &end, 10);
	return !*end;
}

void smi_sim_health_usage(FILE *f)
{
	fputs("  xid -i N [-gi G [-ci C]] [--action none|reset|reboot|drain-p2p|drain-reset] [--count K] XID\n"
	      "                                  card N raises Xid XID (on GPU instance G, compute instance C;\n"
	      "                                  without -gi: the card), K times, and asks for the recovery action\n"
	      "  ecc -i N [--uncorrected] [--location dram|sram|l1|l2|...] COUNT\n"
	      "                                  COUNT more ECC errors (default corrected, in DRAM), and the\n"
	      "                                  single- or double-bit ECC event\n"
	      "  recover -i N                    the card was reset: recovery action none, volatile ECC zeroed\n"
	      "  usage -i N [-gi G] [--sm PCT] [--occupancy PCT] [--dram PCT] [--memory BYTES]\n"
	      "                                  GPU instance G (without -gi: the card) is this busy from now on\n"
	      "                                  (GPM rates, percent; omitted: 0) and uses BYTES of its memory\n"
	      "  energy -i N MILLIJOULES          the card's energy counter reads MILLIJOULES\n"
	      "  gpm -i N on|off                 the card has GPM (on, the default) or not\n",
	      f);
}

static int cmd_xid(struct smi *s, int argc, char **argv)
{
	unsigned gi = s->gi == SMI_ALL ? MIG_EVENT_NO_INSTANCE : (unsigned)s->gi;
	unsigned ci = s->ci == SMI_ALL ? MIG_EVENT_NO_INSTANCE : (unsigned)s->ci;
	unsigned long long xid = 0, times = 1;
	int action = -1;
	mig_return_t r;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--action") && i + 1 < argc && action < 0) {
			action = word_index(argv[++i], action_words, 5);
			if (action < 0) {
				fprintf(stderr,
				        "Unknown recovery action \"%s\": none, reset, reboot, drain-p2p or drain-reset\n",
				        argv[i]);
				return SMI_USAGE;
			}
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc && parse_count(argv[i + 1], &times) && times) {
			i++;
		} else if (!xid && parse_count(argv[i], &xid) && xid && xid <= 0xffffffffULL) {
			continue;
		} else {
			xid = 0;
			break;
		}
	}
	if (s->device == SMI_ALL || !xid || (s->gi == SMI_ALL && s->ci != SMI_ALL)) {
		fprintf(stderr, "usage: accel-smi sim xid -i N [-gi G [-ci C]] [--action ACTION] XID\n");
		return SMI_USAGE;
	}
	for (unsigned long long n = 0; n < times; n++) {
		r = CONTROL(s, SimRaiseEvent)((unsigned)s->device, MIG_EVENT_TYPE_XID_CRITICAL_ERROR, xid, gi, ci);
		if (r)
			return smi_fail(s, r, "Unable to raise Xid %llu on %s %d", xid, s->word, s->device);
	}
	printf("%s %d raised Xid %llu", s->word, s->device, xid);
	if (times > 1)
		printf(" %llu times", times);
	if (gi != MIG_EVENT_NO_INSTANCE)
		printf(" on GPU instance %u", gi);
	if (ci != MIG_EVENT_NO_INSTANCE)
		printf(" compute instance %u", ci);
	printf("\n");
	if (action < 0)
		return SMI_OK;
	r = CONTROL(s, SimSetRecoveryAction)((unsigned)s->device, (unsigned)action);
	if (r)
		return smi_fail(s, r, "Unable to set the recovery action of %s %d", s->word, s->device);
	printf("%s %d asks for recovery action %s\n", s->word, s->device, action_words[action]);
	return SMI_OK;
}

static int cmd_ecc(struct smi *s, int argc, char **argv)
{
	unsigned type = MIG_MEMORY_ERROR_CORRECTED;
	int location = MIG_MEMORY_LOCATION_DRAM;
	unsigned long long count = 0;
	mig_return_t r;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--uncorrected")) {
			type = MIG_MEMORY_ERROR_UNCORRECTED;
		} else if (!strcmp(argv[i], "--location") && i + 1 < argc) {
			location = word_index(argv[++i], location_words, MIG_MEMORY_LOCATION_COUNT);
			if (location < 0) {
				fprintf(stderr, "Unknown memory location \"%s\"\n", argv[i]);
				return SMI_USAGE;
			}
		} else if (count || !parse_count(argv[i], &count)) {
			count = 0;
			break;
		}
	}
	if (s->device == SMI_ALL || !count) {
		fprintf(stderr, "usage: accel-smi sim ecc -i N [--uncorrected] [--location WHERE] COUNT\n");
		return SMI_USAGE;
	}
	r = CONTROL(s, SimAddEccErrors)((unsigned)s->device, type, (unsigned)location, count);
	if (r)
		return smi_fail(s, r, "Unable to count ECC errors in %s of %s %d", location_words[location], s->word,
		                s->device);
	printf("%s %d: %llu more %s ECC error%s in %s\n", s->word, s->device, count,
	       type == MIG_MEMORY_ERROR_CORRECTED ? "corrected" : "uncorrected", count == 1 ? "" : "s",
	       location_words[location]);
	return SMI_OK;
}

static int cmd_recover(struct smi *s)
{
	mig_return_t r;

	if (s->device == SMI_ALL) {
		fprintf(stderr, "usage: accel-smi sim recover -i N\n");
		return SMI_USAGE;
	}
	r = CONTROL(s, SimSetRecoveryAction)((unsigned)s->device, MIG_GPU_RECOVERY_ACTION_NONE);
	if (r)
		return smi_fail(s, r, "Unable to recover %s %d", s->word, s->device);
	printf("%s %d recovered: recovery action none\n", s->word, s->device);
	return SMI_OK;
}

/* "12.5" -> 1250 hundredths of a percent, 0..100 */
static bool parse_percent(const char *arg, unsigned *out)
{
	char *end;
	double v;

	if (!arg || !*arg)
		return false;
	v = strtod(arg, &end);
	if (*end || !(v >= 0.0 && v <= 100.0))
		return false;
	*out = (unsigned)(v * 100.0 + 0.5);
	return true;
}

static int cmd_usage(struct smi *s, int argc, char **argv)
{
	unsigned gi = s->gi == SMI_ALL ? MIG_EVENT_NO_INSTANCE : (unsigned)s->gi;
	unsigned rate[3] = { 0, 0, 0 };
	static const char *const opts[3] = { "--sm", "--occupancy", "--dram" };
	unsigned long long mem = 0;
	bool ok = s->device != SMI_ALL && s->ci == SMI_ALL;
	mig_return_t r;

	for (int i = 0; ok && i < argc; i++) {
		int k = -1;

		for (int j = 0; j < 3; j++)
			if (!strcmp(argv[i], opts[j]))
				k = j;
		if (k >= 0 && i + 1 < argc)
			ok = parse_percent(argv[++i], &rate[k]);
		else if (!strcmp(argv[i], "--memory") && i + 1 < argc)
			ok = parse_count(argv[++i], &mem);
		else
			ok = false;
	}
	if (!ok) {
		fprintf(stderr, "usage: accel-smi sim usage -i N [-gi G] [--sm PCT] [--occupancy PCT] [--dram PCT] "
		                "[--memory BYTES]\n");
		return SMI_USAGE;
	}
	r = CONTROL(s, SimSetUsage)((unsigned)s->device, gi, rate[0], rate[1], rate[2], mem);
	if (r)
		return smi_fail(s, r, "Unable to set the usage of %s %d", s->word, s->device);
	printf("%s %d", s->word, s->device);
	if (gi != MIG_EVENT_NO_INSTANCE)
		printf(" GPU instance %u", gi);
	printf(": SM activity %.2f%%, SM occupancy %.2f%%, DRAM bandwidth %.2f%%, memory used %llu bytes\n",
	       rate[0] / 100.0, rate[1] / 100.0, rate[2] / 100.0, mem);
	return SMI_OK;
}

static int cmd_energy(struct smi *s, int argc, char **argv)
{
	unsigned long long mj = 0;
	mig_return_t r;

	if (s->device == SMI_ALL || argc != 1 || !parse_count(argv[0], &mj)) {
		fprintf(stderr, "usage: accel-smi sim energy -i N MILLIJOULES\n");
		return SMI_USAGE;
	}
	r = CONTROL(s, SimSetEnergy)((unsigned)s->device, mj);
	if (r)
		return smi_fail(s, r, "Unable to set the energy counter of %s %d", s->word, s->device);
	printf("%s %d: energy counter %llu mJ\n", s->word, s->device, mj);
	return SMI_OK;
}

static int cmd_gpm(struct smi *s, int argc, char **argv)
{
	mig_return_t r;
	bool on;

	if (s->device == SMI_ALL || argc != 1 || (strcmp(argv[0], "on") && strcmp(argv[0], "off"))) {
		fprintf(stderr, "usage: accel-smi sim gpm -i N on|off\n");
		return SMI_USAGE;
	}
	on = !strcmp(argv[0], "on");
	r = CONTROL(s, SimSetGpmSupport)((unsigned)s->device, on);
	if (r)
		return smi_fail(s, r, "Unable to set GPM support of %s %d", s->word, s->device);
	printf("%s %d: GPM %s\n", s->word, s->device, on ? "supported" : "not supported");
	return SMI_OK;
}

int smi_sim_health(struct smi *s, const char *cmd, int argc, char **argv)
{
	if (!strcmp(cmd, "usage"))
		return cmd_usage(s, argc, argv);
	if (!strcmp(cmd, "energy"))
		return cmd_energy(s, argc, argv);
	if (!strcmp(cmd, "gpm"))
		return cmd_gpm(s, argc, argv);
	if (!strcmp(cmd, "xid"))
		return cmd_xid(s, argc, argv);
	if (!strcmp(cmd, "ecc"))
		return cmd_ecc(s, argc, argv);
	if (!strcmp(cmd, "recover") && argc == 0)
		return cmd_recover(s);
	return -1;
}
