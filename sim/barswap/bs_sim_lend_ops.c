/* SPDX-License-Identifier: MIT */
/*
 * The simulated slot's LEND, RETURN, SET_POLICY, SET_LEASE and QUEUE, with
 * the module's checks in the module's order (docs/kmod.md), so a caller
 * sees the same errno from either.  Binding is a record in the shared
 * state: the die's driver, policy and lender; there is no device to probe,
 * so a lend never fails with ENXIO here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/barswap/bs_sim_slot.h"

static bool listed(const char names[][BS_DRIVER_LEN], uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n && i < BS_SIM_MAX_DRIVERS; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

int sim_lend(struct bs_slot *bs, uint32_t die, const char *driver)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	struct sim_die *d;
	int ret = 0;

	if (!driver[0] || strlen(driver) >= BS_DRIVER_LEN || !strcmp(driver, "bar_swap"))
		return -EINVAL;
	sim_lock(&s->st);
	sim_reap(&s->st);
	d = die < sh->num_dies ? &sh->dies[die] : NULL;
	if (!listed(sh->lend_drivers, sh->n_lend_drivers, driver))
		ret = -EPERM;
	else if (!d)
		ret = -EINVAL;
	else if (sh->owner != s->id || sh->active != (int32_t)die)
		ret = -EPERM; /* only the owner lends, and only the die in the slot */
	else if (!d->enabled)
		ret = -ENODEV;
	else if (d->lend == BS_LEND_LENT && !strcmp(d->driver, driver))
		d->lender_pid = getpid(); /* a resident die acquired again: the caller lends it now */
	else if (d->lend != BS_LEND_NONE)
		ret = -EBUSY;
	else if (!listed(sh->drivers, sh->n_drivers, driver))
		ret = -ENOENT;
	if (!ret && d->lend == BS_LEND_NONE) {
		d->lend = BS_LEND_LENT;
		snprintf(d->driver, sizeof(d->driver), "%s", driver);
		d->lender_pid = getpid();
	}
	sync_protection(s); /* our window closes: the die's memory is the driver's */
	sim_unlock(&s->st);
	return ret;
}

int sim_return(struct bs_slot *bs, uint32_t die, unsigned flags)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	int ret = 0;

	if (flags & ~BS_NONBLOCK)
		return -EINVAL;
	sim_lock(&s->st);
	sim_reap(&s->st);
	if (die >= sh->num_dies)
		ret = -EINVAL;
	else if (sh->owner != s->id || sh->active != (int32_t)die)
		ret = -EPERM;
	else if (sh->dies[die].lend == BS_LEND_LENT)
		sim_start_return(&s->st, die);
	/* Whoever looks finishes the return once the driver lets go: we look every 100 ms. */
	while (!ret && sh->dies[die].lend == BS_LEND_RETURNING) {
		uint32_t seen = __atomic_load_n(&sh->futex, __ATOMIC_SEQ_CST);
		if (flags & BS_NONBLOCK) {
			ret = -EINPROGRESS;
			break;
		}
		sim_unlock(&s->st);
		ret = sim_wait(&s->st, seen, 0) == -EINTR ? -EINTR : 0;
		sim_lock(&s->st);
		sim_reap(&s->st);
	}
	sync_protection(s); /* back: the owner's window opens again */
	sim_unlock(&s->st);
	return ret;
}

int sim_die_lend(struct bs_slot *bs, uint32_t die, bs_die_lend *out)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	int ret = 0;

	sim_lock(&s->st);
	sim_reap(&s->st);
	if (die >= sh->num_dies) {
		ret = -EINVAL;
	} else {
		const struct sim_die *d = &sh->dies[die];
		memset(out, 0, sizeof(*out));
		out->die = die;
		out->policy = d->policy;
		out->state = d->lend;
		out->lender_pid = d->lend != BS_LEND_NONE ? d->lender_pid : 0;
		snprintf(out->driver, sizeof(out->driver), "%s", d->lend != BS_LEND_NONE ? d->driver : "bar_swap");
	}
	sim_unlock(&s->st);
	return ret;
}

int sim_set_policy(struct bs_slot *bs, uint32_t die, uint32_t policy)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	int ret = 0;

	if (!has_cap_sys_admin())
		return -EPERM; /* as the module */
	if (policy > BS_POLICY_RESIDENT)
		return -EINVAL;
	sim_lock(&s->st);
	if (die >= sh->num_dies)
		ret = -EINVAL;
	else if (sh->dies[die].lend != BS_LEND_NONE)
		ret = -EBUSY;
	else
		sh->dies[die].policy = policy;
	sim_unlock(&s->st);
	return ret;
}

int sim_set_lease(struct bs_slot *bs, uint32_t lease_ms)
{
	struct sim_slot *s = S(bs);

	if (!has_cap_sys_admin())
		return -EPERM;
	sim_lock(&s->st);
	s->st.sh->lease_ms = lease_ms;
	s->st.sh->contended_since = 0; /* a new lease counts from now */
	sim_lease_update(&s->st);
	sim_wake(&s->st); /* waiters look again, against the new deadline */
	sim_unlock(&s->st);
	return 0;
}

int sim_lease(struct bs_slot *bs, bs_lease_info *out)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	struct sim_handle *me;

	sim_lock(&s->st);
	sim_reap(&s->st);
	me = sim_handle_rec(&s->st, s->id);
	memset(out, 0, sizeof(*out));
	out->lease_ms = sh->lease_ms;
	out->lease_left_ms = sim_lease_left(sh);
	out->lent_die = -1;
	if (sh->active >= 0 && sh->dies[sh->active].lend != BS_LEND_NONE) {
		const struct sim_die *d = &sh->dies[sh->active];
		out->lent_die = sh->active;
		out->lend_state = d->lend;
		out->lender_pid = d->lender_pid;
		snprintf(out->lent_driver, sizeof(out->lent_driver), "%s", d->driver);
	}
	if (sh->returning >= 0)
		out->returning_ms = (uint32_t)(sim_now_ms() - sh->return_start);
	out->slot_flags = (sh->expired ? BS_SLOT_EXPIRED : 0) | (sh->leaving ? BS_SLOT_LEAVING : 0);
	out->revoked_by_lease = me && me->revoked == ETIME;
	sync_protection(s);
	sim_unlock(&s->st);
	return 0;
}

int sim_queue(struct bs_slot *bs, bs_queue_entry *out, uint32_t max, uint32_t *total)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	uint64_t now = sim_now_ms();
	uint32_t n = 0;

	sim_lock(&s->st);
	sim_reap(&s->st);
	sim_count_handles(&s->st); /* dead waiters leave the queue first */
	for (; n < sh->nqueue && n < max; n++) {
		out[n].pid = sh->queue[n].pid;
		out[n].die = sh->queue[n].die;
		out[n].waited_ns = (now - sh->queue[n].since_ms) * 1000000ull;
	}
	if (total)
		*total = sh->nqueue;
	sim_unlock(&s->st);
	return (int)n;
}
