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
#include "core/engine/node_internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model/log.h"

int64_t node_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The wall clock, for readers (metrics, node.json) to tell how old a snapshot is. */
static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/*
 * What the snapshot shows of a card (view_lock held): its view, or, for a
 * card that has none yet (opened by a rescan, and not read until the same
 * poll pass reaches it), what the last snapshot showed of the card with its
 * UUID: its absent self, with the jobs of its records.  Never the
 * node without the card's jobs, which whatever follows snapshots (the
 * reclaimer forgetting attachments, the CDI spec dropping devices) would
 * take for removed.  NULL: a card new to the node, shown once it is read.
 */
static struct accel_device *shown(const struct accel_snapshot *old, const struct node_card *nc)
{
	if (nc->view)
		return nc->view;
	for (size_t i = 0; old && i < old->n_devices; i++)
		if (!strcmp(old->devices[i]->uuid, nc->ident.uuid))
			return old->devices[i];
	return NULL;
}

_Static_assert(ACCEL_MAX_FAMILIES <= ACCEL_SNAPSHOT_FAMILIES, "a snapshot shows every family");

struct accel_snapshot *node_publish(struct accel_node *node)
{
	struct accel_snapshot *s = NULL, *old;
	size_t total = 0;
	bool changed;

	node_lock(&node->publish_lock, NODE_LOCK_PUBLISH);
	old = node->snap; /* replaced only under publish_lock, which we hold */
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++)
			total += shown(old, node->fams[f].cards[c]) != NULL;
	changed = !old || old->n_devices != total || old->n_families != node->n_fams ||
	          memcmp(old->families, node->fam_states, node->n_fams * sizeof(old->families[0]));
	for (size_t f = 0, k = 0; !changed && f < node->n_fams; f++)
		for (size_t c = 0; !changed && c < node->fams[f].n_cards; c++) {
			struct accel_device *d = shown(old, node->fams[f].cards[c]);
			if (d)
				changed = old->devices[k++] != d;
		}
	if (changed) {
		s = calloc(1, sizeof(*s));
		if (s)
			s->devices = calloc(total + 1, sizeof(*s->devices));
		if (s && s->devices) {
			s->refs = 1;
			s->n_families = node->n_fams;
			memcpy(s->families, node->fam_states, node->n_fams * sizeof(s->families[0]));
			for (size_t f = 0; f < node->n_fams; f++)
				for (size_t c = 0; c < node->fams[f].n_cards; c++) {
					struct accel_device *d = shown(old, node->fams[f].cards[c]);
					if (d)
						s->devices[s->n_devices++] = accel_device_ref(d);
				}
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
	s->published_ms = wall_ms();
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
