/* SPDX-License-Identifier: MIT */
/* What runs on a job's instance, asked of its driver under the card's lock, never waiting for it long. */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/processes.h"

int accel_node_job_processes(struct accel_node *node, const char *device, const char *job, const char *uuid,
                             struct accel_process **out, size_t *n, char *why, size_t whylen)
{
	struct node_card *nc;
	size_t i;
	int ret;

	*out = NULL;
	*n = 0;
	node_topo_rdlock(node);
	/*
	 * One driver conversation at a time on a card, but a reader never waits
	 * for a carve: an rmdir retrying a busy instance holds the card for a
	 * second and more.  Past a short wait the answer is "busy, read again".
	 */
	ret = node_card_take(node, device, NULL, ACCEL_PROCESSES_WAIT_MS, &nc, why, whylen);
	if (ret) {
		node_topo_unlock(node);
		return ret;
	}
	i = nc->absent ? (size_t)-1 : node_find_record(nc, job);
	if (nc->absent) {
		snprintf(why, whylen, "%s is absent: no driver can say what runs on %s", device, job);
		ret = -ENODEV;
	} else if (i == (size_t)-1 || (uuid && strcmp(nc->records[i].uuid, uuid))) {
		snprintf(why, whylen, "%s: job %s is gone", device, job);
		ret = -ENOENT;
	} else {
		struct accel_record *r = &nc->records[i];
		ret = accel_mig_processes(&nc->card, r->gi, r->ci, &r->mig_index, out, n, why, whylen);
	}
	node_unlock(&nc->lock, NODE_LOCK_CARD);
	node_topo_unlock(node);
	return ret;
}
