/* SPDX-License-Identifier: MIT */
/*
 * The node's insides, shared by its files:
 *   node.c          cards and families, snapshots, the poller, start and stop
 *   node_refresh.c  re-reading one card from its driver and reconciling it
 *   node_jobs.c     mkdir and rmdir: names, carving, reclaiming (where it
 *                   carves: core/policy/place.h)
 *   node_cards.c    opening cards and families, and finding cards that
 *                   appear, go or come back (absent cards)
 *   node_view.c     installing a card's view, dropping its records, and the
 *                   view of an absent card, made from its records alone
 *   node_names.c    the job names the views show, by name; a new job's name
 *                   claimed once (its rule: core/model/model.c)
 *   quota_check.c   quotas at carve time: holds on what carves in progress cost
 *   node_publish.c  ordered snapshots; node_cdi.c: the CDI spec files that
 *                   follow them
 *   lock_order.c    taking the locks below, the order checked in debug builds
 *   last_error.c    the profile directories' last_error and its key
 *   node_health.c   the event thread: the driver's events into each card's
 *                   health book (core/state/health_book.h)
 * Nothing outside these files includes this.
 *
 * Lock order.  A thread takes these only in this order, never the other
 * way round, and holds at most one card lock:
 *
 *   1. topo          the card lists (read: every operation; write: rescan)
 *   2. card->lock    one driver conversation per card (carve, reclaim, refresh)
 *   3. names_lock    job names being carved, and the quotas with their holds
 *   4. publish_lock  one publisher at a time: snapshots are installed in the
 *                    order their views were collected, so none goes back in time
 *   5. view_lock     the cards' view pointers
 *   6. snap_lock     the current snapshot pointer (readers take only this one,
 *                    for the time of a pointer copy)
 *
 * cdi_lock, err_lock, poll_lock and quota_lock are leaves: nothing is taken while one
 * is held.  Slow I/O (the CDI spec files) happens under cdi_lock alone,
 * after the snapshot is installed, so no reader and no publisher waits for
 * it.  Debug builds check the order (node_lock_* below).
 */
#ifndef ACCEL_NODE_INTERNAL_H
#define ACCEL_NODE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/driver/card.h"
#include "core/driver/catalog.h"
#include "core/state/cdi_dir.h"
#include "core/state/health_book.h"
#include "core/state/intent.h"
#include "core/driver/inventory.h"
#include "core/engine/node.h"
#include "core/policy/quota.h"
#include "core/policy/reconcile.h"
#include "core/state/record.h"

struct node_family;
struct node_health;
struct node_name;
struct node_quota_hold;
struct node_quota;

#define NODE_NAME_BUCKETS 1024

/*
 * A GPU instance destroyed (a job's removal, an orphan or a foreign
 * instance reclaimed), kept until the event thread has seen its driver's
 * queue empty after it went (core/engine/node_tombs.c): an event on that GPU
 * instance id since then may be the destroyed instance's, and is charged
 * to it by identity, never to a job made on the same id since.
 */
enum node_tomb_kind {
	NODE_TOMB_JOB,     /* a job removed (rmdir, or a removal the poller finished) */
	NODE_TOMB_ORPHAN,  /* accelfs's own instance no record named, reclaimed: job is its intent's */
	NODE_TOMB_FOREIGN, /* an instance accelfs did not make, reclaimed as the operator asked */
};
struct node_tomb {
	enum node_tomb_kind kind;
	unsigned gi, ci;
	uint64_t seq; /* node->gone_seq once it was destroyed */
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX];
};
#define NODE_TOMBS 16

enum node_foreign_policy {
	NODE_FOREIGN_DEFAULT, /* as --foreign says */
	NODE_FOREIGN_KEEP,
	NODE_FOREIGN_RECLAIM,
};

struct node_card {
	struct accel_card card;
	struct node_family *fam;
	pthread_mutex_t lock; /* one driver conversation at a time on this card */

