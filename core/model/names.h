/* SPDX-License-Identifier: MIT */
/*
 * Profile names.  One normalizer serves both directions, discovery and the
 * mkdir path, so a name read from the driver and a name typed by a user can
 * never drift apart:
 *
 *   driver name   "MIG 4g48gb"   --normalize-->  vendor name  "4g48gb"
 *   vendor name   "4g48gb"       --publish---->  published    "4g.48gb"   (T-Head)
 *   published     "4g.48gb"      --vendor----->  vendor name  "4g48gb"
 *
 * NVIDIA already writes the separator ("MIG 1g.18gb" -> "1g.18gb"), so its
 * family publishes names unchanged.  A profile is offered only when
 * vendor(publish(normalize(raw))) == normalize(raw).
 */
#ifndef ACCEL_NAMES_H
#define ACCEL_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define ACCEL_NAME_MAX 64

enum accel_name_verdict {
	ACCEL_NAME_OK = 0,
	ACCEL_NAME_EMPTY,   /* nameless, or whitespace only */
	ACCEL_NAME_VARIANT, /* a "+me" / "+gfx" style variant */
	ACCEL_NAME_INVALID, /* cannot be a resource-name segment */
	ACCEL_NAME_NO_ROUNDTRIP,
};

/* Why a name was refused, for warnings. */
const char *accel_name_verdict_str(enum accel_name_verdict v);

/*
 * Lowercase, keep the last whitespace-separated field ("MIG 4g48gb" ->
 * "4g48gb").  Characters are never rewritten: a name that is not a valid
 * resource-name segment is refused, not fixed.
 */
enum accel_name_verdict accel_name_normalize(const char *raw, char *out, size_t outlen);

/* "4g48gb" -> "4g.48gb" when geometry publishing applies; else a copy. */
void accel_name_publish(const char *vendor, bool geometry, char *out, size_t outlen);
/* "4g.48gb" -> "4g48gb" when geometry publishing applies; else a copy. */
void accel_name_vendor(const char *published, bool geometry, char *out, size_t outlen);

/*
 * The whole pipeline: raw driver name to published name, with the
 * round-trip check.  out receives the published name, vendor_out (optional)
 * the vendor spelling.
 */
enum accel_name_verdict accel_name_from_driver(const char *raw, bool geometry, char *out, size_t outlen,
                                               char *vendor_out, size_t vendor_len);

/*
 * NVML's name for a GPU-instance profile whose record came back unnamed (a
 * real H200 with MIG off does that), spelled as nvidia-smi prints it:
 * "MIG <slices>g.<GB>gb" plus the variant its NVML profile index stands for
 * (+me, +gfx, -me, +me.all).  GB is the profile's share of the card in
 * eighths, times the card's size in GiB rounded up, rounded: 16384 MiB of a
 * 143771 MiB H200 is 1g.18gb.  total_mib 0: plain rounding of memory_mib.
 */
void accel_name_nvml_geometry(unsigned index, unsigned slices, unsigned long long memory_mib,
                              unsigned long long total_mib, char *out, size_t outlen);

/* A resource-name segment: [A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?, at most 63 bytes. */
bool accel_name_is_segment(const char *s);

#endif
