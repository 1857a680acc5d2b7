/* SPDX-License-Identifier: MIT */
/*
 * What is laid on a card from outside its driver: the operator's cordon, a
 * layout's drain and waiting mode line (accel_node_set_hold), and the
 * operator's acknowledgement of a failure (accel_node_health_ack).  Each
 * installs the card's view again, so what it admits (core/policy/admits.c) is
 * decided anew, and publishes it.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/health_store.h"
#include "core/model/log.h"

/*
 * Lay the card's holds on it and show them: its view is installed again with
 * them (core/policy/admits.c decides what it takes) and published, so available,
 * node.json and mkdir agree from then on.
 */
int accel_node_set_hold(struct accel_node *node, const char *device, const struct accel_card_hold *h)
{
	struct node_card *nc;
	bool moved = false;
	int ret;

	node_topo_rdlock(node);
	ret = node_card_take(node, device, NULL, 0, &nc, NULL, 0); /* an absent card keeps its holds too */
	if (!ret) {
		if (nc->hold.cordon != h->cordon)
			log_info("%s: %s", device, h->cordon ? "cordoned: no new job lands here" : "cordon lifted");
		if (nc->hold.drain != h->drain)
			log_info("%s: %s", device,
			         h->drain ? "draining for its layout: no new job lands here until it is applied"
			                  : "no longer draining");
		if (nc->hold.mode_wait != h->mode_wait)
			log_info("%s: %s", device,
			         h->mode_wait
			                 ? "its layout's mode line waits: no new job lands here until the mode changed"
			                 : "its layout's mode line no longer waits");
		/* Field by field: a caller's hold on its stack has padding nobody wrote. */
		moved = nc->hold.cordon != h->cordon || nc->hold.drain != h->drain ||
		        nc->hold.mode_wait != h->mode_wait || nc->hold.pending != h->pending ||
		        nc->hold.impossible != h->impossible;
		nc->hold = *h;
		if (moved)
			node_card_reshow(node, nc);
		node_unlock(&nc->lock, NODE_LOCK_CARD);
	}
	node_topo_unlock(node);
	if (moved)
		accel_snapshot_unref(node_publish(node));
	return ret;
}

int accel_node_set_cordon(struct accel_node *node, const char *device, bool on)
{
	struct accel_card_hold h = { 0 };
	struct node_card *nc;

	node_topo_rdlock(node);
	if (!node_card_take(node, device, NULL, 0, &nc, NULL, 0)) {
		h = nc->hold;
		node_unlock(&nc->lock, NODE_LOCK_CARD);
	}
	node_topo_unlock(node);
	if (!nc)
		return -ENOENT;
	h.cordon = on;
	return accel_node_set_hold(node, device, &h);
}

/* A copy of the book to store after the card's lock (a durable write waits for the disk). */
static bool copy_book(const struct accel_health_book *b, struct accel_health_book *out)
{
	*out = *b;
	out->jobs = b->n_jobs ? malloc(b->n_jobs * sizeof(*b->jobs)) : NULL;
	if (b->n_jobs && !out->jobs) {
		memset(out, 0, sizeof(*out));
		return false;
	}
	if (out->jobs)
		memcpy(out->jobs, b->jobs, b->n_jobs * sizeof(*b->jobs));
	out->cap = out->n_jobs;
	return true;
}

int accel_node_health_ack(struct accel_node *node, const char *device, uid_t who, char *why, size_t whylen)
{
	struct accel_health_book copy = { 0 };
	char was[ACCEL_HEALTH_WHY_MAX] = "", uuid[ACCEL_UUID_MAX] = "";
	struct node_card *nc;
	bool stored = false;
	size_t n = 0;
	int ret;

	why[0] = '\0';
	ret = node_refuse_read_only(node, "the health book is left as it is", why, whylen);
	if (ret)
		return ret;
	node_topo_rdlock(node);
	ret = node_card_take(node, device, "its health is acknowledged once it is back", 0, &nc, why, whylen);
	if (!ret) {
		snprintf(was, sizeof(was), "%s", nc->health.device.why);
		snprintf(uuid, sizeof(uuid), "%s", nc->ident.uuid);
		n = accel_health_book_acknowledge(&nc->health);
		node_card_reshow(node, nc);
		stored = copy_book(&nc->health, &copy);
		if (stored)
			nc->health.dirty = false;
		node_unlock(&nc->lock, NODE_LOCK_CARD);
	}
	node_topo_unlock(node);
	if (ret)
		return ret;
	if (stored && accel_health_store_save(node->state_dir, uuid, &copy, why, whylen)) {
		log_error("%s: %s; the acknowledgement is kept in memory only until the next event", device, why);
		why[0] = '\0';
	}
	accel_health_book_clear(&copy);
	if (n)
		log_notice("%s: health acknowledged by uid %u: %zu fault%s cleared%s%s; the card takes jobs again",
		           device, (unsigned)who, n, n == 1 ? "" : "s", was[0] ? ", the card's: " : "", was);
	else
		log_info("%s: health acknowledged by uid %u: no fault was shown", device, (unsigned)who);
	accel_snapshot_unref(node_publish(node));
	return 0;
}
