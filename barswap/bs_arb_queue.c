/* SPDX-License-Identifier: MIT */
/*
 * What the arbiter's rounds (bs_arbiter.c) and its lending (bs_arb_lend.c)
 * both build on: the clock, the two FIFOs (holds, returns) and the answers
 * collected under the lock, the lease's clock that a waiter starts, and
 * letting the slot go.  Nothing here calls back into either file.
 */
#include "barswap/bs_arbiter_internal.h"

#include <errno.h>
#include <time.h>

uint64_t arb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct bs_waiter *list_of(struct bs_arbiter *a, const struct bs_waiter *w, unsigned **count)
{
	if (w->kind == BS_WAIT_RETURN) {
		*count = &a->nreturns;
		return &a->returns;
	}
	*count = &a->nwaiters;
	return &a->queue;
}

void arb_enqueue(struct bs_arbiter *a, struct bs_waiter *w)
{
	unsigned *count;
	struct bs_waiter *head = list_of(a, w, &count);

	w->prev = head->prev;
	w->next = head;
	head->prev->next = w;
	head->prev = w;
	w->state = W_QUEUED;
	w->since_ms = arb_now_ms();
	(*count)++;
	if (w->kind == BS_WAIT_HOLD)
		arb_lease_update(a); /* someone waits: the holders' lease runs */
}

void arb_unqueue(struct bs_arbiter *a, struct bs_waiter *w)
{
	unsigned *count;

	list_of(a, w, &count);
	w->prev->next = w->next;
	w->next->prev = w->prev;
	w->next = w->prev = NULL;
	(*count)--;
	if (w->kind == BS_WAIT_HOLD)
		arb_lease_update(a);
}

void arb_answer(struct bs_arbiter *a, struct answers *ans, struct bs_waiter *w, int err)
{
	arb_unqueue(a, w);
	w->state = W_DONE;
	w->result = err;
	w->next = NULL;
	*ans->tail = w;
	ans->tail = &w->next;
}

void arb_note(struct answers *ans, enum bs_arb_event what, uint32_t die, uint64_t epoch, int err, uint32_t ms)
{
	if (ans->nnotes < ARB_MAX_NOTES)
		ans->notes[ans->nnotes++] = (struct bs_arb_note){ what, die, epoch, err, ms };
}

/* ---- the lease's clock: it runs while someone waits for an owned slot ------ */

bool arb_lease_runs(const struct bs_arbiter *a)
{
	return a->lease_ms && a->state == OWNED && a->nwaiters && !a->expired;
}

void arb_lease_update(struct bs_arbiter *a)
{
	bool was = a->contended_since != 0;

	if (!arb_lease_runs(a))
		a->contended_since = 0;
	else if (!was)
		a->contended_since = arb_now_ms();
	if (!was && a->contended_since)
		pthread_cond_signal(&a->kick); /* a deadline now: the thread sleeps until it */
}

int32_t arb_lease_left(struct bs_arbiter *a)
{
	uint64_t deadline, now = arb_now_ms();

	if (!arb_lease_runs(a) || !a->contended_since)
		return -1;
	deadline = a->contended_since + a->lease_ms;
	return deadline > now ? (int32_t)(deadline - now) : 0;
}

/* ---- letting go ------------------------------------------------------------ */

void arb_let_go(struct bs_arbiter *a, struct answers *ans)
{
	pthread_rwlock_wrlock(&a->io);
	bs_slot_release(a->slot); /* whatever its opinion (-ENODEV, -ETIME after a revocation) */
	a->state = IDLE;
	a->holders = 0;
	a->epoch++;
	a->vram = NULL;
	a->lent = a->returning = a->expired = false;
	a->contended_since = 0;
	pthread_rwlock_unlock(&a->io);
	/* A pinned die still lent comes back by itself before the slot moves on. */
	while (a->nreturns)
		arb_answer(a, ans, a->returns.next, 0);
}

void arb_revoke_holds(struct bs_arbiter *a, struct answers *ans, int err)
{
	arb_note(ans, BS_ARB_REVOKED, a->die, a->epoch, err, 0);
	if (err == -ETIME)
		a->revocations++;
	arb_let_go(a, ans);
}
