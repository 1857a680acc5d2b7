/* SPDX-License-Identifier: MIT */
/*
 * A Slurm job's MIG partitions, seen through the accelfs mount and nothing
 * else: the SPANK plugin (in slurmd's processes) and accelfs-slurm-sync share
 * it, so both agree on what "the job's partitions" are.
 *
 * A partition belongs to Slurm job J exactly when it is named
 * slurm-<J>-<n>; it is found under MOUNT/mig/<profile>/ whichever device it
 * is on (accelfs lists every job of a profile there).  Nothing here touches a
 * directory with another name: hand-made jobs, Kubernetes jobs and other
 * clusters' jobs are never carved over or reclaimed.
 */
#ifndef ACCELFS_SLURM_MIG_JOBS_H
#define ACCELFS_SLURM_MIG_JOBS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AM_NAME_MAX 64 /* accelfs job names are at most 63 bytes */
#define AM_MAX_SPECS 8
#define AM_MAX_PER_JOB 32 /* partitions one job may ask for on a node */
#define AM_MAX_PROFILES 64

/* One PROFILE[:COUNT] item of --accel-mig, optionally pinned to a device (ppu0/4g.48gb:2). */
struct am_spec {
	char device[AM_NAME_MAX]; /* "" : accelfs picks the device (MOUNT/mig/<profile>) */
	char profile[AM_NAME_MAX];
	unsigned count;
};

struct am_request {
	struct am_spec specs[AM_MAX_SPECS];
	unsigned nspecs;
	unsigned total; /* sum of the counts */
};

/* A partition of some Slurm job, as the mount shows it. */
struct am_part {
	uint32_t jobid;
	unsigned index;
	char profile[AM_NAME_MAX];
	char name[AM_NAME_MAX];
	char device[AM_NAME_MAX]; /* ppu0, gpu0: from the job's status */
	char uuid[96];            /* MIG-...: from the job's status */
};

/*
 * Parse "[DEVICE/]PROFILE[:COUNT][,...]".  0, or -1 with the reason in err
 * (written for the user who typed the option).
 */
int am_parse_request(const char *text, struct am_request *req, char *err, size_t len);

/* 1 when name is slurm-<jobid>-<index> (decimal, no sign, no leading zero), with its parts. */
int am_parse_name(const char *name, uint32_t *jobid, unsigned *index);

/*
 * Every Slurm partition on the node (jobid 0) or of one job, in profile then
 * index order.  Reads status for device and uuid when with_status is set (a
 * partition whose status cannot be read keeps "" there).  0, or -1 with err.
 */
int am_list(const char *mount, uint32_t jobid, int with_status, struct am_part *out, size_t max, size_t *n, char *err,
            size_t len);

/*
 * Carve the job's request: slurm-<jobid>-0, -1, ... in the order of the
 * specs, each mkdir made as uid:gid (the job's user: accelfs records it as
 * the owner and charges its quota; 0 carves as root).  One already there
 * is kept (a prolog run again for the same job).  On any failure
 * everything this job has is given back first, and the errno of the
 * failed mkdir is returned with accelfs's last_error in err (EDQUOT: the
 * user's quota, naming the limit and the use).
 */
int am_carve(const char *mount, uint32_t jobid, uid_t uid, gid_t gid, const struct am_request *req, char *err,
             size_t len);

/*
 * Give back every partition of the job; a busy one is tried `tries` times,
 * 200 ms apart.  Returns how many are left (0: all gone), with the last
 * reason in err.
 */
int am_reclaim_job(const char *mount, uint32_t jobid, int tries, char *err, size_t len);

/* rmdir MOUNT/mig/<profile>/<name>: 0 or errno, accelfs's last_error in err. */
int am_reclaim_one(const char *mount, const char *profile, const char *name, char *err, size_t len);

/* The published profiles (MOUNT/mig/<profile>/) and what each can carve now. */
struct am_avail {
	char profile[AM_NAME_MAX];
	long available;
};
int am_available(const char *mount, struct am_avail *out, size_t max, size_t *n, char *err, size_t len);

/* Read a whole small file into buf (NUL-terminated): bytes read, or -1 with errno set. */
long am_read_file(const char *path, char *buf, size_t len);

#endif
