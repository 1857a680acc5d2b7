/* SPDX-License-Identifier: MIT */
/*
 * Health by identity: the GPU instances destroyed lately (struct node_tomb):
 * jobs removed, orphans and foreign instances reclaimed.
 *
 * The driver's events name a GPU instance by its id alone, and a removed
 * instance's id is the next carve's.  An event the driver raised before a
 * removal can be read after it, and after a new job took the id.  So every
 * removal is numbered (node->gone_seq, bumped once the instance is gone),
 * and the event thread notes the number it read before it last found the
 * queue empty (its mark): an event read since was raised since, and may be
 * the instance of any removal numbered after the mark, never of one before.
 * Such an event is charged to the removed instance (node_health.c), not to
 * whoever holds the id now.
 */
#include "core/engine/node_internal.h"

#include <stdio.h>
#include <string.h>

#include "core/model/mig_abi.h"

uint64_t node_gone_seq(struct accel_node *node)
{
	return __atomic_load_n(&node->gone_seq, __ATOMIC_ACQUIRE);
}

void node_tomb_add(struct accel_node *node, struct node_card *nc, enum node_tomb_kind kind, unsigned gi, unsigned ci,
                   const char *job, const char *uuid)
{
	struct node_tomb *t;

	if (nc->n_tombs == NODE_TOMBS) {
		memmove(&nc->tombs[0], &nc->tombs[1], (NODE_TOMBS - 1) * sizeof(nc->tombs[0]));
		nc->n_tombs--;
	}
	t = &nc->tombs[nc->n_tombs++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->gi = gi;
	t->ci = ci;
	snprintf(t->job, sizeof(t->job), "%s", job);
	snprintf(t->uuid, sizeof(t->uuid), "%s", uuid);
	/* After the destroy: an instance alive at any mark has a number above it. */
	t->seq = __atomic_add_fetch(&node->gone_seq, 1, __ATOMIC_ACQ_REL);
}

const struct node_tomb *node_tomb_find(struct node_card *nc, unsigned gi, unsigned ci, uint64_t mark)
{
	size_t kept = 0;

	for (size_t i = 0; i < nc->n_tombs; i++)
		if (nc->tombs[i].seq > mark)
			nc->tombs[kept++] = nc->tombs[i];
	nc->n_tombs = kept;
	for (size_t i = kept; i-- > 0;)
		if (nc->tombs[i].gi == gi && (ci == MIG_EVENT_NO_INSTANCE || nc->tombs[i].ci == ci))
			return &nc->tombs[i];
	return NULL;
}
