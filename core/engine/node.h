/* SPDX-License-Identifier: MIT */
/*
 * The node: every MIG card of every family present, kept current.
 *
 * This is the library's front door for the daemon and the tools.  It opens
 * each family's driver library, enumerates the cards, reads the records,
 * reconciles, and keeps an immutable snapshot of the result current: after
 * every carve and reclaim, and from a poller that re-reads what udev cannot
 * report (MIG mode, instances carved by hand) every poll interval or at once
 * when woken (a udev event, an explicit refresh).
 *
 * Locking: each card has its own lock, held for the whole of a carve or a
 * reclaim (the driver is asked one thing at a time per card, and capacity is
 * back before rmdir returns).  Readers take a reference on the current
 * snapshot (a pointer copy under a mutex nobody holds for long).  The full
 * lock order is in core/engine/node_internal.h.
 */
#ifndef ACCEL_NODE_H
#define ACCEL_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/driver/family.h"
#include "core/driver/holders.h"
#include "core/model/model.h"

#define ACCEL_MAX_FAMILIES 4

struct accel_family_config {
	bool disabled;         /* do not look for this family at all */
	const char *library;   /* load exactly this file instead of the family's search */
	const char *dev_root;  /* where the device nodes are; NULL: "/dev" */
	const char *proc_root; /* where the driver's procfs is; NULL: "/proc" */
};

/*
 * Called after a new snapshot is published whose content differs from the
 * previous one.  It may run on any thread, possibly inside a filesystem
 * request: it must only queue work, never call back into the kernel.
 */
typedef void (*accel_change_fn)(void *ctx, struct accel_snapshot *old_snap, struct accel_snapshot *new_snap);

struct accel_node_options {
	const char *state_dir;
	/* Where the node-level CDI spec files (a file per job, core/state/cdi_dir.h) are kept current; NULL: none. */
	const char *cdi_dir;
	/* Indexed like accel_families[]. */
	struct accel_family_config families[ACCEL_MAX_FAMILIES];
	unsigned poll_ms;         /* 0: 2000 */
	unsigned orphan_grace_ms; /* 0: 10000 */
	unsigned busy_retries;    /* 0: 4 */
	unsigned busy_delay_ms;   /* 0: 100 */
	unsigned health_wait_ms;  /* the event thread's longest wait in the driver; 0: 60000 */
	/*
	 * Reclaim instances accelfs did not make (foreign ones) as orphans are,
	 * on every card that does not say otherwise (<dev>/mig/foreign); false,
	 * the default: they are shown, taken, and never destroyed.
	 */
	bool foreign_reclaim;
	/* Observe only: never create, destroy or reclaim anything (mkdir/rmdir: EROFS). */
	bool read_only;
	accel_change_fn on_change;
	void *ctx;
};

struct accel_node;

/* Open every family (an absent one is skipped), reconcile, start the poller. */
struct accel_node *accel_node_start(const struct accel_node_options *opt, char *err, size_t errlen);
void accel_node_stop(struct accel_node *node);
/*
 * Tell opt.on_change nothing more: once this returns, no call of it is
 * running or will start (it runs under the lock this takes).  For a
 * listener that goes away while the node's threads still publish.
 */
void accel_node_mute(struct accel_node *node);

/* The current snapshot, referenced; release with accel_snapshot_unref. */
struct accel_snapshot *accel_node_snapshot(struct accel_node *node);

/*
 * Carve a job.  Returns 0 exactly when the job was carved and recorded; then
 * *made (may be NULL) describes it as the carve produced it (no nodes).  Or
 * -errno, nothing left behind; why explains, and last_error keeps it.  By
 * the time it returns, every snapshot taken shows the job (until an rmdir).
 */
int accel_node_mkdir(struct accel_node *node, const char *device, const char *profile, const char *job, uid_t uid,
                     gid_t gid, struct accel_job *made, char *why, size_t whylen);
