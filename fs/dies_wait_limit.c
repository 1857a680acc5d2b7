/* SPDX-License-Identifier: MIT */
/*
 * The wait limit of dies/: a parked request answered ETIMEDOUT before the
 * kernel's bound on a FUSE answer (fs/request_timeout.h) aborts the mount.
 *
 * Two requests of dies/ wait as long as others decide: an open of
 * dies/<n>/vram queued for the slot, and a write of bar_swap to a lent
 * die's driver file waiting for the die to come back.  Under a bound, the
 * kernel would abort the whole connection for either, every caller of the
 * mount with it.  So each parked request is listed here with its deadline
 * (every request gets the same limit, so the list is in deadline order),
 * and one thread, started only under a bound, withdraws the first whose
 * deadline has passed from the arbiter (bs_arb_cancel, as a signal does)
 * and answers it ETIMEDOUT: one caller learns it waited too long, and the
 * mount lives.
 *
 * Locks: parked_lock comes before the arbiter's (the thread cancels under
 * it) and after libfuse's lock of a request (an interrupt unlists under
 * it), so it is never held while answering a request or unregistering its
 * interrupt callback.  Whoever frees a parked request unlists it first.
 */
#include "fs/dies_internal.h"

#include <errno.h>
#include <string.h>

#include "core/engine/metrics.h"
#include "core/model/log.h"
#include "core/model/timed_wait.h"

/* How much earlier than the kernel's bound a wait is cut: a quarter of it, at most 5 s. */
uint32_t fs_dies_wait_limit_for(unsigned bound_s)
{
	uint64_t bound_ms = (uint64_t)bound_s * 1000, margin = bound_ms / 4;

	if (margin > 5000)
		margin = 5000;
	return bound_ms - margin > UINT32_MAX ? UINT32_MAX : (uint32_t)(bound_ms - margin);
}

static void unlink_parked(struct fs_dies_parked *p)
{
	p->prev->next = p->next;
	p->next->prev = p->prev;
	p->next = p->prev = NULL;
}

static void *limiter(void *arg)
{
	struct fs_dies *d = arg;

	pthread_mutex_lock(&d->parked_lock);
	while (!d->limiter_stopping) {
		struct fs_dies_parked *p = d->parked.next;
		uint64_t now = accel_metrics_now();

		if (p == &d->parked) {
			pthread_cond_wait(&d->parked_cond, &d->parked_lock);
			continue;
		}
		if (now < p->deadline_ns) {
			struct timespec at = accel_deadline_in_ms((int64_t)((p->deadline_ns - now) / 1000000 + 1));

			pthread_cond_timedwait(&d->parked_cond, &d->parked_lock, &at);
			continue;
		}
		/*
		 * Read under the lock by whoever answers it: an -EINTR of a hold
		 * that had not parked yet (the cancel comes first) is this limit's.
		 */
		p->timed_out = true;
		unlink_parked(p);
		if (!bs_arb_cancel(d->arb, p->w))
			continue; /* answered already, or being answered: its answer stands */
		pthread_mutex_unlock(&d->parked_lock);
		p->expire(p); /* out of the arbiter's queue: nobody else answers it */
		accel_metrics_dies_wait_timed_out();
		pthread_mutex_lock(&d->parked_lock);
	}
	pthread_mutex_unlock(&d->parked_lock);
	return NULL;
}

int fs_dies_limit_waits(struct fs_dies *d, unsigned bound_s)
{
	int ret;

	if (!d || !bound_s || d->wait_limit_ms)
		return 0;
	/* Before the mount serves: nothing else reads it yet, and the thread sees it from its start. */
	d->wait_limit_ms = fs_dies_wait_limit_for(bound_s);
	ret = pthread_create(&d->limiter, NULL, limiter, d);
	if (ret) {
		d->wait_limit_ms = 0;
		log_warn("dies: cannot start the thread that answers a wait before the kernel's bound on a FUSE "
		         "answer (%u s) runs out: %s; a wait that long ends the mount",
		         bound_s, strerror(ret));
		return -ret;
	}
	return 0; /* what the limit is, the start's note says (fs/request_timeout.c) */
}

void fs_dies_stop_limiting(struct fs_dies *d)
{
	if (!d->wait_limit_ms)
		return; /* no thread */
	pthread_mutex_lock(&d->parked_lock);
	d->limiter_stopping = true;
	pthread_cond_signal(&d->parked_cond);
	pthread_mutex_unlock(&d->parked_lock);
	pthread_join(d->limiter, NULL);
}

void fs_dies_park_list(struct fs_dies *d, struct fs_dies_parked *p, struct bs_waiter *w,
                       void (*expire)(struct fs_dies_parked *p))
{
	p->next = p->prev = NULL;
	p->w = w;
	p->expire = expire;
	p->timed_out = false;
	if (!d->wait_limit_ms)
		return; /* no limit: an open costs no lock more than before */
	pthread_mutex_lock(&d->parked_lock);
	p->deadline_ns = accel_metrics_now() + (uint64_t)d->wait_limit_ms * 1000000; /* under it: in order */
	if (d->parked.next == &d->parked)
		pthread_cond_signal(&d->parked_cond); /* the thread waits for a first one without a deadline */
	p->prev = d->parked.prev;
	p->next = &d->parked;
	d->parked.prev->next = p;
	d->parked.prev = p;
	pthread_mutex_unlock(&d->parked_lock);
}

bool fs_dies_park_unlist(struct fs_dies *d, struct fs_dies_parked *p)
{
	bool timed_out;

	if (!d->wait_limit_ms)
		return false; /* never listed */
	pthread_mutex_lock(&d->parked_lock);
	if (p->next)
		unlink_parked(p);
	timed_out = p->timed_out;
	pthread_mutex_unlock(&d->parked_lock);
	return timed_out;
}
