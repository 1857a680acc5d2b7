/* SPDX-License-Identifier: MIT */
/*
 * The arbiter's state machine (states and locks: bs_arbiter_internal.h).
 *
 * arb_settle() brings it back to a consistent state after every change: an
 * owned slot without holders is released, an idle arbiter with waiters asks
 * for the head's die (without blocking; if another process owns the slot,
 * the thread waits instead).  Lending, returns and the lease are in
 * bs_arb_lend.c; its rounds run on the same thread.
 */
#include "barswap/bs_arbiter_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model/timed_wait.h"

/*
 * The signal that takes the thread out of a blocking acquire at shutdown.
 * Its handler does nothing; installed without SA_RESTART, so the wait ends
 * with EINTR.
 */
#define ARB_SIGNAL (SIGRTMIN + 4)

static void on_arb_signal(int sig)
{
	(void)sig;
}

/* Notes first: a revocation marks the caller's handles before any open is answered. */
static void deliver(struct bs_arbiter *a, struct answers *ans)
{
	struct bs_waiter *w = ans->head, *next;

	for (unsigned i = 0; i < ans->nnotes; i++)
		if (a->note)
			a->note(a->ctx, &ans->notes[i]);
	ans->nnotes = 0;
	for (; w; w = next) {
		next = w->next; /* done() may free w */
		a->done(a->ctx, w, w->result);
	}
	ans->head = NULL;
	ans->tail = &ans->head;
}

static void grant_waiters(struct bs_arbiter *a, uint32_t die, struct answers *ans)
{
	for (struct bs_waiter *w = a->queue.next, *next; w != &a->queue; w = next) {
		next = w->next;
		if (w->die != die)
			continue;
		w->epoch = a->epoch;
		a->holders++;
		arb_answer(a, ans, w, 0);
	}
}

static void fail_waiters(struct bs_arbiter *a, uint32_t die, int err, struct answers *ans)
{
	for (struct bs_waiter *w = a->queue.next, *next; w != &a->queue; w = next) {
		next = w->next;
		if (w->die == die)
			arb_answer(a, ans, w, err);
	}
}

/* ---- moving the slot ------------------------------------------------------- */

/* Under lock and io (write): now owning die at vram. */
static void set_owned(struct bs_arbiter *a, uint32_t die, void *vram)
{
	a->state = OWNED;
	a->die = die;
	a->vram = vram;
	a->epoch++;
	a->grants++;
	a->expired = a->returning = false;
	a->contended_since = 0;
	arb_owned_refresh(a);
	arb_lease_update(a);
}

/* Under lock: acquire die through the handle (non-blocking), then grant every waiter of die. */
static int take(struct bs_arbiter *a, uint32_t die, struct answers *ans)
{
	void *vram = NULL;
	int ret;

	pthread_rwlock_wrlock(&a->io);
	ret = bs_slot_acquire(a->slot, die, BS_NONBLOCK, 0, NULL);
	if (!ret) {
		ret = bs_slot_window(a->slot, die, &vram);
		if (ret)
			bs_slot_release(a->slot);
	}
	if (!ret)
		set_owned(a, die, vram);
	pthread_rwlock_unlock(&a->io);
	if (!ret)
		grant_waiters(a, die, ans);
	return ret;
}

void arb_settle(struct bs_arbiter *a, struct answers *ans)
{
	for (;;) {
		uint32_t head;
		int ret;

		if (a->state == OWNED && !a->holders)
			arb_let_go(a, ans); /* other processes queued on the slot get their turn */
		if (a->state != IDLE || !a->nwaiters)
			return;
		head = a->queue.next->die;
		ret = take(a, head, ans);
		if (ret == -EAGAIN) {
			a->state = ACQUIRING;
			a->die = head;
			pthread_cond_signal(&a->kick);
			return;
		}
		if (ret)
			fail_waiters(a, head, ret, ans);
	}
}

/* ---- the thread ------------------------------------------------------------- */

/* Under lock, not ACQUIRING: sleep until kicked or the next round is due. */
static void wait_for_work(struct bs_arbiter *a)
{
	int64_t ms = arb_next_wake(a);
	struct timespec ts;

	if (ms < 0) {
		pthread_cond_wait(&a->kick, &a->lock);
		return;
	}
	ts = accel_deadline_in_ms(ms);
	pthread_cond_timedwait(&a->kick, &a->lock, &ts);
}

