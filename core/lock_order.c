/* SPDX-License-Identifier: MIT */
/*
 * The node's locks, taken through these helpers so that debug builds check
 * the order written in core/node_internal.h: a lock of a lower rank is never
 * taken while one of a higher rank is held, and nothing is taken inside a
 * leaf.  Release builds take the locks and nothing else.
 */
#include "core/node_internal.h"

#include <assert.h>

#ifndef NDEBUG
static __thread unsigned held_ranks;
static __thread unsigned held_leaves;

static void order_take(enum node_lock_rank rank)
{
	if (rank == NODE_LOCK_LEAF) {
		assert(held_leaves == 0 && "a leaf lock is held: nothing may be taken inside it");
		held_leaves++;
		return;
	}
	assert(held_leaves == 0 && "a leaf lock is held: nothing may be taken inside it");
	assert((held_ranks >> rank) == 0 && "lock order violated: see the list in core/node_internal.h");
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
#else
static void order_take(enum node_lock_rank rank)
{
	(void)rank;
}

static void order_drop(enum node_lock_rank rank)
{
	(void)rank;
}
#endif

void node_lock(pthread_mutex_t *m, enum node_lock_rank rank)
{
	order_take(rank);
	pthread_mutex_lock(m);
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
