/* SPDX-License-Identifier: MIT */
/*
 * `accel-smi mig ...`: the instance operations, shaped like `ppu-smi mig`
 * and `nvidia-smi mig` (-lgip, -lgipp, -lgi, -cgi [-C], -dgi, -lcip, -cci,
 * -lci, -dci): the arguments, and which command they name (the commands:
 * accel-smi-mig-gi.c, accel-smi-mig-ci.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/smi-mig.h"

static int parse_id(const char *arg, const char *opt, int *out)
{
	char *end;
	long v;

	if (!arg) {
		fprintf(stderr, "%s needs a value\n", opt);
		return -1;
	}
	v = strtol(arg, &end, 10);
	if (!*arg || *end || v < 0 || v > 100000) {
		/* ppu-smi answers a list (or anything but one id) like a missing device. */
		fprintf(stderr, "No devices were found\n");
		return -2;
	}
	*out = (int)v;
	return 0;
}

static int set_action(struct mig_args *a, enum mig_action act)
{
	if (a->action != ACT_NONE) {
		fprintf(stderr, "Only one mig operation at a time\n");
		return -1;
	}
	a->action = act;
	return 0;
}

int smi_cmd_mig(struct smi *s, int argc, char **argv)
{
	static const struct {
		const char *short_opt, *long_opt;
		enum mig_action act;
	} actions[] = {
		{ "-lgip", "--list-gpu-instance-profiles", ACT_LGIP },
		{ "-lgipp", "--list-gpu-instance-possible-placements", ACT_LGIPP },
		{ "-lgi", "--list-gpu-instances", ACT_LGI },
		{ "-cgi", "--create-gpu-instance", ACT_CGI },
		{ "-dgi", "--destroy-gpu-instance", ACT_DGI },
		{ "-lcip", "--list-compute-instance-profiles", ACT_LCIP },
		{ "-cci", "--create-compute-instance", ACT_CCI },
		{ "-lci", "--list-compute-instances", ACT_LCI },
		{ "-dci", "--destroy-compute-instance", ACT_DCI },
	};
	mig_device_t devs[MAX_DEVICES];
	unsigned idx[MAX_DEVICES], n;
	struct mig_args a = { 0 };
	int r;

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		bool matched = false;

		if (!strcmp(arg, "-i") || !strcmp(arg, "--id")) {
			if ((r = parse_id(i + 1 < argc ? argv[++i] : NULL, arg, &s->device)))
				return r == -2 ? SMI_NO_DEVICE : SMI_USAGE;
			continue;
		}
		if (!strcmp(arg, "-gi") || !strcmp(arg, "--gpu-instance-id")) {
			if ((r = parse_id(i + 1 < argc ? argv[++i] : NULL, arg, &s->gi)))
				return r == -2 ? SMI_NO_DEVICE : SMI_USAGE;
			continue;
		}
		if (!strcmp(arg, "-ci") || !strcmp(arg, "--compute-instance-id")) {
			if ((r = parse_id(i + 1 < argc ? argv[++i] : NULL, arg, &s->ci)))
				return r == -2 ? SMI_NO_DEVICE : SMI_USAGE;
			continue;
		}
		if (!strcmp(arg, "-C") || !strcmp(arg, "--default-compute-instance")) {
			a.default_ci = true;
			continue;
		}
		if (!strcmp(arg, "--ids")) {
			a.ids = true;
			continue;
		}
		for (size_t k = 0; k < sizeof(actions) / sizeof(actions[0]) && !matched; k++) {
			if (strcmp(arg, actions[k].short_opt) && strcmp(arg, actions[k].long_opt))
				continue;
			matched = true;
			if (set_action(&a, actions[k].act))
				return SMI_USAGE;
			if (actions[k].act == ACT_CGI || actions[k].act == ACT_CCI) {
				/* -cgi needs its list; -cci's is optional (the default profile). */
				if (i + 1 < argc && (argv[i + 1][0] != '-' || actions[k].act == ACT_CGI))
					a.list = argv[++i];
				else if (actions[k].act == ACT_CGI) {
					fprintf(stderr, "-cgi needs a profile id or name\n");
					return SMI_USAGE;
				}
			}
		}
		if (!matched) {
			fprintf(stderr, "Invalid mig option \"%s\" (-mig is a top-level flag: accel-smi -i N -mig 1)\n",
			        arg);
			return SMI_USAGE;
		}
	}
	if (a.action == ACT_NONE) {
		fprintf(stderr, "mig needs one of -lgip -lgipp -lgi -cgi -dgi -lcip -cci -lci -dci\n");
		return SMI_USAGE;
	}
	if (a.default_ci && a.action != ACT_CGI) {
		fprintf(stderr, "-C only goes with -cgi\n");
		return SMI_USAGE;
	}
	if (a.ids && a.action != ACT_LCIP) {
		fprintf(stderr, "--ids only goes with -lcip\n");
		return SMI_USAGE;
	}
	n = smi_select_devices(s, devs, idx, MAX_DEVICES);
	if (n == 0)
		return SMI_NO_DEVICE;
	switch (a.action) {
	case ACT_LGIP:
		return smi_mig_lgip(s, devs, idx, n);
	case ACT_LGIPP:
		return smi_mig_lgipp(s, devs, idx, n);
	case ACT_LGI:
		return smi_mig_lgi(s, devs, idx, n);
	case ACT_CGI:
		return smi_mig_cgi(s, devs, idx, n, &a);
	case ACT_DGI:
		return smi_mig_dgi(s, devs, idx, n);
	case ACT_LCIP:
		return smi_mig_lcip(s, devs, idx, n, a.ids);
	case ACT_CCI:
		return smi_mig_cci(s, devs, idx, n, &a);
	case ACT_LCI:
		return smi_mig_lci(s, devs, idx, n);
	case ACT_DCI:
		return smi_mig_dci(s, devs, idx, n);
	case ACT_NONE:
		break;
	}
	return SMI_USAGE;
}
