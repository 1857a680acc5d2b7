/* SPDX-License-Identifier: MIT */
/*
 * What the files of dies/ say (docs/dies.md): slot, lease_ms, and each
 * die's info, enabled, driver and policy.  Generated at every read: the
 * slot moves without the snapshot knowing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barswap/fd_probe.h"
#include "fs/dies_internal.h"
#include "fs/tree.h"

#define MAX_LISTED 64

static const char *lend_state(uint32_t state)
{
	switch (state) {
	case BS_LEND_LENDING:
		return "lending";
	case BS_LEND_LENT:
		return "lent";
	case BS_LEND_RETURNING:
		return "returning";
	default:
		return "none";
	}
}

/*
 * Who lent die: the process of this mount's handle that lent it, else what
 * the slot says (another process, or this daemon for a resident die whose
 * lender is gone).
 */
static pid_t lender_of(struct fs_dies *d, uint32_t die, pid_t slot_says)
{
	pid_t pid = 0;

	pthread_mutex_lock(&d->lock);
	for (struct fs_vram *h = d->handles.next; h != &d->handles && !pid; h = h->next)
		if (h->die == die && h->lender)
			pid = h->opener;
	pthread_mutex_unlock(&d->lock);
	return pid ? accel_proc_tgid(pid) : slot_says;
}

/* The holders of this mount: one line each, with the lease they have left. */
static void holders(FILE *f, struct fs_dies *d, int32_t lease_left)
{
	struct {
		pid_t pid;
		uint32_t die;
	} list[MAX_LISTED];
	unsigned n = 0;

	pthread_mutex_lock(&d->lock);
	for (struct fs_vram *h = d->handles.next; h != &d->handles && n < MAX_LISTED; h = h->next)
		if (h->held && !h->revoked)
			list[n].pid = h->opener, list[n++].die = h->die;
	pthread_mutex_unlock(&d->lock);
	/* /proc is read outside the lock: the opener was a thread id, shown as its process. */
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "holder: pid=%d die=%u", (int)accel_proc_tgid(list[i].pid), list[i].die);
		if (lease_left >= 0)
			fprintf(f, " lease_left_ms=%d\n", lease_left);
		else
			fprintf(f, " lease_left_ms=none\n");
	}
}

/* Whom a lent die's slot waits on, in words an operator can act on. */
static void waiting_on(FILE *f, const struct fs_dies_status *st, pid_t lender)
{
	const bs_lease_info *l = &st->lease;

	if (l->lent_die < 0) {
		fprintf(f, "waiting_on: none\n");
		return;
	}
	if (l->lend_state == BS_LEND_RETURNING || l->lend_state == BS_LEND_LENDING)
		fprintf(f, "waiting_on: %s to let go of die %d (%s for %u ms%s)\n", l->lent_driver, l->lent_die,
		        lend_state(l->lend_state), l->returning_ms,
		        (l->slot_flags & BS_SLOT_EXPIRED) || st->fs.expired
		                ? "; the lease ran out, but a lease never takes a die from its driver"
		                : "");
	else if (st->fs.returning)
		fprintf(f, "waiting_on: %s to let go of die %d (asked back%s)\n", l->lent_driver, l->lent_die,
		        st->fs.expired ? " because the lease ran out; a lease never takes a die from its driver" : "");
	else
		fprintf(f,
		        "waiting_on: pid %d, the lender (its last close of dies/%d/vram, or writing bar_swap to "
		        "dies/%d/driver, returns the die)\n",
		        (int)lender, l->lent_die, l->lent_die);
}