	/* Guarded by lock. */
	struct accel_device ident;   /* who the card is (name, uuid, product...): no arrays, set at open */
	bool mode, pending;          /* the MIG mode at the last reading */
	struct accel_card_hold hold; /* cordon, drain, a layout's mode line: no new job but the layout's */
	struct accel_catalog catalog;
	bool catalog_valid;
	bool catalog_mode;              /* the MIG mode the catalogue was probed under */
	struct accel_ci_cache ci_cache; /* card.ci_cache points here; emptied with the catalogue */
	struct accel_devnode *card_nodes;
	size_t n_card_nodes;
	char pci_driver[32];
	char udev_syspath[256];
	char drops_logged[1024];
	char refusal_logged[512];
	struct accel_record *records; /* authoritative in memory; mirrored on disk */
	size_t n_records;
	struct accel_record_bad *bad;
	size_t n_bad;
	struct accel_orphan_seen *seen;
	size_t n_seen;
	/* What accelfs set out to make and no record names yet (core/state/intent.h): mirrored on disk. */
	struct accel_intent *intents;
	size_t n_intents;
	/* What the operator said of foreign instances on this card (<dev>/mig/foreign): node_foreign.c. */
	enum node_foreign_policy foreign;
	struct accel_inventory inv; /* the live instances: last read, then kept by what carves answer */
	/* What the driver's events said (core/state/health_book.h): laid over every view this card installs. */
	struct accel_health_book health;
	struct node_tomb tombs[NODE_TOMBS]; /* instances removed lately, oldest first */
	size_t n_tombs;
	/*
	 * Device nodes.  A reading of the card (node_card_refresh) proves every
	 * ready job's nodes again from the capability files; a rebuild after the
	 * engine's own carve or reclaim keeps what the last view proved and takes
	 * the new job's nodes from what the carve itself read (carved_*), so that
	 * a carve costs the same with one job on the card or fifty.
	 */
	bool nodes_stale;
	unsigned carved_gi, carved_ci;
	struct accel_devnode *carved_nodes; /* owned until the next build takes them */
	size_t n_carved_nodes;

	/* The pointer is guarded by node->view_lock; the view itself is immutable (shared by snapshots). */
	struct accel_device *view;

	/*
	 * An absent card: its records are on disk but the driver does not give
	 * us the card (not enumerated, cannot be opened, no driver library).
	 * No handle, no driver call: its view comes from its records alone
	 * (node_view.c), until it is back or rmdir has forgotten its last job
	 * (node_cards.c).  absent is set when it is made, never changed after;
	 * absent_why only with topo write-held.
	 */
	bool absent;
	char absent_why[256];
};

/* A device index the driver reports but that could not be opened, and why (the absent card's reason). */
struct node_open_failure {
	unsigned index;
	char why[256];
};

struct node_family {
	const struct accel_family *family;
	struct mig_lib lib;
	bool loaded;
	char library[PATH_MAX];
	char dev_root[PATH_MAX];
	char proc_root[PATH_MAX];
	struct node_card **cards; /* present and absent, by ordinal */
	size_t n_cards;
	/* Guarded by topo; changed only write-held (node_cards.c). */
	unsigned n_indices;               /* the device count at the last enumeration */
	struct node_open_failure *failed; /* indices below it that did not open */
	size_t n_failed;
	struct node_health *health; /* its event thread (node_health.c); NULL: none */
};

struct error_entry {
	char key[160];
	char text[ACCEL_TEXT_MAX]; /* "" once cleared */
	int64_t when_ms;           /* when it was set, unix milliseconds */
};

struct accel_node {
	struct accel_node_options opt;
	char state_dir[PATH_MAX];
	struct node_family fams[ACCEL_MAX_FAMILIES];
	size_t n_fams;
	pthread_rwlock_t topo;
	uint64_t gone_seq;        /* atomic: bumped after every GPU instance a job loses (node_tombs.c) */
	uint64_t topo_generation; /* bumped by every rescan (topo write-held): the event thread watches again */
	struct accel_udev *udev;
	bool rescan; /* a udev event: look for added or removed devices */

	pthread_mutex_t publish_lock;
	pthread_mutex_t view_lock;
	/* Each family's library, as the next snapshot shows it: guarded by view_lock (node_family_open). */
	struct accel_family_state fam_states[ACCEL_MAX_FAMILIES];
	pthread_mutex_t snap_lock;
	struct accel_snapshot *snap; /* guarded by snap_lock; replaced only under publish_lock */
	uint64_t generation;         /* guarded by publish_lock */