/* The slot came (or did not) to the thread waiting for it. */
static void acquired(struct bs_arbiter *a, uint32_t die, void *vram, int ret, struct answers *ans)
{
	if (!ret) {
		pthread_rwlock_wrlock(&a->io);
		set_owned(a, die, vram);
		pthread_rwlock_unlock(&a->io);
		grant_waiters(a, die, ans); /* perhaps none: the head gave up meanwhile */
	} else {
		a->state = IDLE;
		fail_waiters(a, die, ret, ans);
	}
}

/* Waits for the slot when another process owns it, and runs the rounds of bs_arb_lend.c. */
static void *acquirer(void *arg)
{
	struct bs_arbiter *a = arg;
	sigset_t only;

	/* Only our signal may interrupt the wait: a stray one would cost the place in the FIFO. */
	sigfillset(&only);
	sigdelset(&only, ARB_SIGNAL);
	pthread_sigmask(SIG_SETMASK, &only, NULL);
	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		ANSWERS(ans);
		uint32_t die;
		void *vram = NULL;
		int ret;

		if (a->state != ACQUIRING) {
			wait_for_work(a);
			if (a->stop)
				break;
			arb_tick(a, &ans);
		} else {
			die = a->die;
			a->in_slot = true;
			pthread_mutex_unlock(&a->lock);
			ret = bs_slot_acquire(a->slot, die, 0, 0, NULL);
			if (!ret) {
				ret = bs_slot_window(a->slot, die, &vram);
				if (ret)
					bs_slot_release(a->slot);
			}
			pthread_mutex_lock(&a->lock);
			a->in_slot = false;
			if (a->stop) {
				if (!ret)
					bs_slot_release(a->slot);
				break;
			}
			if (ret == -EINTR)
				continue; /* still ACQUIRING: ask again */
			acquired(a, die, vram, ret, &ans);
		}
		arb_settle(a, &ans);
		pthread_mutex_unlock(&a->lock);
		deliver(a, &ans);
		pthread_mutex_lock(&a->lock);
	}
	a->running = false;
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* ---- the API --------------------------------------------------------------- */

struct bs_arbiter *bs_arb_new(struct bs_slot *slot, bs_arb_done_fn done, bs_arb_note_fn note, void *ctx, int *err)
{
	struct bs_arbiter *a = calloc(1, sizeof(*a));
	struct sigaction sa;
	bs_lease_info li;

	if (!a) {
		*err = -ENOMEM;
		return NULL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_arb_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(ARB_SIGNAL, &sa, NULL);
	a->slot = slot;
	a->done = done;
	a->note = note;
	a->ctx = ctx;
	a->queue.next = a->queue.prev = &a->queue;
	a->returns.next = a->returns.prev = &a->returns;
	/* A module without leases (-EPROTO) has none: 0. */
	a->lease_ms = bs_slot_lease(slot, &li) ? 0 : li.lease_ms;
	pthread_mutex_init(&a->lock, NULL);
	pthread_rwlock_init(&a->io, NULL);
	accel_cond_init_monotonic(&a->kick);
	a->running = true;
	*err = -pthread_create(&a->thread, NULL, acquirer, a);
	if (*err) {
		pthread_cond_destroy(&a->kick);
		pthread_rwlock_destroy(&a->io);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return NULL;
	}
	pthread_setname_np(a->thread, "dies-arbiter");
	return a;
}

void bs_arb_free(struct bs_arbiter *a)
{
	ANSWERS(ans);

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->kick);
	/* Signal until it is out: the first one may land just before it enters the wait. */
	while (a->running) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		if (a->in_slot)
			pthread_kill(a->thread, ARB_SIGNAL);
		pthread_mutex_unlock(&a->lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&a->lock);
	}
	while (a->nwaiters)
		arb_answer(a, &ans, a->queue.next, -ESHUTDOWN);
	while (a->nreturns)
		arb_answer(a, &ans, a->returns.next, -ESHUTDOWN);
	if (a->state == OWNED)
		arb_let_go(a, &ans);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	deliver(a, &ans);
	bs_slot_close(a->slot);
	pthread_cond_destroy(&a->kick);
	pthread_rwlock_destroy(&a->io);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* Under lock: can die be held at all? */
