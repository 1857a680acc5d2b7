/* SPDX-License-Identifier: MIT */
/*
 * Delegation: who may carve where, set the cgroupfs way, by chown and chmod
 * on a directory of the tree, and kept across restarts in
 * <state-dir>/delegation.json.  This file only stores the settings; the
 * kernel enforces them (the mount uses default_permissions) and the
 * filesystem decides which directory inherits from which.
 */
#ifndef ACCEL_DELEGATION_H
#define ACCEL_DELEGATION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct accel_perm {
	uid_t uid;
	gid_t gid;
	mode_t mode; /* permission bits only (07777) */
};

struct accel_delegation;

/* Load <state_dir>/delegation.json (absent: nothing delegated).  NULL on a
 * file that cannot be read or parsed, with err set: refusing to start beats
 * silently widening or narrowing who may carve. */
struct accel_delegation *accel_delegation_load(const char *state_dir, char *err, size_t errlen);
void accel_delegation_free(struct accel_delegation *d);

/* The explicit setting of a path ("ppu3/mig/4g.48gb"); false if none. */
bool accel_delegation_get(struct accel_delegation *d, const char *path, struct accel_perm *out);
/* Set and persist durably; 0 or -errno. */
int accel_delegation_set(struct accel_delegation *d, const char *path, const struct accel_perm *perm);

#endif
