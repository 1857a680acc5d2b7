/* SPDX-License-Identifier: MIT */
/*
 * What every file of accel-smi shares: the session (struct smi), the
 * driver helpers (accel-smi-driver.c) and the table layouts
 * (accel-smi-format.c).  The commands are in tools/smi-commands.h.
 */
#ifndef ACCEL_SMI_SHARED_H
#define ACCEL_SMI_SHARED_H

#include <stdbool.h>
#include <stdio.h>

#include "core/driver/family.h"
#include "core/driver/mig_lib.h"

/* Exit statuses. */
#define SMI_OK 0
#define SMI_FAILED 1    /* the driver refused or failed; its message was printed */
#define SMI_USAGE 2     /* bad command line */
#define SMI_NO_DEVICE 6 /* "No devices were found" (nvidia-smi's status for it) */

#define SMI_ALL (-1) /* no -i / -gi / -ci given */

struct smi {
	const struct accel_family *family;
	bool thead;       /* ppu-smi's layout and words; otherwise nvidia-smi's */
	const char *word; /* "PPU" | "GPU" */
	struct mig_lib lib;
	int device; /* -i */
	int gi;     /* -gi */
	int ci;     /* -ci */
};

/* One GPU-instance profile as probed: its index, the driver's record, and the name shown. */
struct smi_gi_profile {
	unsigned index;
	mig_gpu_instance_profile_info_v3_t info;
	char name[MIG_DEVICE_NAME_V2_BUFFER_SIZE]; /* the record's, or made up as nvidia-smi does */
};

/* One distinct CI profile of a GI (aliased indices folded into one). */
struct smi_ci_profile {
	mig_compute_instance_profile_info_v2_t info;
	bool whole; /* covers the whole GI: the default (*) */
};

#define SMI_MAX_PROFILES 96

/* Print the driver's failure: "<what>: <ErrorString> (<NAME>)". Returns SMI_FAILED. */
int smi_fail(struct smi *s, mig_return_t r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The cards -i selects, in order: fills devices/indices, returns how many (0 with a message if none). */
unsigned smi_select_devices(struct smi *s, mig_device_t *devices, unsigned *indices, unsigned max);

/* Every GI profile the card reports (probe order), and the same sorted for display. */
unsigned smi_gi_profiles(struct smi *s, mig_device_t dev, struct smi_gi_profile *out, unsigned max);
void smi_sort_for_display(struct smi_gi_profile *p, unsigned n);
/* The profile with this id, or NULL. */
const struct smi_gi_profile *smi_gi_profile_by_id(const struct smi_gi_profile *p, unsigned n, unsigned id);

/* The distinct CI profiles of a GI, by first index. */
unsigned smi_ci_profiles(struct smi *s, mig_gpu_instance_t gi, struct smi_ci_profile *out, unsigned max);
/*
 * A CI profile's display name: the driver's, or when it gives none the GI's
 * name for the whole-GI profile and "MIG <n>c.<gi>" (NVIDIA) or
 * "MIG <cu>u.<gi>" (T-Head, as ppu-smi) for a share.
 */
void smi_ci_profile_name(const struct smi *s, const struct smi_ci_profile *c, const char *gi_profile_name, char *buf,
                         size_t len);

/* The GI instances of a card (every profile), sorted by id; returns how many. */
struct smi_gi {
	mig_gpu_instance_t handle;
	mig_gpu_instance_info_t info;
};
unsigned smi_gpu_instances(struct smi *s, mig_device_t dev, struct smi_gi *out, unsigned max);

/* "MIG 4g48gb" -> "4g48gb". */
const char *smi_short_name(const char *name);

/* Table layouts (accel-smi-format.c), in the vendor tool's own shape. */
void smi_print_lgip_header(const struct smi *s);
void smi_print_lgip_row(const struct smi *s, unsigned dev, const struct smi_gi_profile *p, unsigned free_count);
void smi_print_lgipp_row(const struct smi *s, unsigned dev, const struct smi_gi_profile *p,
                         const mig_gpu_instance_placement_t *pl, unsigned n);
void smi_print_lgi_header(const struct smi *s);
void smi_print_lgi_row(const struct smi *s, unsigned dev, const char *name, const mig_gpu_instance_info_t *gi);
void smi_print_lcip_header(const struct smi *s);
void smi_print_lcip_row(const struct smi *s, unsigned dev, unsigned gi, const char *name,
                        const struct smi_ci_profile *c, unsigned free_count);
void smi_print_lci_header(const struct smi *s);
void smi_print_lci_row(const struct smi *s, unsigned dev, unsigned gi, const char *name,
                       const mig_compute_instance_info_t *ci);
/* The line that closes each row (nvidia-smi) or the table. */
void smi_print_rule(const struct smi *s, unsigned width);
/* Table widths. */
#define SMI_W_LGIP(s) ((s)->thead ? 83u : 81u)
#define SMI_W_LGI(s) 59u
#define SMI_W_LCIP(s) 88u
#define SMI_W_LCI(s) ((s)->thead ? 69u : 70u)

#endif
