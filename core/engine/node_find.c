/* SPDX-License-Identifier: MIT */
/*
 * The card an operation names, and what every operation on one card starts
 * with: refused on a --read-only node, the card found and present, its lock
 * taken.  Each refusal is said here, once, in the same words for every
 * operation; the caller says only what is then left undone.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node_card *node_find_card(struct accel_node *node, const char *device)
{
	/* Cards are opened by ordinal: "ppu3" is fams[T-Head].cards[3] unless one failed to open. */
	for (size_t f = 0; f < node->n_fams; f++) {
		size_t n = strlen(node->fams[f].family->tree_prefix);
		char *end;
		unsigned long ord;

		if (strncmp(device, node->fams[f].family->tree_prefix, n) || device[n] < '0' || device[n] > '9')
			continue;
		ord = strtoul(device + n, &end, 10);
		if (!*end && ord < node->fams[f].n_cards && !strcmp(node->fams[f].cards[ord]->card.name, device))
			return node->fams[f].cards[ord];
	}
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++)
			if (!strcmp(node->fams[f].cards[c]->card.name, device))
				return node->fams[f].cards[c];
	return NULL;
}

int node_refuse_read_only(const struct accel_node *node, const char *unchanged, char *why, size_t whylen)
{
	if (!node->opt.read_only)
		return 0;
	snprintf(why, whylen, "accelfs runs --read-only: %s", unchanged);
	return -EROFS;
}

int node_card_take(struct accel_node *node, const char *device, const char *absent, unsigned wait_ms,
                   struct node_card **out, char *why, size_t whylen)
{
	struct node_card *nc = node_find_card(node, device);

	*out = NULL;
	if (!nc) {
		snprintf(why, whylen, "no device %s", device);
		return -ENOENT;
	}
	if (absent && nc->absent) {
		snprintf(why, whylen, "%s is absent (%s): %s", device, nc->absent_why, absent);
		return -ENODEV;
	}
	if (!wait_ms) {
		node_lock(&nc->lock, NODE_LOCK_CARD);
	} else if (node_lock_within(&nc->lock, NODE_LOCK_CARD, wait_ms)) {
		snprintf(why, whylen, "%s is busy (a carve, a removal or a reading holds it): read again", device);
		return -EBUSY;
	}
	*out = nc;
	return 0;
}
