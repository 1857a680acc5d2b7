/* SPDX-License-Identifier: MIT */
/*
 * What the files of dies/ say (docs/dies.md): slot, lease_ms, and each
 * die's info, enabled, driver and policy.  Generated at every read: the
 * slot moves without the snapshot knowing.  Each text is drawn from one
 * status of the slot, every die and this mount's holders, taken at one
 * instant (fs_dies_status), as node.json's and metrics' dies are.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/proc_files.h"
#include "fs/dies_internal.h"
#include "fs/text.h"
#include "fs/tree.h"

/* A die's lend state in the tree's words ("none" also for a value the library does not name). */
static const char *lend_state(uint32_t state)
{
	const char *word = bs_lend_state_name(state);

	return word ? word : "none";
}

/* ---- one instant ------------------------------------------------------------- */

int fs_dies_status(const struct fs_dies *cd, struct fs_dies_status **out)
{
	/* The handles' lock is the mount's own, taken to read: a status changes nothing. */
	struct fs_dies *d = (struct fs_dies *)cd;
	struct fs_dies_status *st;
	int ret;

	*out = NULL;
	if (!d)
		return -ENOENT;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->backend = d->backend;
	/*
	 * The handles, then the arbiter inside (nothing holds the arbiter's lock
	 * and then takes d->lock): a handle holds the slot when its hold is the
	 * arbiter's current one.  One the arbiter granted but whose open is not
	 * answered yet, or revoked but not yet told so, is no holder.
	 */
	pthread_mutex_lock(&d->lock);
	ret = bs_arb_view(d->arb, &st->v);
	for (struct fs_vram *h = d->handles.next; !ret && h != &d->handles; h = h->next) {
		if (h->held && !h->revoked && st->v.stats.active >= 0 && h->die == (uint32_t)st->v.stats.active &&
		    h->epoch == st->v.stats.epoch) {
			if (st->n_held < FS_DIES_LISTED)
				st->held[st->n_held++] = (struct fs_dies_opener){ h->opener, h->die };
			st->holders++;
		}
		if (h->lender && st->n_lenders < FS_DIES_LISTED)
			st->lenders[st->n_lenders++] = (struct fs_dies_opener){ h->opener, h->die };
	}
	pthread_mutex_unlock(&d->lock);
	if (ret) {
		free(st);
		return ret;
	}
	st->wait_limit_ms = d->wait_limit_ms; /* set before the mount served: no lock */
	if (st->v.lease_err) {                /* a module without leases */
		memset(&st->v.lease, 0, sizeof(st->v.lease));
		st->v.lease.lent_die = -1;
		st->v.lease.lease_left_ms = -1;
	}
	/* /proc is read outside the locks: the opener was a thread id, shown as its process. */
	for (unsigned i = 0; i < st->n_held; i++)
		st->held[i].pid = accel_proc_tgid(st->held[i].pid);
	for (unsigned i = 0; i < st->n_lenders; i++)
		st->lenders[i].pid = accel_proc_tgid(st->lenders[i].pid);
	for (unsigned i = 0; i < st->v.n_waiters; i++)
		st->v.waiters[i].pid = accel_proc_tgid(st->v.waiters[i].pid);
	*out = st;
	return 0;
}

/* ---- its fingerprint ------------------------------------------------------- */

/* FNV-1a, 64-bit, over one value's bytes. */
static void fold(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		*h ^= b[i];
		*h *= 0x100000001b3ull;
	}
}

#define FOLD(h, v)                                                                                                     \
	do {                                                                                                           \
		__typeof__(v) fold_v_ = (v);                                                                           \
		fold((h), &fold_v_, sizeof(fold_v_));                                                                  \
	} while (0)

static void fold_str(uint64_t *h, const char *s, size_t max)
{
	fold(h, s, strnlen(s, max));
	FOLD(h, (char)0);
}