static int usable(struct bs_arbiter *a, uint32_t die)
{
	bs_die_info d;
	int ret = bs_slot_die_info(a->slot, die, &d);

	if (ret)
		return ret;
	return (d.flags & BS_DIE_PRESENT) && (d.flags & BS_DIE_ENABLED) ? 0 : -ENODEV;
}

int bs_arb_hold(struct bs_arbiter *a, struct bs_waiter *w, uint32_t die, bool nonblock)
{
	ANSWERS(ans);
	int ret;

	pthread_mutex_lock(&a->lock);
	w->die = die;
	w->kind = BS_WAIT_HOLD;
	if (w->state == W_CANCELLED) {
		ret = -EINTR;
		goto out;
	}
	ret = usable(a, die);
	if (ret)
		goto out;
	if (a->state == OWNED && a->die == die && !a->expired) {
		ret = 0; /* openers of one die share the slot (not one whose lease ran out) */
	} else if (a->state == IDLE && !a->nwaiters) {
		ret = take(a, die, &ans);
		if (ret == -EAGAIN && !nonblock) {
			/* Another process owns the slot: wait in its FIFO on our thread. */
			arb_enqueue(a, w);
			a->state = ACQUIRING;
			a->die = die;
			pthread_cond_signal(&a->kick);
			ret = 1;
		}
	} else if (nonblock) {
		ret = -EAGAIN;
	} else {
		arb_enqueue(a, w);
		ret = 1;
	}
	if (!ret) {
		a->holders++;
		w->epoch = a->epoch;
		w->state = W_DONE;
	}
out:
	/* Nothing else touches w once it is parked: another thread may answer and free it. */
	pthread_mutex_unlock(&a->lock);
	deliver(a, &ans);
	return ret;
}

bool bs_arb_cancel(struct bs_arbiter *a, struct bs_waiter *w)
{
	bool was_parked = false;

	pthread_mutex_lock(&a->lock);
	if (w->state == W_QUEUED) {
		arb_unqueue(a, w);
		was_parked = true;
		w->state = W_CANCELLED;
		/* If the thread is waiting for this waiter's die, it finishes and settle() lets go. */
	} else if (w->state == W_NEW) {
		w->state = W_CANCELLED;
	}
	pthread_mutex_unlock(&a->lock);
	return was_parked;
}

void bs_arb_drop(struct bs_arbiter *a, uint32_t die, uint64_t epoch)
{
	ANSWERS(ans);

	pthread_mutex_lock(&a->lock);
	if (a->state == OWNED && a->die == die && a->epoch == epoch && a->holders) {
		a->holders--;
		arb_settle(a, &ans);
	}
	pthread_mutex_unlock(&a->lock);
	deliver(a, &ans);
}

int bs_arb_set_enabled(struct bs_arbiter *a, uint32_t die, bool enabled)
{
	ANSWERS(ans);
	int ret;

	pthread_mutex_lock(&a->lock);
	ret = bs_slot_set_enabled(a->slot, die, enabled);
	if (!ret && !enabled) {
		fail_waiters(a, die, -ENODEV, &ans);
		if (a->state == OWNED && a->die == die)
			arb_revoke_holds(a, &ans, -ENODEV);
		arb_settle(a, &ans);
	}
	pthread_mutex_unlock(&a->lock);
	deliver(a, &ans);
	return ret;
}

int bs_arb_io_begin(struct bs_arbiter *a, uint32_t die, uint64_t epoch, void **vram)
{
	pthread_rwlock_rdlock(&a->io);
	/* state, die, epoch, vram and lent change only under io held for writing */
	if (a->state == OWNED && a->die == die && a->epoch == epoch) {
		if (a->lent) {
			pthread_rwlock_unlock(&a->io);
			return -EBUSY; /* the die's memory is its driver's while lent */
		}
		*vram = a->vram;
		return 0;
	}
	pthread_rwlock_unlock(&a->io);
	return -ENODEV;
}

void bs_arb_io_end(struct bs_arbiter *a)
{
	pthread_rwlock_unlock(&a->io);
}

