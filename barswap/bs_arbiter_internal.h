/* SPDX-License-Identifier: MIT */
/*
 * The arbiter's insides, shared by its two files: bs_arbiter.c (the queue,
 * holds and the slot's moves) and bs_arb_lend.c (lending, returns and the
 * lease, which its thread advances).
 *
 *   IDLE         the handle holds nothing
 *   OWNED(d)     the handle owns the slot with die d; `holders` holds on it
 *   ACQUIRING(d) the thread waits in the slot's FIFO for d, on behalf of
 *                the head of the queue
 *
 * Locks: `lock` guards everything; `io` is held for reading during a copy
 * and for writing whenever the slot changes hands or the die is lent or
 * back, so no copy ever runs while the mapping moves.  Order: lock, then io.
 */
#ifndef ACCEL_BS_ARBITER_INTERNAL_H
#define ACCEL_BS_ARBITER_INTERNAL_H

#include <pthread.h>

#include "barswap/bs_arbiter.h"

enum { W_NEW = 0, W_QUEUED, W_DONE, W_CANCELLED };
enum arb_state { IDLE, OWNED, ACQUIRING };

/* How often the thread looks at a slot it owns while a lease or a return is running. */
#define ARB_POLL_MS 100
/* A return slower than this is noted once (the driver is holding on). */
#define ARB_RETURN_SLOW_MS 1000

#define ARB_MAX_NOTES 4

/* Answers and notes are collected under the lock and delivered after it, in order. */
struct answers {
	struct bs_waiter *head, **tail;
	struct bs_arb_note notes[ARB_MAX_NOTES];
	unsigned nnotes;
};

#define ANSWERS(name) struct answers name = { .head = NULL, .tail = &name.head }

struct bs_arbiter {
	struct bs_slot *slot;
	bs_arb_done_fn done;
	bs_arb_note_fn note;
	void *ctx;
	pthread_mutex_t lock;
	pthread_rwlock_t io;
	pthread_cond_t kick; /* CLOCK_MONOTONIC */
	pthread_t thread;
	bool running; /* the thread has not exited */
	bool in_slot; /* the thread is inside a blocking acquire */
	bool stop;
	enum arb_state state;
	uint32_t die; /* OWNED, ACQUIRING */
	void *vram;   /* OWNED */
	unsigned holders;
	uint64_t epoch;
	struct bs_waiter queue; /* sentinel of the FIFO of holds */
	unsigned nwaiters;
	struct bs_waiter returns; /* sentinel of the parked returns */
	unsigned nreturns;
	uint64_t grants;
	/* lending (OWNED only) */
	bool lent;      /* the owned die is bound to a driver */
	bool returning; /* ... and asked back */
	bool expired;   /* the holds' lease ran out: revoked once the die is back */
	uint64_t return_since;
	bool return_noted;
	/* the lease among this arbiter's waiters */
	uint32_t lease_ms;
	uint64_t contended_since; /* ms, 0: not running */
	uint64_t revocations;
};

/* bs_arb_queue.c: what the rounds and the lending both build on (all under lock but the clock). */
uint64_t arb_now_ms(void);
void arb_note(struct answers *ans, enum bs_arb_event what, uint32_t die, uint64_t epoch, int err, uint32_t ms);
void arb_enqueue(struct bs_arbiter *a, struct bs_waiter *w);
void arb_unqueue(struct bs_arbiter *a, struct bs_waiter *w);
void arb_answer(struct bs_arbiter *a, struct answers *ans, struct bs_waiter *w, int err);
/* Does the lease run: someone waits for an owned slot, and no expiry is being handled? */
bool arb_lease_runs(const struct bs_arbiter *a);
/* Start or stop the lease's clock after a change of owner or queue; wakes the thread for a new deadline. */
void arb_lease_update(struct bs_arbiter *a);
int32_t arb_lease_left(struct bs_arbiter *a);
/* Give the slot back; parked returns are answered (the slot brings the die back itself). */
void arb_let_go(struct bs_arbiter *a, struct answers *ans);
/* OWNED: every hold of this epoch is void (err for their I/O); the slot is given back. */
void arb_revoke_holds(struct bs_arbiter *a, struct answers *ans, int err);

/* bs_arbiter.c, under lock: bring the arbiter back to a consistent state. */
void arb_settle(struct bs_arbiter *a, struct answers *ans);

/* bs_arb_lend.c, under lock: */
/* The die just came into the slot: is it lent already (resident)? the lease as the slot says now. */
void arb_owned_refresh(struct bs_arbiter *a);
/* The thread's rounds: a return's progress, the slot taken back, the lease's end. */
void arb_tick(struct bs_arbiter *a, struct answers *ans);
/* How long the thread may sleep before its next round: ms, or -1 for as long as nothing happens. */
int64_t arb_next_wake(struct bs_arbiter *a);

#endif
