/* SPDX-License-Identifier: MIT */
/*
 * The CDI directory (--cdi-dir): where a daemon publishes its jobs for the
 * runtimes, one spec file per ready job, and how it holds the directory.
 *
 * A job's file is <cdi-dir>/accelfs-<tag>-<job>.json, where the tag names
 * the daemon by its state directory (eight hex digits of a hash of its real
 * path): a carve writes one small file, a reclaim removes one, and a daemon
 * sweeps only the files of its own tag (a restart removes what a crash left
 * and what was removed while it was down, never another daemon's).
 *
 * One daemon per CDI directory: <cdi-dir>/accelfs.lock is held (flock) for
 * the daemon's life and names it (pid, state directory, mountpoint).  Two
 * daemons in one directory would both publish accelfs.io/mig=<job>, and a
 * runtime refuses a device name that two specs of one directory define
 * ("conflicting device", then "unresolvable CDI devices"): the second
 * daemon is refused at start instead, naming the first.  Runtimes read only
 * *.json and *.yaml, so neither the lock nor a temporary file is a spec.
 */
#ifndef ACCEL_CDI_DIR_H
#define ACCEL_CDI_DIR_H

#include <stdbool.h>
#include <stddef.h>

#define ACCEL_CDI_PREFIX "accelfs-"
#define ACCEL_CDI_TAG_LEN 8
/* The one node spec of every job that accelfs wrote before there was a file per job. */
#define ACCEL_CDI_LEGACY_FILE "accelfs.json"
#define ACCEL_CDI_CLAIM_FILE "accelfs.lock"

/* The daemon's tag: eight hex digits of a hash of its state directory's real path. */
void accel_cdi_tag(const char *state_dir, char tag[ACCEL_CDI_TAG_LEN + 1]);
/* <dir>/accelfs-<tag>-<job>.json into buf: 0 or -ENAMETOOLONG. */
int accel_cdi_path(const char *dir, const char *tag, const char *job, char *buf, size_t len);
/* Replace a job's spec file atomically (not fsync'd: the directory is a runtime one); 0 or -errno. */
int accel_cdi_put(const char *dir, const char *tag, const char *job, const char *text);
/* Remove a job's spec file; 0 also when there was none, else -errno. */
int accel_cdi_drop(const char *dir, const char *tag, const char *job);

struct accel_cdi_sweep {
	unsigned removed; /* files of ours whose job is not published (stale, or left by a crash), removed */
	unsigned failed;  /* files that could not be removed */
	int error;        /* the first failure's -errno */
	bool legacy;      /* the single node spec of an older accelfs was removed */
	unsigned foreign; /* accelfs-*.json files of another tag, left alone */
	char foreign_tag[ACCEL_CDI_TAG_LEN + 1];
};

/*
 * Remove every file of this tag whose job keep() does not name (temporary
 * files of ours included) and the legacy node spec; count the files of other
 * tags.  A missing directory is empty.  0, or -errno when it cannot be read.
 */
int accel_cdi_sweep(const char *dir, const char *tag, bool (*keep)(void *ctx, const char *job), void *ctx,
                    struct accel_cdi_sweep *out);

/*
 * Claim the directory for this daemon (created if missing): take
 * <dir>/accelfs.lock and write the holder into it.  The descriptor is
 * close-on-exec and shared by a fork, like the state directory's lock, and
 * must stay open for the daemon's life.  0 with *fd; or -EBUSY when another
 * live accelfs holds it, -errno otherwise, with err saying what to do.
 */
int accel_cdi_claim(const char *dir, const char *state_dir, const char *mountpoint, int *fd, char *err, size_t errlen);
/* Rewrite the holder's pid (the serving process, after the fork). */
void accel_cdi_claim_note(int fd, const char *state_dir, const char *mountpoint);
/* On a clean exit: empty the lock file and let the directory go. */
void accel_cdi_claim_release(int fd);

#endif
