/* SPDX-License-Identifier: MIT */
/*
 * A card's MIG mode, changed the runbook's way (its holds: core/engine/node_hold.c).
 *
 * The runbook's preconditions come first: no GPU instance on the card and
 * no process holding its nodes (the card's own and the shared control
 * nodes, whose holder holds every card).  The driver is asked for one card,
 * and the change counts only once the mode read back is current and pending
 * alike: "a successful call is not an applied mode".  No reset is ever
 * asked for and no other card is touched.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/holders.h"
#include "core/model/log.h"

/* "pid 4242 (python3 train.py), pid 77 (ppu-smi)": the holders as `holders` shows them. */
/* The preconditions, under the card's lock after a fresh reading: 0, or -EBUSY with why. */
static int mode_preconditions(struct accel_node *node, struct node_card *nc, char *why, size_t whylen)
{
	struct accel_holder *h = NULL;
	size_t n = 0;
	char names[1024];
	int ret;

	if (nc->inv.n_gis) {
		size_t at = (size_t)snprintf(why, whylen, "%s has %zu GPU instance%s (", nc->card.name, nc->inv.n_gis,
		                             nc->inv.n_gis == 1 ? "" : "s");
		for (size_t i = 0; i < nc->inv.n_gis && at < whylen; i++) {
			const char *job = "";
			for (size_t r = 0; r < nc->n_records; r++)
				if (nc->records[r].gi == nc->inv.gis[i].id)
					job = nc->records[r].job;
			at += (size_t)snprintf(why + at, whylen - at, "%sgi %u%s%s", i ? ", " : "", nc->inv.gis[i].id,
			                       job[0] ? " job " : " not accelfs's", job);
		}
		if (at < whylen)
			snprintf(why + at, whylen - at,
			         "): the mode changes only on a card with none; rmdir them first");
		return -EBUSY;
	}
	ret = accel_card_holders(nc->card_nodes, nc->n_card_nodes, nc->card.family->control_holders_block, &h, &n);
	(void)node;
	if (ret) {
		snprintf(why, whylen, "%s: cannot tell who holds its nodes (%s): the mode is left as it is",
		         nc->card.name, strerror(-ret));
		return ret;
	}
	if (n) {
		accel_holders_describe(h, n, names, sizeof(names));
		snprintf(why, whylen,
		         "%s is held open by %s: the mode changes only when nothing holds the card "
		         "(%s/holders lists them); stop them first",
		         nc->card.name, names, nc->card.name);
		free(h);
		return -EBUSY;
	}
	free(h);
	return 0;
}

/*
 * The driver says the card is in use ("in use by another client") while no
 * process holds the card's own node: the clients are the daemons on its
 * shared nodes.  Name them, and what to stop, after the driver's sentence.
 */
static void name_control_holders(struct node_card *nc, char *why, size_t whylen)
{
	struct accel_control_holder *c = NULL;
	struct accel_holder *h;
	size_t n = 0, at = strlen(why);
	char names[1024];

	if (accel_control_holders(nc->card_nodes, nc->n_card_nodes, &c, &n) || !n) {
		snprintf(why + at, whylen - at,
		         "; no process holds its nodes: a client inside the driver does (stop nvidia-persistenced and "
		         "DCGM: systemctl stop nvidia-persistenced nvidia-dcgm, then write the mode again)");
		free(c);
		return;
	}
	h = calloc(n, sizeof(*h));
	if (h) {
		for (size_t i = 0; i < n; i++)
			h[i] = c[i].h;
		accel_holders_describe(h, n, names, sizeof(names));
		snprintf(why + at, whylen - at, "; its shared nodes (%s...) are held by %s", c[0].node, names);
	}
	free(h);
	free(c);
}

