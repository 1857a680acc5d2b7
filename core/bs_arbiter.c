/* SPDX-License-Identifier: MIT */
/*
 * The arbiter's state machine:
 *
 *   IDLE        the handle holds nothing
 *   OWNED(d)    the handle owns the slot with die d; `holders` holds on it
 *   ACQUIRING(d) the arbiter's thread waits in the slot's FIFO for d, on
 *               behalf of the head of this queue
 *
 * settle() brings it back to a consistent state after every change: an
 * owned slot without holders is released, an idle arbiter with waiters asks
 * for the head's die (without blocking; if another process owns the slot,
 * the thread waits instead).
 *
 * Locks: `lock` guards everything; `io` is held for reading during a copy
 * and for writing whenever the slot changes hands, so no copy ever runs
 * while the mapping moves.  Order: lock, then io.
 */
#include "core/bs_arbiter.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { W_NEW = 0, W_QUEUED, W_DONE, W_CANCELLED };
enum arb_state { IDLE, OWNED, ACQUIRING };

struct bs_arbiter {
	struct bs_slot *slot;
	bs_arb_done_fn done;
	void *ctx;
	pthread_mutex_t lock;
	pthread_rwlock_t io;
	pthread_cond_t kick;
	pthread_t thread;
	bool running;   /* the thread has not exited */
	bool in_slot;   /* the thread is inside a blocking acquire */
	bool stop;
	enum arb_state state;
	uint32_t die;   /* OWNED, ACQUIRING */
	void *vram;     /* OWNED */
	unsigned holders;
	uint64_t epoch;
	struct bs_waiter queue; /* sentinel of the FIFO */
	unsigned nwaiters;
	uint64_t grants;
};

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

/* ---- the FIFO and the answers -------------------------------------------- */

static void enqueue(struct bs_arbiter *a, struct bs_waiter *w)
{
	w->prev = a->queue.prev;
	w->next = &a->queue;
	a->queue.prev->next = w;
	a->queue.prev = w;
	w->state = W_QUEUED;
	a->nwaiters++;
}

static void unqueue(struct bs_arbiter *a, struct bs_waiter *w)
{
	w->prev->next = w->next;
	w->next->prev = w->prev;
	w->next = w->prev = NULL;
	a->nwaiters--;
}

/* Answers are collected under the lock and delivered after it, in FIFO order. */
struct answers {
	struct bs_waiter *head, **tail;
};

static void answer(struct bs_arbiter *a, struct answers *ans, struct bs_waiter *w, int err)
{
	unqueue(a, w);
	w->state = W_DONE;
	w->result = err;
	w->next = NULL;
	*ans->tail = w;
	ans->tail = &w->next;
}

static void deliver(struct bs_arbiter *a, struct answers *ans)
{
	struct bs_waiter *w = ans->head, *next;

	for (; w; w = next) {
		next = w->next; /* done() may free w */
		a->done(a->ctx, w, w->result);
	}
	ans->head = NULL;
	ans->tail = &ans->head;
}

#define ANSWERS(name) struct answers name = { NULL, &name.head }

static void grant_waiters(struct bs_arbiter *a, uint32_t die, struct answers *ans)
{
	for (struct bs_waiter *w = a->queue.next, *next; w != &a->queue; w = next) {
		next = w->next;
		if (w->die != die)
			continue;
		w->epoch = a->epoch;
		a->holders++;
		answer(a, ans, w, 0);
	}
}