	pthread_mutex_t cdi_lock;           /* the CDI spec files (node_cdi.c); all below guarded by it */
	struct accel_snapshot *cdi_target;  /* the newest snapshot the files are to follow */
	struct accel_snapshot *cdi_written; /* what they show; NULL: not known (the next follow sweeps) */
	bool cdi_failing;                   /* the last follow failed: said once, tried again */
	bool cdi_swept;                     /* the first sweep was done (and said so) */
	char cdi_tag[ACCEL_CDI_TAG_LEN + 1];

	/* The job names the views show (node_names.c), guarded by view_lock like the views. */
	struct node_name *names[NODE_NAME_BUCKETS];
	bool names_incomplete; /* an entry could not be allocated: look at every view instead */

	pthread_mutex_t names_lock; /* job names being carved, so two mkdirs cannot take one name */
	char (*reserved)[ACCEL_JOB_NAME_MAX + 1];
	size_t n_reserved;
	/*
	 * The limits (core/engine/quota_check.c): immutable once made, reference
	 * counted; replaced under names_lock and quota_lock (a leaf), so a carve
	 * reads it under names_lock and a reader takes a reference under
	 * quota_lock alone, for a pointer copy.  NULL: nothing is limited.
	 */
	struct node_quota *quota;
	pthread_mutex_t quota_lock;
	/*
	 * What jobs and cards use (core/engine/node_usage.c): one sampling state per
	 * job identity, asked only by readers.  Its locks are leaves of their
	 * own; a reading takes topo read-held and never a card's lock.
	 */
	struct node_usage *usage;
	/* Guarded by names_lock: what carves in progress cost. */
	struct node_quota_hold *quota_holds;
	size_t n_quota_holds;
	pthread_cond_t quota_cond; /* a hold let go, or the limits changed */

	pthread_mutex_t err_lock;
	struct error_entry *errors;
	size_t n_errors;
	/*
	 * Grows (atomically, after the change is visible) with every change of
	 * last_error or the quota table: accel_node_shown_generation's part.
	 */
	uint64_t shown_gen;

	pthread_t poller;
	bool poller_started;
	pthread_mutex_t poll_lock;
	pthread_cond_t poll_cond;
	bool kicked;
	bool stopping;
	/* The poller's rest (core/engine/node.c, accel_node_touch): atomics, read without poll_lock. */
	int64_t used_ms;   /* the last touch, node_now_ms() */
	unsigned watchers; /* readers waiting in poll() */
	bool idle;         /* the poller waits with no deadline: a touch or a watcher wakes it */
};

/*
 * Lock helpers that check the order above in debug builds (an assertion
 * names both locks); in release builds they are plain pthread calls.
 */
enum node_lock_rank {
	NODE_LOCK_TOPO = 1,
	NODE_LOCK_CARD,
	NODE_LOCK_NAMES,
	NODE_LOCK_PUBLISH,
	NODE_LOCK_VIEW,
	NODE_LOCK_SNAP,
	NODE_LOCK_LEAF,
};
void node_lock(pthread_mutex_t *m, enum node_lock_rank rank);
/* The same, waiting ms at most: 0, or -ETIMEDOUT (nothing taken). */
int node_lock_within(pthread_mutex_t *m, enum node_lock_rank rank, unsigned ms);
void node_unlock(pthread_mutex_t *m, enum node_lock_rank rank);
void node_topo_rdlock(struct accel_node *node);
void node_topo_wrlock(struct accel_node *node);
void node_topo_unlock(struct accel_node *node);

int64_t node_now_ms(void);

/* What the node publishes beside its snapshot changed, and can be read: counted (accel_node_shown_generation). */
static inline void node_shown_moved(struct accel_node *node)
{
	__atomic_add_fetch(&node->shown_gen, 1, __ATOMIC_RELEASE);
}

/*
 * Install a snapshot of every card's current view, if any view changed;
 * notify and keep the CDI spec current.  Returns the newest snapshot
 * (referenced), the caller's to unref; NULL only when out of memory.
 */
struct accel_snapshot *node_publish(struct accel_node *node);
/*
 * Make the CDI spec files follow s, or a newer snapshot they were asked to
 * follow before (cdi_lock held): node_cdi.c.
 */
void node_cdi_follow(struct accel_node *node, struct accel_snapshot *s);
/* At a clean stop: remove this daemon's spec files (cdi_lock held), then forget. */
void node_cdi_withdraw(struct accel_node *node);
void node_cdi_forget(struct accel_node *node);
/*
 * node_health.c: start the event threads of the families loaded (after
 * the first refresh), stop them (before the families close), and wake
 * them to watch again after a rescan (starting those of families loaded
 * since).
 */
