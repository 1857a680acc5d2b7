/* SPDX-License-Identifier: MIT */
/*
 * Publishing: the cards' views become one immutable snapshot that readers
 * take a reference on; the CDI spec files follow the newest one.
 *
 * Order is what makes the answers true.  Publishers take publish_lock, so a
 * snapshot is installed only by whoever collected its views last: a publish
 * that collected earlier can never replace one that collected later.  Each
 * view is shared, not copied: a publish after a carve on one card costs a
 * pointer per card and compares nothing but pointers.
 */
#include "core/node_internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"

int64_t node_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- lock order, checked in debug builds --------------------------------- */

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

/* ---- last_error ------------------------------------------------------- */

void accel_node_set_last_error(struct accel_node *node, const char *key, const char *text)
{
	node_lock(&node->err_lock, NODE_LOCK_LEAF);
	for (size_t i = 0; i < node->n_errors; i++) {
		if (strcmp(node->errors[i].key, key))
			continue;
		snprintf(node->errors[i].text, sizeof(node->errors[i].text), "%s", text);
		node_unlock(&node->err_lock, NODE_LOCK_LEAF);
		return;
	}
	struct error_entry *grown = realloc(node->errors, (node->n_errors + 1) * sizeof(*grown));
	if (grown) {
		node->errors = grown;
		snprintf(grown[node->n_errors].key, sizeof(grown[node->n_errors].key), "%s", key);
		snprintf(grown[node->n_errors].text, sizeof(grown[node->n_errors].text), "%s", text);
		node->n_errors++;
	}
	node_unlock(&node->err_lock, NODE_LOCK_LEAF);
}

void accel_node_last_error(struct accel_node *node, const char *key, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	node_lock(&node->err_lock, NODE_LOCK_LEAF);
	for (size_t i = 0; i < node->n_errors; i++)
		if (!strcmp(node->errors[i].key, key))
			snprintf(buf, len, "%s", node->errors[i].text);
	node_unlock(&node->err_lock, NODE_LOCK_LEAF);
}

/* ---- snapshots --------------------------------------------------------- */

/*
 * The CDI spec files follow s (node_cdi.c), unless they show s or a newer
 * snapshot already.  Runs after the snapshot is installed, under cdi_lock
 * alone: readers and other publishers never wait for it.  This is the one
 * place the spec files are written from: none without a CDI directory, and
 * none by a daemon that only observes (--read-only).
 */
static void cdi_follow(struct accel_node *node, struct accel_snapshot *s)
{
	if (!node->opt.cdi_dir || node->opt.read_only)
		return;
	node_lock(&node->cdi_lock, NODE_LOCK_LEAF);
	node_cdi_follow(node, s);
	node_unlock(&node->cdi_lock, NODE_LOCK_LEAF);
}

struct accel_snapshot *node_publish(struct accel_node *node)
{
	struct accel_snapshot *s = NULL, *old;
	size_t total = 0;
	bool changed;

	node_lock(&node->publish_lock, NODE_LOCK_PUBLISH);
	old = node->snap; /* replaced only under publish_lock, which we hold */
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	for (size_t f = 0; f < node->n_fams; f++)
		total += node->fams[f].n_cards;
	changed = !old || old->n_devices != total;
	for (size_t f = 0, k = 0; !changed && f < node->n_fams; f++)
		for (size_t c = 0; !changed && c < node->fams[f].n_cards; c++, k++)
			changed = old->devices[k] != node->fams[f].cards[c]->view;
	if (changed) {
		s = calloc(1, sizeof(*s));
		if (s)
			s->devices = calloc(total + 1, sizeof(*s->devices));
		if (s && s->devices) {
			s->refs = 1;
			for (size_t f = 0; f < node->n_fams; f++)
				for (size_t c = 0; c < node->fams[f].n_cards; c++)
					if (node->fams[f].cards[c]->view)
						s->devices[s->n_devices++] =
							accel_device_ref(node->fams[f].cards[c]->view);
		} else if (s) {
			free(s);
			s = NULL;
		}
	}
	node_unlock(&node->view_lock, NODE_LOCK_VIEW);

	if (!changed || !s) {
		if (changed)
			log_error("out of memory publishing a snapshot; the tree keeps the previous state");
		node_lock(&node->snap_lock, NODE_LOCK_SNAP);
		s = accel_snapshot_ref(node->snap);
		node_unlock(&node->snap_lock, NODE_LOCK_SNAP);
		node_unlock(&node->publish_lock, NODE_LOCK_PUBLISH);
		/* Whoever installed it may not have written the spec yet: we answer only once it is. */
		if (s)
			cdi_follow(node, s);
		return s;
	}
	s->generation = ++node->generation;
	node_lock(&node->snap_lock, NODE_LOCK_SNAP);
	node->snap = accel_snapshot_ref(s);
	node_unlock(&node->snap_lock, NODE_LOCK_SNAP);
	/* In publication order, so a listener never sees an older snapshot after a newer one. */
	if (node->opt.on_change)
		node->opt.on_change(node->opt.ctx, old, s);
	node_unlock(&node->publish_lock, NODE_LOCK_PUBLISH);
	accel_snapshot_unref(old);

	/*
	 * The CDI spec files follow before the operation that caused the
	 * change returns: a runtime reading them after mkdir sees the job.
	 */
	cdi_follow(node, s);
	return s;
}

struct accel_snapshot *accel_node_snapshot(struct accel_node *node)
{
	struct accel_snapshot *s;

	node_lock(&node->snap_lock, NODE_LOCK_SNAP);
	s = accel_snapshot_ref(node->snap);
	node_unlock(&node->snap_lock, NODE_LOCK_SNAP);
	return s;
}
