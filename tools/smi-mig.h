/* SPDX-License-Identifier: MIT */
/*
 * `accel-smi mig`: what its files share.  accel-smi-mig.c reads the
 * arguments and dispatches; accel-smi-mig-gi.c has the GPU-instance
 * commands (-lgip, -lgipp, -lgi, -cgi [-C], -dgi), accel-smi-mig-ci.c the
 * compute-instance ones (-lcip, -cci, -lci, -dci), and accel-smi-mig-util.c
 * what both select and list by.
 */
#ifndef ACCEL_SMI_MIG_H
#define ACCEL_SMI_MIG_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/smi-commands.h"

#define MAX_DEVICES 256
#define MAX_GIS 32
#define MAX_CIS 16
#define MAX_CI_PROFILES 32

enum mig_action {
	ACT_NONE,
	ACT_LGIP,
	ACT_LGIPP,
	ACT_LGI,
	ACT_CGI,
	ACT_DGI,
	ACT_LCIP,
	ACT_CCI,
	ACT_LCI,
	ACT_DCI,
};

struct mig_args {
	enum mig_action action;
	const char *list; /* -cgi / -cci argument */
	bool default_ci;  /* -C */
	bool ids;         /* -lcip --ids: "<id>:<slices>" per distinct CI profile, for scripts */
};

struct smi_ci {
	mig_compute_instance_t handle;
	mig_compute_instance_info_t info;
};

unsigned smi_mig_cis(struct smi *s, mig_gpu_instance_t gi, const struct smi_ci_profile *profiles, unsigned n_profiles,
                     struct smi_ci *out, unsigned max);
bool smi_mig_enabled(struct smi *s, mig_device_t dev);
unsigned smi_mig_split(const char *list, char *copy, size_t len, char **items, unsigned max);
unsigned smi_mig_selected_gis(struct smi *s, mig_device_t dev, struct smi_gi *out);
void smi_mig_gi_profile_name(struct smi *s, mig_device_t dev, unsigned profile_id, char *buf, size_t len);
int smi_mig_lgip(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n);
int smi_mig_lgipp(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n);
int smi_mig_lgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n);
int smi_mig_cgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, const struct mig_args *a);
int smi_mig_dgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n);
int smi_mig_lcip(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, bool ids);
int smi_mig_create_ci(struct smi *s, unsigned dev_index, mig_gpu_instance_t gi, const char *what);
int smi_mig_cci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, const struct mig_args *a);
int smi_mig_lci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n);
int smi_mig_dci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n);

#endif