void node_health_start(struct accel_node *node);
void node_health_stop(struct accel_node *node);
void node_health_kick(struct accel_node *node);

/*
 * node_find.c.  The card named "ppu3", with the topology read-held by the
 * caller; NULL if none.  node_card_take: the same card with its lock taken:
 * 0, or -ENOENT (no such device), -ENODEV (absent, where absent says what
 * is then not done; NULL takes an absent card too) or -EBUSY (wait_ms
 * non-zero and the card held longer: a reader's "read again"), with why
 * (NULL and 0 where the caller says nothing).
 * node_refuse_read_only: -EROFS on a --read-only node, why saying what
 * stays unchanged; 0 elsewhere.
 */
struct node_card *node_find_card(struct accel_node *node, const char *device);
int node_card_take(struct accel_node *node, const char *device, const char *absent, unsigned wait_ms,
                   struct node_card **out, char *why, size_t whylen);
int node_refuse_read_only(const struct accel_node *node, const char *unchanged, char *why, size_t whylen);

/*
 * node_cards.c.  Open a family's library and cards (and its absent cards),
 * close it; look again for cards that appeared, went or came back
 * (rescan: takes topo write-held; changed: topo read-held, a few driver
 * calls that say whether a rescan would find anything).
 */
int node_family_open(struct accel_node *node, struct node_family *fam);
/*
 * Record fam's library for the next snapshot: disabled, loaded (why NULL), or
 * not (ret: the loader's -errno, -ENOENT for not found) and why.  Takes view_lock.
 */
void node_family_state(struct accel_node *node, struct node_family *fam, bool disabled, int ret, const char *why);
void node_family_close(struct node_family *fam);
void node_cards_rescan(struct accel_node *node);
bool node_cards_changed(struct accel_node *node);
void node_card_free(struct node_card *nc);

/* Re-read one card from its driver and install its view (card lock held); act: carry out reconciliation's actions. */
void node_card_refresh(struct accel_node *node, struct node_card *nc, bool act);
/* Rebuild and install the card's view from what it already knows (card lock held): no driver call. */
void node_card_rebuild(struct accel_node *node, struct node_card *nc);
/* Drop the nodes a carve handed to the next build (carved_*), unused. */
void node_card_forget_carved(struct node_card *nc);
/*
 * node_view.c.  Make v the card's view unless it shows nothing new (then
 * the old one stays; v is consumed either way).  A record by job name,
 * (size_t)-1 if none; drop one from memory and disk.
 */
void node_install_view(struct accel_node *node, struct node_card *nc, struct accel_device *v);
/*
 * node_tombs.c.  A GPU instance was destroyed (card lock held): keep its
 * identity (ci MIG_EVENT_NO_INSTANCE: it had no compute instance; uuid ""
 * none) under a new sequence number.  The instance the event names
 * (gi, ci) among those removed after mark (the sequence read before the
 * driver's queue was last seen empty), or NULL; tombs at or before mark are
 * dropped (card lock held).
 */
void node_tomb_add(struct accel_node *node, struct node_card *nc, enum node_tomb_kind kind, unsigned gi, unsigned ci,
                   const char *job, const char *uuid);
const struct node_tomb *node_tomb_find(struct node_card *nc, unsigned gi, unsigned ci, uint64_t mark);
uint64_t node_gone_seq(struct accel_node *node);

/* Install the card's view again as it is, so that its book and holds are laid over it anew (card lock held). */
void node_card_reshow(struct accel_node *node, struct node_card *nc);
/*
 * The job names of the views (node_names.c), view_lock held: a card's view
 * replaced (old, cur: either may be NULL), a name looked up, all freed.
 */
void node_names_swap(struct accel_node *node, const struct accel_device *old, const struct accel_device *cur);
bool node_names_taken(struct accel_node *node, const char *job);
void node_names_free(struct accel_node *node);
/*
 * A new job's name, for a mkdir or an adoption, checked once: the rule and
 * the tree's own names (accel_new_job_name_check: -EINVAL, -ENAMETOOLONG,
 * -EEXIST), the layouts'
 * prefix, which a job has exactly when layout says it is a layout's
 * (-EINVAL); then the topology read-held and the name reserved, since job
 * names are unique on the node (the node-level mig/ lists every card's jobs
 * together: -EEXIST when a job or another mkdir in progress has it).  0
 * with both held, or the errno with why.  node_unclaim_name lets go of
 * both, once the job is in a view or nothing was made.  Reserving takes
 * names_lock, then view_lock.
 */