int bs_arb_io_fault(struct bs_arbiter *a, uint32_t die, uint64_t epoch)
{
	ANSWERS(ans);
	bs_status st;
	bs_lease_info li;
	int ret = -EIO;

	pthread_mutex_lock(&a->lock);
	if (a->state == OWNED && a->die == die && a->epoch == epoch && !bs_slot_query(a->slot, &st) &&
	    (!st.owner || st.revoked || st.active_die != (int32_t)die)) {
		/* Taken back by the slot: by its lease, or by a quarantine or unbind elsewhere. */
		ret = !bs_slot_lease(a->slot, &li) && li.revoked_by_lease ? -ETIME : -ENODEV;
		arb_revoke_holds(a, &ans, ret);
		arb_settle(a, &ans);
	} else if (a->state != OWNED || a->die != die || a->epoch != epoch) {
		ret = -ENODEV; /* revoked meanwhile, by us */
	}
	pthread_mutex_unlock(&a->lock);
	deliver(a, &ans);
	return ret;
}

/* Under lock. */
static void stats_locked(struct bs_arbiter *a, struct bs_arb_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->active = a->state == OWNED ? (int)a->die : -1;
	out->holders = a->state == OWNED ? a->holders : 0;
	out->waiters = a->nwaiters;
	out->acquiring = a->state == ACQUIRING;
	out->grants = a->grants;
	out->lent = a->state == OWNED && a->lent;
	out->returning = a->state == OWNED && a->returning;
	out->expired = a->state == OWNED && a->expired;
	out->lease_ms = a->lease_ms;
	out->lease_left_ms = arb_lease_left(a);
	out->revocations = a->revocations;
	out->epoch = a->epoch;
}

void bs_arb_stats(struct bs_arbiter *a, struct bs_arb_stats *out)
{
	pthread_mutex_lock(&a->lock);
	stats_locked(a, out);
	pthread_mutex_unlock(&a->lock);
}

/* Under lock: the parked holds, head first. */
static unsigned waiters_locked(struct bs_arbiter *a, struct bs_arb_waiter_info *out, unsigned max)
{
	uint64_t now = arb_now_ms();
	unsigned n = 0;

	for (struct bs_waiter *w = a->queue.next; w != &a->queue && n < max; w = w->next, n++)
		out[n] = (struct bs_arb_waiter_info){ w->pid, w->die, now - w->since_ms };
	return n;
}

/* Did the slot move between two queries? */
static bool slot_moved(const bs_status *x, const bs_status *y)
{
	return x->active_die != y->active_die || x->owner_pid != y->owner_pid || x->swaps != y->swaps ||
	       x->waiters != y->waiters || x->open_files != y->open_files || x->owner != y->owner;
}

int bs_arb_view(struct bs_arbiter *a, struct bs_arb_view *out)
{
	bs_status again;
	int ret;

	pthread_mutex_lock(&a->lock);
	for (unsigned tries = 0;; tries++) {
		memset(out, 0, sizeof(*out));
		ret = bs_slot_query(a->slot, &out->slot);
		if (ret)
			break;
		out->n_dies = out->slot.num_dies < BS_ARB_VIEW_MAX ? out->slot.num_dies : BS_ARB_VIEW_MAX;
		for (uint32_t i = 0; i < out->n_dies; i++) {
			out->dies[i].info_err = bs_slot_die_info(a->slot, i, &out->dies[i].info);
			out->dies[i].lend_err = bs_slot_die_lend(a->slot, i, &out->dies[i].lend);
		}
		out->lease_err = bs_slot_lease(a->slot, &out->lease);
		int nq = bs_slot_queue(a->slot, out->queue, BS_ARB_VIEW_MAX, NULL);
		out->n_queue = nq > 0 ? (unsigned)nq : 0;
		/* Another process's handle moves the slot without our lock: the same before and after, or again. */
		ret = bs_slot_query(a->slot, &again);
		out->settled = !ret && !slot_moved(&out->slot, &again);
		if (ret || out->settled || tries == 8)
			break;
	}
	stats_locked(a, &out->stats);
	out->n_waiters = waiters_locked(a, out->waiters, BS_ARB_VIEW_MAX);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

unsigned bs_arb_waiters(struct bs_arbiter *a, struct bs_arb_waiter_info *out, unsigned max)
{
	unsigned n;

	pthread_mutex_lock(&a->lock);
	n = waiters_locked(a, out, max);
	pthread_mutex_unlock(&a->lock);
	return n;
}

struct bs_slot *bs_arb_slot(struct bs_arbiter *a)
{
	return a->slot;
}