static int render_slot(FILE *f, struct fs_dies *d)
{
	struct fs_dies_status st;
	struct bs_arb_waiter_info w[MAX_LISTED];
	bs_queue_entry q[MAX_LISTED];
	int32_t lease_left;
	pid_t lender;
	unsigned nw;
	int nq, ret = fs_dies_status(d, &st);

	if (ret)
		return ret;
	/* Our holders' lease: the arbiter's among our waiters, the slot's among other processes'. */
	lease_left = st.fs.lease_left_ms;
	if (st.fs.active >= 0 && st.lease.lease_left_ms >= 0 && (lease_left < 0 || st.lease.lease_left_ms < lease_left))
		lease_left = st.lease.lease_left_ms;
	if (st.slot.active_die >= 0)
		fprintf(f, "active: %d\n", st.slot.active_die);
	else
		fprintf(f, "active: none\n");
	fprintf(f, "holders: %u\n", st.fs.holders);
	fprintf(f, "waiters: %u\n", st.fs.waiters);
	fprintf(f, "swaps: %llu\n", (unsigned long long)st.slot.swaps);
	fprintf(f, "owner: %s\n",
	        st.fs.active >= 0                              ? "accelfs"
	        : st.slot.active_die >= 0 && st.slot.owner_pid ? "other"
	                                                       : "none");
	fprintf(f, "owner_pid: %d\n", st.slot.owner_pid);
	fprintf(f, "lease_ms: %u\n", st.lease.lease_ms);
	if (st.fs.active >= 0 ? lease_left >= 0 : st.lease.lease_left_ms >= 0)
		fprintf(f, "lease_left_ms: %d\n", st.fs.active >= 0 ? lease_left : st.lease.lease_left_ms);
	else
		fprintf(f, "lease_left_ms: none\n");
	lender = st.lease.lent_die >= 0 ? lender_of(d, (uint32_t)st.lease.lent_die, st.lease.lender_pid) : 0;
	if (st.lease.lent_die >= 0) {
		bs_die_lend l;
		bool resident = !bs_slot_die_lend(bs_arb_slot(d->arb), (uint32_t)st.lease.lent_die, &l) &&
		                l.policy == BS_POLICY_RESIDENT;
		fprintf(f, "lent: die %d to %s by pid %d (%s, %s)\n", st.lease.lent_die, st.lease.lent_driver,
		        (int)lender, lend_state(st.lease.lend_state), resident ? "resident" : "pinned");
	} else {
		fprintf(f, "lent: none\n");
	}
	waiting_on(f, &st, lender);
	holders(f, d, lease_left);
	nw = bs_arb_waiters(d->arb, w, MAX_LISTED);
	for (unsigned i = 0; i < nw; i++)
		fprintf(f, "waiter: pid=%d die=%u waited_ms=%llu\n", (int)accel_proc_tgid(w[i].pid), w[i].die,
		        (unsigned long long)w[i].waited_ms);
	fprintf(f, "slot_waiters: %u\n", st.slot.waiters);
	nq = bs_slot_queue(bs_arb_slot(d->arb), q, MAX_LISTED, NULL);
	for (int i = 0; i < nq; i++)
		fprintf(f, "slot_waiter: pid=%d die=%u waited_ms=%llu\n", q[i].pid, q[i].die,
		        (unsigned long long)(q[i].waited_ns / 1000000));
	fprintf(f, "slot_open_files: %u\n", st.slot.open_files);
	fprintf(f, "slot_size: %llu\n", (unsigned long long)st.slot.slot_size);
	fprintf(f, "dies: %u\n", st.slot.num_dies);
	fprintf(f, "backend: %s\n", st.backend);
	return 0;
}

/* Who holds die in the slot: this mount's holders by pid, or another process. */
static void held_by(FILE *f, struct fs_dies *d, uint32_t die, const bs_status *slot)
{
	pid_t pids[MAX_LISTED];
	unsigned n = 0;

	pthread_mutex_lock(&d->lock);
	for (struct fs_vram *h = d->handles.next; h != &d->handles && n < MAX_LISTED; h = h->next)
		if (h->die == die && h->held && !h->revoked)
			pids[n++] = h->opener;
	pthread_mutex_unlock(&d->lock);
	fprintf(f, "held_by:");
	if (!n)
		fprintf(f, " pid %d", slot->owner_pid);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, " pid %d", (int)accel_proc_tgid(pids[i]));
	fprintf(f, n ? " (through accelfs)\n" : "\n");
}