int node_claim_name(struct accel_node *node, const char *job, bool layout, char *why, size_t whylen);
void node_unclaim_name(struct accel_node *node, const char *job);
/*
 * Quotas (quota_check.c).  Read <state-dir>/quota at start (0, or -errno
 * with err saying what to do); free.  Hold what a carve of job will cost
 * (the card's lock held: the profile and its slices are known), waiting
 * while only carves in progress stand in the way: 0, -EDQUOT (why names
 * the principal, the limit and the use), -ENOMEM.  Let the hold go once
 * the card's view shows the job, or the carve failed.
 */
int node_quota_load(struct accel_node *node, char *err, size_t errlen);
void node_quota_free(struct accel_node *node);
int node_quota_hold(struct accel_node *node, const char *job, uid_t uid, gid_t gid, const char *profile,
                    unsigned slices, char *why, size_t whylen);
void node_quota_release(struct accel_node *node, const char *job);
size_t node_find_record(const struct node_card *nc, const char *job);
/* The card's inventory kept by what carves answer: the instance a carve made added, a destroyed one dropped. */
struct accel_carve_result;
int node_remember_carved(struct node_card *nc, const struct accel_profile *p, const struct accel_carve_result *res);
void node_forget_gi(struct node_card *nc, unsigned gi);
/*
 * Intents (core/state/intent.h), on disk and in memory: add one (durably, before
 * the driver is asked), drop one by its job and start (durable: the unlink synced too;
 * a spent intent seen again after a crash names nothing and is dropped again).
 */
int node_add_intent(struct accel_node *node, struct node_card *nc, const struct accel_intent *in, char *why,
                    size_t whylen);
/* The intent of a carve of job, written before the driver is asked for the instance (no gi or uuid yet). */
int node_intend(struct accel_node *node, struct node_card *nc, const char *job, unsigned profile_id,
                struct accel_span placement, char *why, size_t whylen);
void node_drop_intent(struct accel_node *node, struct node_card *nc, const char *job, unsigned start, bool durable);
/*
 * node_unowned.c: the card's foreign policy as kept in the state directory
 * (load at open, store durably: default removes the file), and what it is
 * now; the spent intents of a reconciliation dropped; a foreign instance
 * destroyed as an action asks (logged at notice with what it was): 1 if it
 * was, else 0.
 */
void node_foreign_load(struct accel_node *node, struct node_card *nc);
int node_foreign_store(struct accel_node *node, struct node_card *nc, enum node_foreign_policy p, char *why,
                       size_t whylen);
bool node_foreign_reclaim(const struct accel_node *node, const struct node_card *nc);
void node_drop_spent_intents(struct accel_node *node, struct node_card *nc, const struct accel_reconcile_out *rec);
int node_reclaim_foreign(struct accel_node *node, struct node_card *nc, const struct accel_card *once,
                         const struct accel_action *act, const char *profile);
int node_drop_record(struct accel_node *node, struct node_card *nc, size_t i, char *why, size_t whylen);
/* A job's name and identity (ids, placement, UUID, owner, creation) from its record; the rest zero. */
void node_job_from_record(struct accel_job *j, const struct accel_record *r);
/*
 * What mkdir answers with: job as its record on nc says, which is what the
 * carve produced, shown in profile (the published name) and ready; out is
 * left alone when nc has no record of job.
 */
void node_job_as_recorded(const struct node_card *nc, const char *job, const char *profile, struct accel_job *out);
/* v's jobs from nc's records, lost (or removing), their reason "<card> <why>"; -ENOMEM (v cleared, logged). */
int node_view_record_jobs(const struct node_card *nc, struct accel_device *v, const char *why);
/* An absent card's view, from its records: its jobs lost (or removing), nothing to carve. */
void node_absent_rebuild(struct accel_node *node, struct node_card *nc);
/* rmdir on an absent card: drop record i (nothing can be destroyed there), log it, show the rest. */
int node_absent_forget(struct accel_node *node, struct node_card *nc, size_t i, char *why, size_t whylen);

#endif