/*
 * Carve a job exactly at the legal placement of profile that starts at
 * `start` (mkdir <dev>/mig/<profile>/placements/<start>/<job>), through the
 * same carve as accel_node_mkdir.  -EINVAL when no legal placement of the
 * profile starts there (why lists the legal ones), -ENOSPC when it overlaps
 * a live instance (why names who holds it); otherwise as accel_node_mkdir.
 */
int accel_node_mkdir_at(struct accel_node *node, const char *device, const char *profile, const char *job,
                        unsigned start, uid_t uid, gid_t gid, struct accel_job *made, char *why, size_t whylen);
/*
 * The layout's carve (core/engine/layout_apply.c): as accel_node_mkdir_at, owned
 * by the layout's writer uid:gid and charged to their quota (EDQUOT), on a
 * cordoned card too; job must have the layout's prefix, which every other
 * mkdir is refused (EINVAL).
 */
int accel_node_mkdir_layout(struct accel_node *node, const char *device, const char *profile, const char *job,
                            unsigned start, uid_t uid, gid_t gid, char *why, size_t whylen);
/*
 * Set a card's MIG mode (core/engine/node_mode.c): 0 once the mode read back is
 * current and pending alike (at once when it already was).  -EBUSY, nothing
 * asked of the driver, while the card has a GPU instance or a process holds
 * its nodes (why names them, pid and command); -EIO when the driver took it
 * but holds it pending (a reset would apply it: accelfs resets nothing);
 * -EOPNOTSUPP without the driver's SetMigMode.  last_error of "<dev>/mig".
 */
int accel_node_set_mode(struct accel_node *node, const char *device, bool enabled, char *why, size_t whylen);
/* Cordon a card: while on, mkdir on it answers EBUSY (a node-level one takes another card); the layout's do not. */
int accel_node_set_cordon(struct accel_node *node, const char *device, bool on);
/*
 * The operator acknowledges a card's failure once it is dealt with (a write
 * of `ok` or `clear` to <dev>/health by root or the card's delegate, uid
 * who): every fault of the card and its jobs is cleared in its health book,
 * stored, logged and published, as a recovery the driver reports would.
 * -ENOENT (no card), -ENODEV (absent), -EROFS (read-only), with why.
 */
int accel_node_health_ack(struct accel_node *node, const char *device, uid_t who, char *why, size_t whylen);
/*
 * Lay every hold on a card at once (the operator's cordon, a layout's drain
 * or waiting mode line, its lines pending and impossible): the card's view
 * is installed again and published with them, and what it admits follows
 * (core/policy/admits.c).  -ENOENT for no such card.
 */
int accel_node_set_hold(struct accel_node *node, const char *device, const struct accel_card_hold *h);

/*
 * Instances accelfs did not make (core/engine/node_foreign.c).  set_foreign: what
 * becomes of them on one card, value "keep", "reclaim" or "default" (as
 * --foreign says), kept in <state-dir>/foreign/<card uuid>; -EINVAL,
 * -ENOENT, -ENODEV (absent), -EROFS, or the state directory's errno.
 *
 * adopt: make GPU instance gi (its compute instance's MIG UUID uuid, when
 * not NULL) job `job` of uid:gid without destroying anything: one durable
 * record write, so a crash leaves it foreign or adopted.  The name rules and
 * quota of mkdir apply.  -ENOENT (no such instance), -EBUSY (a job's
 * already, or not one compute instance, or the card refused), -ESTALE
 * (another UUID), -EINVAL (a profile the card does not offer, a bad name),
 * -EEXIST, -EDQUOT, -EROFS; why says which.
 */
int accel_node_set_foreign(struct accel_node *node, const char *device, const char *value, char *why, size_t whylen);
int accel_node_adopt(struct accel_node *node, const char *device, unsigned gi, const char *uuid, const char *job,
                     uid_t uid, gid_t gid, char *why, size_t whylen);