static int render_die(FILE *f, struct fs_dies *d, int kind, uint32_t die)
{
	struct bs_slot *s = bs_arb_slot(d->arb);
	bs_die_info info;
	bs_die_lend l;
	bs_status slot;
	const char *state;
	int ret = bs_slot_die_info(s, die, &info);

	if (ret)
		return ret;
	if (bs_slot_die_lend(s, die, &l)) { /* a module without lending: bound to bar_swap, pinned */
		memset(&l, 0, sizeof(l));
		snprintf(l.driver, sizeof(l.driver), "%s", info.flags & BS_DIE_PRESENT ? "bar_swap" : "");
	}
	if (kind == FS_DIE_ENABLED) {
		fprintf(f, "%d\n", !!(info.flags & BS_DIE_ENABLED));
		return 0;
	}
	if (kind == FS_DIE_DRIVER) {
		fprintf(f, "%s\n", l.driver);
		return 0;
	}
	if (kind == FS_DIE_POLICY) {
		fprintf(f, "%s\n", l.policy == BS_POLICY_RESIDENT ? "resident" : "pinned");
		return 0;
	}
	if (bs_slot_query(s, &slot))
		memset(&slot, 0, sizeof(slot));
	state = l.state != BS_LEND_NONE ? lend_state(l.state) : (info.flags & BS_DIE_ACTIVE) ? "held" : "parked";
	fprintf(f, "die: %u\n", info.die);
	fprintf(f, "bus_id: %s\n", info.bus_id);
	fprintf(f, "vram_bytes: %llu\n", (unsigned long long)info.vram_size);
	fprintf(f, "enabled: %d\n", !!(info.flags & BS_DIE_ENABLED));
	fprintf(f, "present: %d\n", !!(info.flags & BS_DIE_PRESENT));
	fprintf(f, "active: %d\n", !!(info.flags & BS_DIE_ACTIVE));
	fprintf(f, "state: %s\n", state);
	if (info.flags & BS_DIE_ACTIVE)
		held_by(f, d, die, &slot);
	fprintf(f, "driver: %s\n", l.driver);
	if (l.state != BS_LEND_NONE) {
		fprintf(f, "lent_to: %s\n", l.driver);
		fprintf(f, "lender_pid: %d\n", (int)lender_of(d, die, l.lender_pid));
	}
	fprintf(f, "policy: %s\n", l.policy == BS_POLICY_RESIDENT ? "resident" : "pinned");
	fprintf(f, "acquires: %llu\n", (unsigned long long)info.acquires);
	if (info.flags & BS_DIE_SIM)
		fprintf(f, "pci_id: none (simulated)\n");
	else
		fprintf(f, "pci_id: %04x:%04x\n", info.vendor, info.device);
	if (info.bar_phys)
		fprintf(f, "bar_phys: 0x%llx\n", (unsigned long long)info.bar_phys);
	return 0;
}

int fs_dies_render(struct fs_dies *d, int kind, uint32_t die, char **out, size_t *len)
{
	struct fs_dies_status st;
	FILE *f;
	int ret;

	if (!d)
		return -ENOENT;
	*out = NULL;
	f = open_memstream(out, len);
	if (!f)
		return -ENOMEM;
	switch (kind) {
	case FS_DIES_SLOT:
		ret = render_slot(f, d);
		break;
	case FS_DIES_LEASE:
		ret = fs_dies_status(d, &st);
		if (!ret)
			fprintf(f, "%u\n", st.lease.lease_ms);
		break;
	case FS_DIE_INFO:
	case FS_DIE_ENABLED:
	case FS_DIE_DRIVER:
	case FS_DIE_POLICY:
		ret = render_die(f, d, kind, die);
		break;
	default:
		ret = -EISDIR;
	}
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*out);
		*out = NULL;
	}
	return ret;
}