static void fail_waiters(struct bs_arbiter *a, uint32_t die, int err, struct answers *ans)
{
	for (struct bs_waiter *w = a->queue.next, *next; w != &a->queue; w = next) {
		next = w->next;
		if (w->die == die)
			answer(a, ans, w, err);
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

/* Under lock: give the slot back, whatever the handle's opinion (-ENODEV after a revocation). */
static void let_go(struct bs_arbiter *a)
{
	pthread_rwlock_wrlock(&a->io);
	bs_slot_release(a->slot);
	a->state = IDLE;
	a->holders = 0;
	a->epoch++;
	a->vram = NULL;
	pthread_rwlock_unlock(&a->io);
}

static void settle(struct bs_arbiter *a, struct answers *ans)
{
	for (;;) {
		uint32_t head;
		int ret;

		if (a->state == OWNED && !a->holders)
			let_go(a); /* other processes queued on the slot get their turn */
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

/* The thread: waits for the slot when another process owns it. */
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
			pthread_cond_wait(&a->kick, &a->lock);
			continue;
		}
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
		if (!ret) {
			pthread_rwlock_wrlock(&a->io);
			set_owned(a, die, vram);
			pthread_rwlock_unlock(&a->io);
			grant_waiters(a, die, &ans); /* perhaps none: the head gave up meanwhile */
		} else {
			a->state = IDLE;
			fail_waiters(a, die, ret, &ans);
		}
		settle(a, &ans);
		pthread_mutex_unlock(&a->lock);
		deliver(a, &ans);
		pthread_mutex_lock(&a->lock);
	}
	a->running = false;
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* ---- the API --------------------------------------------------------------- */

struct bs_arbiter *bs_arb_new(struct bs_slot *slot, bs_arb_done_fn done, void *ctx, int *err)
{
	struct bs_arbiter *a = calloc(1, sizeof(*a));
	struct sigaction sa;

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
	a->ctx = ctx;
	a->queue.next = a->queue.prev = &a->queue;
	pthread_mutex_init(&a->lock, NULL);
	pthread_rwlock_init(&a->io, NULL);
	pthread_cond_init(&a->kick, NULL);
	a->running = true;
	*err = -pthread_create(&a->thread, NULL, acquirer, a);
	if (*err) {
		pthread_cond_destroy(&a->kick);
		pthread_rwlock_destroy(&a->io);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return NULL;
	}
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
		answer(a, &ans, a->queue.next, -ESHUTDOWN);
	if (a->state == OWNED)
		let_go(a);
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
	if (w->state == W_CANCELLED) {
		ret = -EINTR;
		goto out;
	}
	ret = usable(a, die);
	if (ret)
		goto out;
	if (a->state == OWNED && a->die == die) {
		ret = 0; /* openers of one die share the slot */
	} else if (a->state == IDLE && !a->nwaiters) {
		ret = take(a, die, &ans);
		if (ret == -EAGAIN && !nonblock) {
			/* Another process owns the slot: wait in its FIFO on our thread. */
			enqueue(a, w);
			a->state = ACQUIRING;
			a->die = die;
			pthread_cond_signal(&a->kick);
			ret = 1;
		}
	} else if (nonblock) {
		ret = -EAGAIN;
	} else {
		enqueue(a, w);
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
		unqueue(a, w);
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
		settle(a, &ans);
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
			let_go(a); /* revoked: every hold of this epoch is void */
		settle(a, &ans);
	}
	pthread_mutex_unlock(&a->lock);
	deliver(a, &ans);
	return ret;
}

int bs_arb_io_begin(struct bs_arbiter *a, uint32_t die, uint64_t epoch, void **vram)
{
	pthread_rwlock_rdlock(&a->io);
	/* state, die, epoch and vram change only under io held for writing */
	if (a->state == OWNED && a->die == die && a->epoch == epoch) {
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
	int ret = -EIO;

	pthread_mutex_lock(&a->lock);
	if (a->state == OWNED && a->die == die && a->epoch == epoch && !bs_slot_query(a->slot, &st) &&
	    (!st.owner || st.revoked || st.active_die != (int32_t)die)) {
		let_go(a);
		settle(a, &ans);
		ret = -ENODEV;
	} else if (a->state != OWNED || a->die != die || a->epoch != epoch) {
		ret = -ENODEV; /* revoked meanwhile, by us */
	}
	pthread_mutex_unlock(&a->lock);
	deliver(a, &ans);
	return ret;
}

void bs_arb_stats(struct bs_arbiter *a, struct bs_arb_stats *out)
{
	pthread_mutex_lock(&a->lock);
	out->active = a->state == OWNED ? (int)a->die : -1;
	out->holders = a->state == OWNED ? a->holders : 0;
	out->waiters = a->nwaiters;
	out->acquiring = a->state == ACQUIRING;
	out->grants = a->grants;
	pthread_mutex_unlock(&a->lock);
}

struct bs_slot *bs_arb_slot(struct bs_arbiter *a)
{
	return a->slot;
}
