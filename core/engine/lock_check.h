/* SPDX-License-Identifier: MIT */
/*
 * What a front end tells core's lock checker (core/engine/lock_order.c), so that
 * debug builds check one order across the layers: fs/'s locks, ranked in
 * fs/lock_order.h, come after the node's long locks (topo, a card's lock,
 * names, publish, view: core/engine/node_internal.h).  A front-end lock is never
 * held across a call that takes one of those, and a render of a snapshot
 * row takes none of them: only the pointer copies (the snapshot pointer,
 * the quota table, last_error's store), which nothing holds for long.
 * Release builds check nothing and cost nothing.
 */
#ifndef ACCEL_LOCK_CHECK_H
#define ACCEL_LOCK_CHECK_H

#include <stdbool.h>

/* Ranks are 1..30, taken in increasing order; ACCEL_OUTER_LEAF: nothing may be taken inside it. */
#define ACCEL_OUTER_LEAF 31u

/* A front-end lock of that rank is being taken, or was let go (debug builds assert the order). */
void accel_outer_lock_take(unsigned rank);
void accel_outer_lock_drop(unsigned rank);
/* Does this thread hold a front-end lock?  (Always false in release builds.) */
bool accel_outer_locks_held(void);
/*
 * A render of a snapshot row begins or ends on this thread: in between,
 * taking one of the node's long locks is an assertion failure.
 */
void accel_render_enter(void);
void accel_render_leave(void);

#endif