/*
 * Carve a job of a profile on whichever device keeps the most capacity free
 * for later requests (see choose() in node.c).  device receives the choice.
 */
int accel_node_mkdir_any(struct accel_node *node, const char *profile, const char *job, uid_t uid, gid_t gid,
                         char *device, size_t len, struct accel_job *made, char *why, size_t whylen);
/*
 * Reclaim job instance uuid (its MIG UUID; NULL: whichever job has the
 * name): compute instance, then GPU instance.  0 exactly when the instance
 * is gone and its capacity back; a reclaim that fails midway leaves the job
 * "removing" (status says why) and rmdir again resumes it.  -ESTALE, nothing
 * touched, when the job of that name is another instance (removed and made
 * again since the caller read uuid), checked under the card's lock: what
 * removes a job it looked up earlier (the reclaimer, rmdir) says which one
 * it means.  accel_node_rmdir: whichever job has the name.
 */
int accel_node_rmdir_instance(struct accel_node *node, const char *device, const char *profile, const char *job,
                              const char *uuid, char *why, size_t whylen);
int accel_node_rmdir(struct accel_node *node, const char *device, const char *profile, const char *job, char *why,
                     size_t whylen);

/*
 * Quotas (core/policy/quota.h, core/engine/quota_check.c).  Replace the whole table with
 * the one text describes (validated whole first: -EINVAL, why naming the
 * line; written to <state-dir>/quota durably before it answers; -EROFS on
 * a read-only node).  Lowering a limit below what is used takes nothing
 * away: the next carves are refused until use falls under it.  A copy of
 * the table, to render or to export.
 */
struct accel_quota_table;
int accel_node_set_quota(struct accel_node *node, const char *text, char *why, size_t whylen);
int accel_node_quota_table(struct accel_node *node, struct accel_quota_table *out);

/*
 * last_error of a profile directory, by its key (core/engine/last_error.c):
 * accel_last_error_key spells it, the one place that does ("ppu3/4g.48gb"
 * for a device's profile, "mig/4g.48gb" for device "" or NULL: the
 * node-level one).  Its text is the outcome of the last operation there,
 * "<UTC time, ms> <sentence>" ("" when it succeeded): setting it stamps
 * the time, "" clears it.  Dropping clears every entry whose sentence
 * stale() says has lost its cause (a container named in a refusal is
 * gone), so that none outlives it.
 */
#define ACCEL_LAST_ERROR_KEY_MAX 160
void accel_last_error_key(char *buf, size_t len, const char *device, const char *profile);
void accel_node_last_error(struct accel_node *node, const char *key, char *buf, size_t len);
void accel_node_set_last_error(struct accel_node *node, const char *key, const char *text);
void accel_node_drop_last_errors(struct accel_node *node, bool (*stale)(const char *text, void *ctx), void *ctx);
/*
 * A failure of a job's file, mkdir or rmdir, said where mkdir's and rmdir's
 * are: last_error of the profile directory (device "" for the node-level
 * mig/<profile>; via_node: a device's job reached through mig/<profile>,
 * both).
 */
void accel_node_report(struct accel_node *node, const char *device, const char *profile, bool via_node,
                       const char *why);

/*
 * What runs on job instance uuid (NULL: whichever job has the name) of
 * device, as its driver says now (core/driver/processes.h): 0 and a malloc'd list,
 * or -errno and why: -ENOENT for a job that is gone, -ENODEV on an absent
 * card, -EOPNOTSUPP without the driver's query, -EBUSY when a carve holds the card past
 * ACCEL_PROCESSES_WAIT_MS (a reader never waits for one), else the driver's errno.
 */
struct accel_process;
int accel_node_job_processes(struct accel_node *node, const char *device, const char *job, const char *uuid,
                             struct accel_process **out, size_t *n, char *why, size_t whylen);

