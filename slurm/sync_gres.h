/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic of accelfs-slurm-sync, apart from Slurm and the mount so
 * that it reads as what it is: Slurm's GRES strings and the counts that
 * make Slurm's free count of each profile equal accelfs's `available`.
 */
#ifndef ACCELFS_SLURM_SYNC_GRES_H
#define ACCELFS_SLURM_SYNC_GRES_H

#include <stddef.h>

#include "mig_jobs.h"

struct gres_count {
	char type[AM_NAME_MAX];
	long count;
};

struct gres_set {
	struct gres_count mig[AM_MAX_PROFILES]; /* mig:<type>:<count> */
	size_t n;
	char other[1024]; /* every non-mig item, as Slurm wrote it less its "(...)" detail */
};

/*
 * Parse a node's Gres= or GresUsed= ("mig:4g.48gb:2,gpu:1,mig:1g.18gb:0(IDX:N/A)").
 * A bare "mig:<type>" counts 1.  0, or -1 when an item cannot be read.
 */
int gres_parse(const char *text, struct gres_set *out);

/* The count of one mig type (0 when absent). */
long gres_get(const struct gres_set *s, const char *type);
/* 1 when the set names the type, whatever its count. */
int gres_has(const struct gres_set *s, const char *type);
void gres_put(struct gres_set *s, const char *type, long count);

/* "other,mig:a:1,mig:b:0" with the mig items sorted by type; what slurm_update_node is given. */
void gres_format(const struct gres_set *s, char *out, size_t len);

/* Same mig counts and same other items. */
int gres_equal(const struct gres_set *a, const struct gres_set *b);

/*
 * A job's per-node request "gres:mig:4g.48gb:2,gres:gpu:1" (tres_per_node):
 * the mig counts into out.  0, or -1 when unreadable.
 */
int gres_parse_request(const char *tres_per_node, struct gres_set *out);

#endif
