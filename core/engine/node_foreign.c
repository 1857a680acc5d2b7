/* SPDX-License-Identifier: MIT */
/*
 * Instances accelfs did not make (foreign ones, core/policy/reconcile.h): the
 * operator's word on them per card (<dev>/mig/foreign, kept by
 * node_unowned.c), and taking one over as a job without destroying it
 * (<dev>/mig/adopt).
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/driver/devnodes.h"
#include "core/model/log.h"

int accel_node_set_foreign(struct accel_node *node, const char *device, const char *value, char *why, size_t whylen)
{
	enum node_foreign_policy p;
	struct node_card *nc;
	int ret;

	if (!strcmp(value, "keep"))
		p = NODE_FOREIGN_KEEP;
	else if (!strcmp(value, "reclaim"))
		p = NODE_FOREIGN_RECLAIM;
	else if (!strcmp(value, "default"))
		p = NODE_FOREIGN_DEFAULT;
	else {
		snprintf(why, whylen,
		         "foreign: write keep (instances accelfs did not make stay), reclaim (they are destroyed once "
		         "idle) or default (as --foreign says)");
		return -EINVAL;
	}
	ret = node_refuse_read_only(node, "nothing is changed", why, whylen);
	if (ret)
		return ret;
	node_topo_rdlock(node);
	ret = node_card_take(node, device, "its foreign instances are left as they are", 0, &nc, why, whylen);
	if (ret) {
		node_topo_unlock(node);
		return ret;
	}
	ret = node_foreign_store(node, nc, p, why, whylen);
	if (!ret) {
		if (nc->foreign != p)
			accel_log(p == NODE_FOREIGN_RECLAIM || (p == NODE_FOREIGN_DEFAULT && node->opt.foreign_reclaim)
			                  ? ACCEL_LOG_NOTICE
			                  : ACCEL_LOG_INFO,
			          "%s: foreign instances are %s from now on (mig/foreign: %s)", device,
			          p == NODE_FOREIGN_RECLAIM || (p == NODE_FOREIGN_DEFAULT && node->opt.foreign_reclaim)
			                  ? "reclaimed once idle"
			                  : "kept",
			          value);
		nc->foreign = p;
		node_card_refresh(node, nc, false); /* the notes say what happens now; the poller acts */
	}
	node_unlock(&nc->lock, NODE_LOCK_CARD);
	node_topo_unlock(node);
	accel_snapshot_unref(node_publish(node));
	if (!ret)
		accel_node_kick(node);
	return ret;
}

/* ---- adopting -------------------------------------------------------------- */

struct adopt_ask {
	unsigned gi;
	const char *uuid; /* NULL: any */
	const char *job;
	uid_t uid;
	gid_t gid;
};

/* The live instance asked for, as the driver says now, and the profile it is of; -errno with why. */
static int adoptable(struct node_card *nc, const struct adopt_ask *a, const struct accel_live_gi **out,
                     const struct accel_profile **profile, char *why, size_t whylen)
{
	const struct accel_live_gi *g = accel_inventory_gi(&nc->inv, a->gi);

	if (!g) {
		snprintf(why, whylen, "%s has no GPU instance %u", nc->card.name, a->gi);
		return -ENOENT;
	}
	for (size_t r = 0; r < nc->n_records; r++)
		if (nc->records[r].gi == g->id && nc->records[r].profile_id == g->profile_id &&
		    nc->records[r].placement.start == g->placement.start &&
		    nc->records[r].placement.size == g->placement.size && g->n_ci &&
		    (!strcmp(nc->records[r].uuid, g->ci[0].uuid) || nc->records[r].phase == ACCEL_RECORD_REMOVING)) {
			snprintf(why, whylen, "GPU instance %u is job %s's already", g->id, nc->records[r].job);
			return -EBUSY;
		}
	/* A job is one device: one compute instance covering its GPU instance; someone's subdivision stays theirs. */
	if (g->n_ci != 1 || accel_live_gi_subdivided(g)) {
		if (g->n_ci == 1)
			snprintf(
				why, whylen,
				"GPU instance %u is subdivided by hand: its compute instance %u covers part of it; a job "
				"is one compute instance covering its GPU instance, so nothing was adopted",
				g->id, g->ci[0].id);
		else
			snprintf(why, whylen,
			         "GPU instance %u %s %u compute instances: a job is one compute instance covering its "
			         "GPU instance, so nothing was adopted",
			         g->id, g->n_ci ? "is subdivided by hand into" : "has", g->n_ci);
		return -EBUSY;
	}
	if (a->uuid && strcmp(a->uuid, g->ci[0].uuid)) {
		snprintf(why, whylen, "GPU instance %u is %s now, not %.96s: nothing was adopted", g->id, g->ci[0].uuid,
		         a->uuid);
		return -ESTALE;
	}
	*profile = NULL;
	for (size_t i = 0; nc->mode && i < nc->catalog.n_profiles && !*profile; i++)
		if (nc->catalog.profiles[i].id == g->profile_id)
			*profile = &nc->catalog.profiles[i];
	if (!*profile) {
		snprintf(why, whylen, "GPU instance %u is of profile %u, which %s does not offer", g->id, g->profile_id,
		         nc->card.name);
		return -EINVAL;
	}
	*out = g;
	return 0;
}

