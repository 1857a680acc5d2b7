/* SPDX-License-Identifier: MIT */
/*
 * The node's locks, taken through these helpers so that debug builds check
 * the order written in core/engine/node_internal.h: a lock of a lower rank is never
 * taken while one of a higher rank is held, and nothing is taken inside a
 * leaf.  Release builds take the locks and nothing else.
 */
#include "core/engine/node_internal.h"

#include <assert.h>
#include <time.h>

#include "core/engine/lock_check.h"
#include "core/model/timed_wait.h"

#ifndef NDEBUG
static __thread unsigned held_ranks;
static __thread unsigned held_leaves;
static __thread unsigned outer_ranks; /* front-end locks held (core/engine/lock_check.h), one bit per rank */
static __thread unsigned outer_leaves;
static __thread unsigned rendering; /* snapshot rows being rendered */

static void order_take(enum node_lock_rank rank)
{
	/* The long locks: a carve or a rescan holds them while it talks to the driver. */
	if (rank < NODE_LOCK_SNAP) {
		assert(outer_ranks == 0 && outer_leaves == 0 &&
		       "an fs/ lock is held across a call that takes a node lock (core/engine/lock_check.h)");
		assert(rendering == 0 && "a snapshot row's render takes a node lock: it may copy pointers only");
	}
	if (rank == NODE_LOCK_LEAF) {
		assert(held_leaves == 0 && "a leaf lock is held: nothing may be taken inside it");
		held_leaves++;
		return;
	}
	assert(held_leaves == 0 && "a leaf lock is held: nothing may be taken inside it");
	assert((held_ranks >> rank) == 0 && "lock order violated: see the list in core/engine/node_internal.h");
	held_ranks |= 1u << rank;
}

static void order_drop(enum node_lock_rank rank)
{
	if (rank == NODE_LOCK_LEAF) {
		held_leaves--;
		return;
	}
	held_ranks &= ~(1u << rank);
}
void accel_outer_lock_take(unsigned rank)
{
	assert(outer_leaves == 0 && "an fs/ leaf lock is held: nothing may be taken inside it");
	if (rank == ACCEL_OUTER_LEAF) {
		outer_leaves++;
		return;
	}
	assert(rank > 0 && rank < ACCEL_OUTER_LEAF);
	assert((outer_ranks >> rank) == 0 && "fs/ lock order violated: see the list in fs/lock_order.h");
	outer_ranks |= 1u << rank;
}

void accel_outer_lock_drop(unsigned rank)
{
	if (rank == ACCEL_OUTER_LEAF)
		outer_leaves--;
	else
		outer_ranks &= ~(1u << rank);
}

bool accel_outer_locks_held(void)
{
	return outer_ranks || outer_leaves;
}

void accel_render_enter(void)
{
	rendering++;
}

void accel_render_leave(void)
{
	rendering--;
}
#else
static void order_take(enum node_lock_rank rank)
{
	(void)rank;
}

static void order_drop(enum node_lock_rank rank)
{
	(void)rank;
}

void accel_outer_lock_take(unsigned rank)
{
	(void)rank;
}

void accel_outer_lock_drop(unsigned rank)
{
	(void)rank;
}

bool accel_outer_locks_held(void)
{
	return false;
}

void accel_render_enter(void)
{
}

void accel_render_leave(void)
{
}
#endif

void node_lock(pthread_mutex_t *m, enum node_lock_rank rank)
{
	order_take(rank);
	pthread_mutex_lock(m);
}

int node_lock_within(pthread_mutex_t *m, enum node_lock_rank rank, unsigned ms)
{
	struct timespec until;
	int ret;

	order_take(rank);
	until = accel_deadline_on(CLOCK_REALTIME, ms); /* pthread_mutex_timedlock counts on the realtime clock */
	ret = pthread_mutex_timedlock(m, &until);
	if (ret)
		order_drop(rank);
	return -ret;
}

void node_unlock(pthread_mutex_t *m, enum node_lock_rank rank)
{
	pthread_mutex_unlock(m);
	order_drop(rank);
}

void node_topo_rdlock(struct accel_node *node)
{
	order_take(NODE_LOCK_TOPO);
	pthread_rwlock_rdlock(&node->topo);
}

void node_topo_wrlock(struct accel_node *node)
{
	order_take(NODE_LOCK_TOPO);
	pthread_rwlock_wrlock(&node->topo);
}

void node_topo_unlock(struct accel_node *node)
{
	pthread_rwlock_unlock(&node->topo);
	order_drop(NODE_LOCK_TOPO);
}