uint64_t fs_dies_fingerprint(const struct fs_dies_status *st, uint64_t seed)
{
	const struct bs_arb_view *v = &st->v;
	uint64_t h = 0xcbf29ce484222325ull;

	FOLD(&h, seed);
	FOLD(&h, v->slot.num_dies);
	FOLD(&h, v->slot.num_slots);
	FOLD(&h, v->slot.active_die);
	FOLD(&h, v->slot.owner_pid);
	FOLD(&h, v->slot.waiters);
	FOLD(&h, v->slot.open_files);
	FOLD(&h, v->slot.swaps);
	FOLD(&h, v->slot.slot_size);
	FOLD(&h, v->slot.owner);
	FOLD(&h, v->slot.revoked);
	FOLD(&h, v->lease_err);
	FOLD(&h, v->lease.lease_ms);
	FOLD(&h, v->lease.lease_left_ms >= 0); /* whether it runs, not what is left */
	FOLD(&h, v->lease.lent_die);
	FOLD(&h, v->lease.lend_state);
	FOLD(&h, v->lease.lender_pid);
	FOLD(&h, v->lease.slot_flags);
	FOLD(&h, v->lease.revoked_by_lease);
	fold_str(&h, v->lease.lent_driver, sizeof(v->lease.lent_driver));
	FOLD(&h, v->stats.active);
	FOLD(&h, v->stats.holders);
	FOLD(&h, v->stats.waiters);
	FOLD(&h, v->stats.acquiring);
	FOLD(&h, v->stats.grants);
	FOLD(&h, v->stats.lent);
	FOLD(&h, v->stats.returning);
	FOLD(&h, v->stats.expired);
	FOLD(&h, v->stats.lease_ms);
	FOLD(&h, v->stats.lease_left_ms >= 0);
	FOLD(&h, v->stats.revocations);
	FOLD(&h, v->stats.epoch);
	FOLD(&h, v->n_dies);
	for (unsigned i = 0; i < v->n_dies && i < BS_ARB_VIEW_MAX; i++) {
		const struct bs_arb_die *d = &v->dies[i];

		FOLD(&h, d->info_err);
		FOLD(&h, d->info.die);
		FOLD(&h, d->info.flags);
		FOLD(&h, d->info.vendor);
		FOLD(&h, d->info.device);
		FOLD(&h, d->info.vram_size);
		FOLD(&h, d->info.acquires);
		FOLD(&h, d->info.bar_phys);
		fold_str(&h, d->info.bus_id, sizeof(d->info.bus_id));
		FOLD(&h, d->lend_err);
		FOLD(&h, d->lend.die);
		FOLD(&h, d->lend.policy);
		FOLD(&h, d->lend.state);
		FOLD(&h, d->lend.lender_pid);
		fold_str(&h, d->lend.driver, sizeof(d->lend.driver));
	}
	FOLD(&h, v->n_waiters);
	for (unsigned i = 0; i < v->n_waiters && i < BS_ARB_VIEW_MAX; i++) {
		FOLD(&h, v->waiters[i].pid);
		FOLD(&h, v->waiters[i].die);
	}
	FOLD(&h, v->n_queue);
	for (unsigned i = 0; i < v->n_queue && i < BS_ARB_VIEW_MAX; i++) {
		FOLD(&h, v->queue[i].pid);
		FOLD(&h, v->queue[i].die);
	}
	FOLD(&h, v->settled);
	FOLD(&h, st->holders);
	FOLD(&h, st->wait_limit_ms);
	FOLD(&h, st->n_held);
	for (unsigned i = 0; i < st->n_held && i < FS_DIES_LISTED; i++) {
		FOLD(&h, st->held[i].pid);
		FOLD(&h, st->held[i].die);
	}
	FOLD(&h, st->n_lenders);
	for (unsigned i = 0; i < st->n_lenders && i < FS_DIES_LISTED; i++) {
		FOLD(&h, st->lenders[i].pid);
		FOLD(&h, st->lenders[i].die);
	}
	return h;
}

/*
 * Who lent die: the process of this mount's handle that lent it, else what
 * the slot says (another process, or this daemon for a resident die whose
 * lender is gone).
 */
static pid_t lender_of(const struct fs_dies_status *st, uint32_t die, pid_t slot_says)
{
	for (unsigned i = 0; i < st->n_lenders; i++)
		if (st->lenders[i].die == die)
			return st->lenders[i].pid;
	return slot_says;
}

