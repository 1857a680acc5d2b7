/* SPDX-License-Identifier: MIT */
/*
 * The arbiter's lending, returns and lease (bs_arbiter.h).  Everything here
 * runs under the arbiter's lock; what takes time (a driver that will not
 * let go, a lease's deadline) is looked at again by the thread's rounds,
 * arb_tick(), every ARB_POLL_MS while it matters and at the deadline.
 */
#include "barswap/bs_arbiter_internal.h"

#include <errno.h>

void arb_owned_refresh(struct bs_arbiter *a)
{
	bs_die_lend l;
	bs_lease_info li;

	/* Another process may have changed the lease since we last looked. */
	if (!bs_slot_lease(a->slot, &li))
		a->lease_ms = li.lease_ms;
	/* A resident die comes into the slot still bound to its driver. */
	a->lent = !bs_slot_die_lend(a->slot, a->die, &l) && l.state != BS_LEND_NONE;
	a->returning = !bs_slot_die_lend(a->slot, a->die, &l) && l.state == BS_LEND_RETURNING;
	if (a->returning) {
		a->return_since = arb_now_ms();
		a->return_noted = false;
	}
}

int64_t arb_next_wake(struct bs_arbiter *a)
{
	int64_t next = -1;
	int32_t left;

	if (a->state == OWNED && (a->returning || a->lease_ms))
		next = ARB_POLL_MS;
	left = arb_lease_left(a);
	if (left >= 0 && (next < 0 || left < next))
		next = left;
	return next;
}

/* Under lock, OWNED and lent: ask the die back without waiting.  True if it is back now. */
static bool start_return(struct bs_arbiter *a, int *err)
{
	int ret;

	if (a->returning)
		return false;
	pthread_rwlock_wrlock(&a->io);
	ret = bs_slot_return(a->slot, a->die, BS_NONBLOCK);
	if (!ret)
		a->lent = false;
	pthread_rwlock_unlock(&a->io);
	if (ret == -EINPROGRESS) {
		a->returning = true;
		a->return_since = arb_now_ms();
		a->return_noted = false;
		pthread_cond_signal(&a->kick); /* the thread watches it */
		return false;
	}
	*err = ret;
	return !ret;
}

/* The holds' lease ran out.  A pinned lent die comes back first; a lease never takes it from its driver. */
static void expire(struct bs_arbiter *a, struct answers *ans)
{
	bs_die_lend l;
	int err = 0;

	a->contended_since = 0;
	a->expired = true;
	if (a->lent && !bs_slot_die_lend(a->slot, a->die, &l) && l.policy == BS_POLICY_PINNED) {
		if (!start_return(a, &err) && !err) {
			arb_note(ans, BS_ARB_EXPIRED_LENT, a->die, a->epoch, 0, 0);
			return; /* arb_tick() revokes once it is back */
		}
	}
	arb_revoke_holds(a, ans, -ETIME);
}

/* Under lock, OWNED and returning: is the die back? */
static void check_return(struct bs_arbiter *a, struct answers *ans)
{
	uint32_t ms = (uint32_t)(arb_now_ms() - a->return_since);
	bs_die_lend l;
	int ret = bs_slot_die_lend(a->slot, a->die, &l);

	if (!ret && l.state == BS_LEND_RETURNING) {
		if (!a->return_noted && ms >= ARB_RETURN_SLOW_MS) {
			a->return_noted = true;
			arb_note(ans, BS_ARB_RETURN_SLOW, a->die, a->epoch, 0, ms);
		}
		return;
	}
	pthread_rwlock_wrlock(&a->io);
	a->lent = a->returning = false;
	pthread_rwlock_unlock(&a->io);
	arb_note(ans, BS_ARB_RETURNED, a->die, a->epoch, 0, ms);
	while (a->nreturns)
		arb_answer(a, ans, a->returns.next, ret);
	if (a->expired)
		arb_revoke_holds(a, ans, -ETIME);
}

/* Under lock, OWNED: has the slot taken itself back (its own lease, a quarantine elsewhere)? */
static void check_slot(struct bs_arbiter *a, struct answers *ans)
{
	bs_lease_info li;
	bs_status st;

	if (bs_slot_query(a->slot, &st) || (st.owner && !st.revoked && st.active_die == (int32_t)a->die))
		return;
	arb_revoke_holds(a, ans, !bs_slot_lease(a->slot, &li) && li.revoked_by_lease ? -ETIME : -ENODEV);
}

void arb_tick(struct bs_arbiter *a, struct answers *ans)
{
	if (a->state == OWNED && a->returning)
		check_return(a, ans);
	if (a->state == OWNED && (a->lease_ms || a->lent))
		check_slot(a, ans);
	if (arb_lease_runs(a) && a->contended_since && arb_now_ms() >= a->contended_since + a->lease_ms)
		expire(a, ans);
}

int bs_arb_lend(struct bs_arbiter *a, uint32_t die, uint64_t epoch, const char *driver)
{
	int ret;

	pthread_mutex_lock(&a->lock);
	if (a->state != OWNED || a->die != die || a->epoch != epoch || a->expired) {
		ret = -EPERM; /* not a current hold of the die in the slot */
	} else if (a->returning) {
		ret = -EBUSY;
	} else {
		/* No copy runs while the module closes our window onto the die. */
		pthread_rwlock_wrlock(&a->io);
		ret = bs_slot_lend(a->slot, die, driver);
		if (!ret)
			a->lent = true;
		pthread_rwlock_unlock(&a->io);
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int bs_arb_return(struct bs_arbiter *a, uint32_t die, uint64_t epoch, struct bs_waiter *w)
{
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	if (w && w->state == W_CANCELLED) {
		ret = -EINTR; /* interrupted before it could park */
	} else if (a->state != OWNED || a->die != die || a->epoch != epoch) {
		ret = -EPERM;
	} else if (a->lent && !start_return(a, &ret) && !ret) {
		if (w) {
			w->die = die;
			w->kind = BS_WAIT_RETURN;
			arb_enqueue(a, w);
			ret = 1;
		} else {
			ret = -EINPROGRESS;
		}
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int bs_arb_set_lease(struct bs_arbiter *a, uint32_t lease_ms)
{
	int ret;

	pthread_mutex_lock(&a->lock);
	ret = bs_slot_set_lease(a->slot, lease_ms);
	if (!ret) {
		a->lease_ms = lease_ms;
		a->contended_since = 0; /* a new lease counts from now */
		arb_lease_update(a);
		pthread_cond_signal(&a->kick);
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}