static int change_mode(struct accel_node *node, struct node_card *nc, bool enabled, char *why, size_t whylen)
{
	unsigned want = enabled ? MIG_DEVICE_MIG_ENABLE : MIG_DEVICE_MIG_DISABLE, cur = 0, pend = 0;
	mig_return_t status = MIG_SUCCESS, r;
	int ret;

	node_card_refresh(node, nc, false);
	if (nc->mode == enabled && nc->pending == enabled)
		return 0;
	if (!nc->card.lib->DeviceSetMigMode) {
		snprintf(why, whylen,
		         "%s's driver library offers no %sDeviceSetMigMode: the mode cannot be changed here",
		         nc->card.name, nc->card.lib->prefix);
		return -EOPNOTSUPP;
	}
	ret = mode_preconditions(node, nc, why, whylen);
	if (ret)
		return ret;
	if (!enabled && nc->n_records) {
		/*
		 * A job whose instance is gone (lost) still has its record, its
		 * name and its quota charge: with the mode off it would have no
		 * directory to rmdir it from, and stay so.
		 */
		size_t at = (size_t)snprintf(why, whylen, "%s has %zu job%s with no instance (lost: ", nc->card.name,
		                             nc->n_records, nc->n_records == 1 ? "" : "s");
		for (size_t k = 0; k < nc->n_records && at < whylen; k++)
			at += (size_t)snprintf(why + at, whylen - at, "%s%s", k ? ", " : "", nc->records[k].job);
		if (at < whylen)
			snprintf(why + at, whylen - at,
			         "): the mode goes off only once they are gone; rmdir them first");
		return -EBUSY;
	}
	r = nc->card.lib->DeviceSetMigMode(nc->card.handle, want, &status);
	if (r == MIG_SUCCESS && status != MIG_SUCCESS)
		r = status;
	if (r != MIG_SUCCESS) {
		snprintf(why, whylen, "%s: the driver refused mode %s: %s (%s)", nc->card.name,
		         enabled ? "enabled" : "disabled", mig_lib_strerror(nc->card.lib, r), mig_return_name(r));
		if (r == MIG_ERROR_IN_USE)
			name_control_holders(nc, why, whylen);
		node_card_refresh(node, nc, false);
		return r == MIG_ERROR_IN_USE ? -EBUSY : -mig_return_errno(r);
	}
	r = nc->card.lib->DeviceGetMigMode(nc->card.handle, &cur, &pend);
	node_card_refresh(node, nc, false);
	if (r != MIG_SUCCESS) {
		snprintf(why, whylen, "%s: the driver took mode %s, but reading it back failed: %s", nc->card.name,
		         enabled ? "enabled" : "disabled", mig_lib_strerror(nc->card.lib, r));
		return -EIO;
	}
	if (cur != want) {
		snprintf(
			why, whylen,
			"%s: the driver took mode %s but holds it pending (current %s, pending %s): it applies after a "
			"GPU reset, which accelfs does not do",
			nc->card.name, enabled ? "enabled" : "disabled",
			cur == MIG_DEVICE_MIG_ENABLE ? "enabled" : "disabled",
			pend == MIG_DEVICE_MIG_ENABLE ? "enabled" : "disabled");
		return -EIO;
	}
	log_info("%s: MIG mode %s", nc->card.name, enabled ? "enabled" : "disabled");
	return 0;
}

int accel_node_set_mode(struct accel_node *node, const char *device, bool enabled, char *why, size_t whylen)
{
	struct node_card *nc;
	char key[64];
	int ret;

	why[0] = '\0';
	ret = node_refuse_read_only(node, "no mode is changed", why, whylen);
	if (ret)
		return ret;
	node_topo_rdlock(node);
	ret = node_card_take(node, device, "its mode cannot be changed", 0, &nc, why, whylen);
	if (!ret) {
		ret = change_mode(node, nc, enabled, why, whylen);
		node_unlock(&nc->lock, NODE_LOCK_CARD);
	}
	node_topo_unlock(node);
	accel_snapshot_unref(node_publish(node));
	snprintf(key, sizeof(key), "%s/mig", device);
	accel_node_set_last_error(node, key, ret ? why : "");
	if (ret)
		log_error("%s: mode %s: %s", device, enabled ? "enabled" : "disabled", why);
	return ret;
}