/* The holders of this mount: one line each, with the lease they have left; "holder: none" when there is none. */
static void holders(struct fs_text *t, const struct fs_dies_status *st, int32_t lease_left)
{
	if (!st->n_held)
		fs_put(t, "holder: none\n");
	for (unsigned i = 0; i < st->n_held; i++) {
		fs_put(t, "holder: pid=%d die=%u", (int)st->held[i].pid, st->held[i].die);
		if (lease_left >= 0)
			fs_put(t, " lease_left_ms=%d\n", lease_left);
		else
			fs_put(t, " lease_left_ms=none\n");
	}
}

/* Whom a lent die's slot waits on, in words an operator can act on ("" when none). */
static void waiting_on(char *buf, size_t len, const struct fs_dies_status *st, pid_t lender)
{
	const bs_lease_info *l = &st->v.lease;
	const struct bs_arb_stats *fs = &st->v.stats;

	buf[0] = '\0';
	if (l->lent_die < 0)
		return;
	if (l->lend_state == BS_LEND_RETURNING || l->lend_state == BS_LEND_LENDING)
		snprintf(buf, len, "%s to let go of die %d (%s for %u ms%s)", l->lent_driver, l->lent_die,
		         lend_state(l->lend_state), l->returning_ms,
		         (l->slot_flags & BS_SLOT_EXPIRED) || fs->expired
		                 ? "; the lease ran out, but a lease never takes a die from its driver"
		                 : "");
	else if (fs->returning)
		snprintf(buf, len, "%s to let go of die %d (asked back%s)", l->lent_driver, l->lent_die,
		         fs->expired ? " because the lease ran out; a lease never takes a die from its driver" : "");
	else
		snprintf(buf, len,
		         "pid %d, the lender (its last close of dies/%d/vram, or writing bar_swap to "
		         "dies/%d/driver, returns the die)",
		         (int)lender, l->lent_die, l->lent_die);
}

void fs_dies_slot_words(const struct fs_dies_status *st, struct fs_dies_slot_words *w)
{
	const struct bs_arb_stats *fs = &st->v.stats;
	const bs_lease_info *lease = &st->v.lease;
	pid_t lender;

	memset(w, 0, sizeof(*w));
	/* Our holders' lease: the arbiter's among our waiters, the slot's among other processes'. */
	w->holders_lease_left_ms = fs->lease_left_ms;
	if (fs->active >= 0 && lease->lease_left_ms >= 0 &&
	    (w->holders_lease_left_ms < 0 || lease->lease_left_ms < w->holders_lease_left_ms))
		w->holders_lease_left_ms = lease->lease_left_ms;
	w->lease_ms = lease->lease_ms;
	w->lease_left_ms = fs->active >= 0 ? w->holders_lease_left_ms : lease->lease_left_ms;
	if (w->lease_left_ms < 0)
		w->lease_left_ms = -1;
	lender = lease->lent_die >= 0 ? lender_of(st, (uint32_t)lease->lent_die, lease->lender_pid) : 0;
	if (lease->lent_die >= 0) {
		const struct bs_arb_die *ld =
			(uint32_t)lease->lent_die < st->v.n_dies ? &st->v.dies[lease->lent_die] : NULL;
		bool resident = ld && !ld->lend_err && ld->lend.policy == BS_POLICY_RESIDENT;
		snprintf(w->lent, sizeof(w->lent), "die %d to %s by pid %d (%s, %s)", lease->lent_die,
		         lease->lent_driver, (int)lender, lend_state(lease->lend_state),
		         resident ? "resident" : "pinned");
	}
	waiting_on(w->waiting_on, sizeof(w->waiting_on), st, lender);
}