/* The card's lock held: make the instance the job, its record written durably first. */
static int adopt_locked(struct accel_node *node, struct node_card *nc, const struct adopt_ask *a, char *why,
                        size_t whylen)
{
	const struct accel_live_gi *g = NULL;
	const struct accel_profile *p = NULL;
	struct accel_devnode *nodes = NULL;
	struct accel_record rec, *grown;
	size_t n_nodes = 0;
	int ret;

	/* What the driver says now: the instance may have gone, or been made again, since the caller looked. */
	node_card_refresh(node, nc, false);
	if (nc->view && nc->view->refused) {
		snprintf(why, whylen, "%s is refused: %s", nc->card.name, nc->view->refusal);
		return -EBUSY;
	}
	ret = adoptable(nc, a, &g, &p, why, whylen);
	if (ret)
		return ret;
	ret = node_quota_hold(node, a->job, a->uid, a->gid, p->name, p->span, why, whylen);
	if (ret)
		return ret;
	/* A job whose device nodes cannot be proven would be lost at once: refuse before anything is written. */
	ret = accel_job_nodes(&nc->card, g->id, g->ci[0].id, &nodes, &n_nodes, why, whylen);
	if (ret)
		goto out;
	memset(&rec, 0, sizeof(rec));
	snprintf(rec.family, sizeof(rec.family), "%s", nc->card.family->tree_prefix);
	snprintf(rec.card_uuid, sizeof(rec.card_uuid), "%s", nc->ident.uuid);
	rec.ordinal = nc->card.ordinal;
	snprintf(rec.job, sizeof(rec.job), "%s", a->job);
	snprintf(rec.profile, sizeof(rec.profile), "%s", p->vendor_name);
	rec.profile_id = p->id;
	rec.gi = g->id;
	rec.ci = g->ci[0].id;
	rec.ci_profile_id = g->ci[0].profile_id;
	rec.placement = g->placement;
	snprintf(rec.uuid, sizeof(rec.uuid), "%s", g->ci[0].uuid);
	rec.uid = a->uid;
	rec.gid = a->gid;
	rec.created = (int64_t)time(NULL);
	rec.phase = ACCEL_RECORD_ACTIVE;
	rec.mig_index = UINT_MAX;
	grown = realloc(nc->records, (nc->n_records + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(why, whylen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	nc->records = grown;
	/* The one step that adopts: before it the instance is foreign, after it the job's (a rename, synced). */
	ret = accel_record_write(node->state_dir, &rec, why, whylen);
	if (ret)
		goto out;
	nc->records[nc->n_records++] = rec;
	for (size_t i = 0; i < nc->n_intents; i++)
		if (accel_intent_matches(&nc->intents[i], g)) {
			node_drop_intent(node, nc, nc->intents[i].job, nc->intents[i].placement.start, true);
			break;
		}
	log_notice("%s/%s: adopted GPU instance %u (compute instance %u, placement %u:%u, %s) as job %s for uid %u "
	           "gid %u: nothing was destroyed",
	           nc->card.name, p->name, rec.gi, rec.ci, rec.placement.start, rec.placement.size, rec.uuid, a->job,
	           (unsigned)a->uid, (unsigned)a->gid);
	node_card_forget_carved(nc);
	nc->carved_gi = rec.gi;
	nc->carved_ci = rec.ci;
	nc->carved_nodes = nodes;
	nc->n_carved_nodes = n_nodes;
	nodes = NULL;
	node_card_rebuild(node, nc);
out:
	free(nodes);
	node_quota_release(node, a->job);
	return ret;
}

int accel_node_adopt(struct accel_node *node, const char *device, unsigned gi, const char *uuid, const char *job,
                     uid_t uid, gid_t gid, char *why, size_t whylen)
{
	struct adopt_ask a = { gi, uuid && uuid[0] ? uuid : NULL, job, uid, gid };
	struct node_card *nc;
	int ret;

	why[0] = '\0';
	ret = node_refuse_read_only(node, "nothing is adopted", why, whylen);
	if (ret)
		return ret;
	ret = node_claim_name(node, job, false, why, whylen);
	if (ret)
		return ret;
	ret = node_card_take(node, device, "nothing there can be adopted", 0, &nc, why, whylen);
	if (!ret) {
		ret = adopt_locked(node, nc, &a, why, whylen);
		node_unlock(&nc->lock, NODE_LOCK_CARD);
	}
	node_unclaim_name(node, job);
	accel_snapshot_unref(node_publish(node));
	return ret;
}
