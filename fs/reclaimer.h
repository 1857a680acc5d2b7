/* SPDX-License-Identifier: MIT */
/*
 * The reclaimer: a thread that, every poll interval, whenever kicked and
 * as soon as an attached container's first process exits (it polls the
 * registry's pidfds, core/state/attach.h), clears attachments whose container is
 * gone without its poststop hook having run (the process died with the
 * runtime, a kill -9 of conmon, a reboot under a kept state directory),
 * forgets what was recorded for jobs that no longer exist, and removes each
 * when-detached job whose last container has gone: that job instance, by
 * its MIG UUID, never another job made under its name meanwhile.  A removal
 * the driver refuses is tried again the next pass, and logged once per
 * reason.
 */
#ifndef ACCELFS_RECLAIMER_H
#define ACCELFS_RECLAIMER_H

struct accelfs;
struct fs_reclaimer;

/*
 * Start it once the mount serves (it invalidates the kernel's caches):
 * NULL with *err = -errno on failure.  It hears of attaches, detaches and
 * policies through the registry (accel_attach_wake_fd): nothing kicks it.
 */
struct fs_reclaimer *fs_reclaimer_start(struct accelfs *fs, unsigned poll_ms, int *err);
/* Stop, join and free it; NULL: never started. */
void fs_reclaimer_stop(struct fs_reclaimer *r);

#endif