static void put_slot(struct fs_text *t, const struct fs_dies_status *st)
{
	const bs_status *slot = &st->v.slot;
	struct fs_dies_slot_words w;

	fs_dies_slot_words(st, &w);
	if (slot->active_die >= 0)
		fs_put(t, "active: %d\n", slot->active_die);
	else
		fs_put(t, "active: none\n");
	fs_put(t, "holders: %u\n", st->holders);
	fs_put(t, "waiters: %u\n", st->v.n_waiters);
	fs_put(t, "swaps: %llu\n", (unsigned long long)slot->swaps);
	fs_put(t, "owner: %s\n", fs_dies_owner(st));
	fs_put(t, "owner_pid: %d\n", slot->owner_pid);
	fs_put(t, "lease_ms: %u\n", w.lease_ms);
	if (w.lease_left_ms >= 0)
		fs_put(t, "lease_left_ms: %d\n", w.lease_left_ms);
	else
		fs_put(t, "lease_left_ms: none\n");
	fs_put(t, "lent: %s\n", w.lent[0] ? w.lent : "none");
	fs_put(t, "waiting_on: %s\n", w.waiting_on[0] ? w.waiting_on : "none");
	fs_put(t, "wait_limit_ms: %u\n", st->wait_limit_ms);
	holders(t, st, w.holders_lease_left_ms);
	for (unsigned i = 0; i < st->v.n_waiters; i++)
		fs_put(t, "waiter: pid=%d die=%u waited_ms=%llu\n", (int)st->v.waiters[i].pid, st->v.waiters[i].die,
		       (unsigned long long)st->v.waiters[i].waited_ms);
	fs_put(t, "slot_waiters: %u\n", slot->waiters);
	for (unsigned i = 0; i < st->v.n_queue; i++)
		fs_put(t, "slot_waiter: pid=%d die=%u waited_ms=%llu\n", st->v.queue[i].pid, st->v.queue[i].die,
		       (unsigned long long)(st->v.queue[i].waited_ns / 1000000));
	fs_put(t, "slot_open_files: %u\n", slot->open_files);
	fs_put(t, "slot_size: %llu\n", (unsigned long long)slot->slot_size);
	fs_put(t, "dies: %u\n", slot->num_dies);
	fs_put(t, "backend: %s\n", st->backend);
}

/* Who holds die in the slot: this mount's holders by pid, or another process ("" when not in the slot). */
static void held_by(char *buf, size_t len, const struct fs_dies_status *st, uint32_t die)
{
	unsigned n = 0;
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < st->n_held && at < len; i++)
		if (st->held[i].die == die && ++n)
			at += (size_t)snprintf(buf + at, len - at, "%spid %d", n > 1 ? " " : "", (int)st->held[i].pid);
	if (!n)
		snprintf(buf, len, "pid %d", st->v.slot.owner_pid);
	else if (at < len)
		snprintf(buf + at, len - at, " (through accelfs)");
}

/* What the slot says of die, a module without lending read as bound to bar_swap, pinned: 0, or -errno. */
static int die_of(const struct fs_dies_status *st, uint32_t die, const bs_die_info **info, bs_die_lend *l)
{
	if (die >= st->v.n_dies)
		return -EINVAL;
	if (st->v.dies[die].info_err)
		return st->v.dies[die].info_err;
	*info = &st->v.dies[die].info;
	*l = st->v.dies[die].lend;
	if (st->v.dies[die].lend_err) {
		memset(l, 0, sizeof(*l));
		snprintf(l->driver, sizeof(l->driver), "%s", (*info)->flags & BS_DIE_PRESENT ? "bar_swap" : "");
	}
	return 0;
}

static void put_enabled(struct fs_text *t, const bs_die_info *info, const bs_die_lend *l)
{
	(void)l;
	fs_put(t, "%d\n", !!(info->flags & BS_DIE_ENABLED));
}

static void put_driver(struct fs_text *t, const bs_die_info *info, const bs_die_lend *l)
{
	(void)info;
	fs_put(t, "%s\n", l->driver);
}

static void put_policy(struct fs_text *t, const bs_die_info *info, const bs_die_lend *l)
{
	(void)info;
	fs_put(t, "%s\n", l->policy == BS_POLICY_RESIDENT ? "resident" : "pinned");
}

int fs_die_words(const struct fs_dies_status *st, uint32_t die, struct fs_die_words *w)
{
	const bs_die_info *info;
	int ret;

	memset(w, 0, sizeof(*w));
	ret = die_of(st, die, &info, &w->lend);
	if (ret)
		return ret;
	w->state = w->lend.state != BS_LEND_NONE   ? lend_state(w->lend.state)
	           : (info->flags & BS_DIE_ACTIVE) ? "held"
	                                           : "parked";
	w->policy = w->lend.policy == BS_POLICY_RESIDENT ? "resident" : "pinned";
	if (info->flags & BS_DIE_ACTIVE)
		held_by(w->held_by, sizeof(w->held_by), st, die);
	w->lender_pid = w->lend.state != BS_LEND_NONE ? lender_of(st, die, w->lend.lender_pid) : 0;
	return 0;
}