/* Processes holding a device's nodes. */
/*
 * What job j of device d uses (j NULL: the card), from the driver's counters
 * (core/driver/usage.h): answered from the last reading when it is under
 * ACCEL_USAGE_WINDOW_MS old, otherwise read now; may_wait (a file's
 * reader, not a scrape) waits one window when nothing was sampled lately.
 * Never under a card's lock.  0, or -ENOMEM.
 */
struct accel_usage;
int accel_node_usage(struct accel_node *node, const struct accel_snapshot *s, const struct accel_device *d,
                     const struct accel_job *j, bool may_wait, struct accel_usage *out);
/*
 * The last reading of the same that anyone took, as published: no driver
 * call, no lock but the usage table's leaf for a copy (node.json and
 * metrics, snapshot rows, show this).  want_new (a reader's open or read,
 * not a poll, a stat or the notifier): when it is a window old or missing,
 * the sampler thread is asked for a new one, after.  0, or -ENOENT when
 * nobody read it yet.
 */
int accel_node_usage_shown(struct accel_node *node, const struct accel_snapshot *s, const struct accel_device *d,
                           const struct accel_job *j, bool want_new, struct accel_usage *out);
/*
 * What accel_node_usage_shown says of every job of s, in the snapshot's
 * order (its devices, then each one's jobs): out[k] where known[k] (a ready
 * job that has a reading; both arrays hold every job), its values only
 * (ACCEL_USAGE_VALUES: the why sentences are the utilization file's).  One hold of the
 * usage table's lock and, with want_new, one wake-up of the sampler for
 * all the jobs that want a new reading: what a scrape of many jobs costs.
 * 0, or -ENOMEM.
 */
int accel_node_usage_shown_jobs(struct accel_node *node, const struct accel_snapshot *s, bool want_new,
                                struct accel_usage *out, bool *known);
/* The utilization file's text of the same (malloc'd into *text): 0 or -ENOMEM. */
int accel_node_usage_text(struct accel_node *node, const struct accel_snapshot *s, const struct accel_device *d,
                          const struct accel_job *j, char **text);

/* The processes holding the card (core/driver/holders.h: accel_card_holders, by the family's rule). */
int accel_node_holders(struct accel_node *node, const char *device, struct accel_holder **out, size_t *n);
struct accel_control_holder;
/* The holders of its shared control nodes, each with the node (accel_control_holders). */
int accel_node_control_holders(struct accel_node *node, const char *device, struct accel_control_holder **out,
                               size_t *n);

/*
 * A count that grows with every change of what the node publishes beside
 * its snapshot (last_error, the quota table, a usage reading), each counted
 * once the change can be read.  A render of a snapshot row that was made
 * with this count and a snapshot of one generation, made again with both
 * the same, says the same: fs/waiters.c spares a waiter's file the render
 * then.  Lock-free.
 */
uint64_t accel_node_shown_generation(struct accel_node *node);

/* Wake the poller now (a udev event, a test). */
void accel_node_kick(struct accel_node *node);
/*
 * Someone uses the tree (a lookup, a stat, an open, a read): the poller
 * keeps its cadence while someone does, and for ACCEL_POLL_LINGER_MS after
 * (and while what it last saw asks for another look: a removal to resume, an
 * instance nobody owns, a refused or absent card).  An idle node's poller
 * waits on its condition, so an idle daemon asks the driver nothing: a
 * touch, a kick, udev or the driver's events wake it.  Lock-free but for
 * the wake of an idle poller.
 */
#define ACCEL_POLL_LINGER_MS 10000
void accel_node_touch(struct accel_node *node);
/* How many readers wait in poll() now: while any does, the poller keeps its cadence. */
void accel_node_watching(struct accel_node *node, unsigned waiters);
/* Refresh everything synchronously, then return (used at start and by tests). */
void accel_node_refresh_all(struct accel_node *node);
/* Refresh one device as a poller pass would (reconcile and act), and publish.  -ENOENT if none. */
int accel_node_refresh_device(struct accel_node *node, const char *device);

#endif