static int put_info(struct fs_text *t, const struct fs_dies_status *st, uint32_t die)
{
	const bs_die_info *info;
	struct fs_die_words w;
	int ret = fs_die_words(st, die, &w);

	if (ret)
		return ret;
	info = &st->v.dies[die].info;
	fs_put(t, "die: %u\n", info->die);
	fs_put(t, "bus_id: %s\n", info->bus_id);
	fs_put(t, "vram_bytes: %llu\n", (unsigned long long)info->vram_size);
	fs_put(t, "enabled: %d\n", !!(info->flags & BS_DIE_ENABLED));
	fs_put(t, "present: %d\n", !!(info->flags & BS_DIE_PRESENT));
	fs_put(t, "active: %d\n", !!(info->flags & BS_DIE_ACTIVE));
	fs_put(t, "state: %s\n", w.state);
	if (w.held_by[0])
		fs_put(t, "held_by: %s\n", w.held_by);
	fs_put(t, "driver: %s\n", w.lend.driver);
	if (w.lend.state != BS_LEND_NONE) {
		fs_put(t, "lent_to: %s\n", w.lend.driver);
		fs_put(t, "lender_pid: %d\n", (int)w.lender_pid);
	}
	fs_put(t, "policy: %s\n", w.policy);
	fs_put(t, "acquires: %llu\n", (unsigned long long)info->acquires);
	if (info->flags & BS_DIE_SIM)
		fs_put(t, "pci_id: none (simulated)\n");
	else
		fs_put(t, "pci_id: %04x:%04x\n", info->vendor, info->device);
	if (info->bar_phys)
		fs_put(t, "bar_phys: 0x%llx\n", (unsigned long long)info->bar_phys);
	return 0;
}

const char *fs_dies_owner(const struct fs_dies_status *st)
{
	return st->v.stats.active >= 0                              ? "accelfs"
	       : st->v.slot.active_die >= 0 && st->v.slot.owner_pid ? "other"
	                                                            : "none";
}

/* One status, one die's text from it. */
static int die_text(struct fs_text *t, const struct fs_node *n,
                    void (*put)(struct fs_text *t, const bs_die_info *info, const bs_die_lend *l))
{
	struct fs_dies_status *st;
	const bs_die_info *info;
	bs_die_lend l;
	int ret = fs_dies_status(n->mount->dies, &st);

	if (ret)
		return ret;
	ret = die_of(st, n->die, &info, &l);
	if (!ret)
		put(t, info, &l);
	free(st);
	return ret;
}

int fs_dies_slot_text(struct fs_text *t, const struct fs_view *v)
{
	struct fs_dies_status *st;
	int ret = fs_dies_status(v->n->mount->dies, &st);

	if (ret)
		return ret;
	put_slot(t, st);
	free(st);
	return 0;
}

int fs_dies_lease_text(struct fs_text *t, const struct fs_view *v)
{
	struct fs_dies_status *st;
	int ret = fs_dies_status(v->n->mount->dies, &st);

	if (ret)
		return ret;
	fs_put(t, "%u\n", st->v.lease.lease_ms);
	free(st);
	return 0;
}

int fs_die_info_text(struct fs_text *t, const struct fs_view *v)
{
	struct fs_dies_status *st;
	int ret = fs_dies_status(v->n->mount->dies, &st);

	if (ret)
		return ret;
	ret = put_info(t, st, v->n->die);
	free(st);
	return ret;
}

int fs_die_enabled_text(struct fs_text *t, const struct fs_view *v)
{
	return die_text(t, v->n, put_enabled);
}

int fs_die_driver_text(struct fs_text *t, const struct fs_view *v)
{
	return die_text(t, v->n, put_driver);
}

int fs_die_policy_text(struct fs_text *t, const struct fs_view *v)
{
	return die_text(t, v->n, put_policy);
}
