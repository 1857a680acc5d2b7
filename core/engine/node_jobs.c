/* SPDX-License-Identifier: MIT */
/*
 * mkdir and rmdir: job names unique on the node, carving on a card or on
 * whichever card a node-level request should take, and reclaiming.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/policy/admits.h"
#include "core/driver/carve.h"
#include "core/model/log.h"
#include "core/engine/metrics.h"
#include "core/policy/place.h"

/* What an absent card's refusal of a carve says is left undone. */
#define NODE_NOT_CARVED "nothing is carved on it"

/* Choices a node-level mkdir makes before it gives up on a node that never stops changing (EAGAIN). */
#define NODE_CHOICES_MAX 1000

/* ---- mkdir / rmdir ------------------------------------------------------ */

/* What a carve is asked: the same from the mkdir that names a card, the one that lets the node choose, and a layout's. */
struct carve_ask {
	const char *profile; /* the published name, as the tree says it */
	const char *job;
	uid_t uid;
	gid_t gid;
	long want_start;        /* < 0: the lowest free placement; else the one starting there */
	bool exact;             /* want_start and no other */
	bool layout;            /* a layout's job: its name was checked for it once, when it was claimed */
	struct accel_job *made; /* what mkdir answers with; NULL: nothing */
};

struct commit_ctx {
	struct accel_node *node;
	struct node_card *nc;
	const struct accel_profile *profile;
	const struct carve_ask *a;
};

static int commit_record(void *ctx, const struct accel_carve_result *res, char *why, size_t whylen)
{
	struct commit_ctx *c = ctx;
	struct accel_record r, *grown;
	int ret;

	memset(&r, 0, sizeof(r));
	snprintf(r.family, sizeof(r.family), "%s", c->nc->card.family->tree_prefix);
	snprintf(r.card_uuid, sizeof(r.card_uuid), "%s", c->nc->ident.uuid);
	r.ordinal = c->nc->card.ordinal;
	snprintf(r.job, sizeof(r.job), "%s", c->a->job);
	snprintf(r.profile, sizeof(r.profile), "%s", c->profile->vendor_name);
	r.profile_id = c->profile->id;
	r.gi = res->gi;
	r.ci = res->ci;
	r.ci_profile_id = res->ci_profile_id;
	r.placement = res->placement;
	snprintf(r.uuid, sizeof(r.uuid), "%s", res->uuid);
	r.uid = c->a->uid;
	r.gid = c->a->gid;
	r.created = (int64_t)time(NULL);
	r.phase = ACCEL_RECORD_ACTIVE;
	r.mig_index = res->mig_index;

	grown = realloc(c->nc->records, (c->nc->n_records + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->nc->records = grown;
	ret = accel_record_write(c->node->state_dir, &r, why, whylen);
	if (ret)
		return ret;
	c->nc->records[c->nc->n_records++] = r;
	return 0;
}

/* Did a reading change what a carve decides on: the mode, or which GPU instances live where? */
static bool same_knowledge(bool mode, const struct accel_inventory *before, const struct node_card *nc)
{
	if (mode != nc->mode || before->n_gis != nc->inv.n_gis)
		return false;
	for (size_t i = 0; i < before->n_gis; i++) {
		const struct accel_live_gi *a = &before->gis[i], *b = &nc->inv.gis[i];
		if (a->id != b->id || a->profile_id != b->profile_id || a->placement.start != b->placement.start ||
		    a->placement.size != b->placement.size)
			return false;
	}
	return true;
}

/* The placement, the intent and the carve, with the job's quota held by the caller; -EAGAIN etc. as carve_on. */
static int carve_held(struct accel_node *node, struct node_card *nc, const struct accel_profile *p,
                      const struct carve_ask *a, char *why, size_t whylen)
{
	struct accel_carve_result res;
	struct accel_span *used = calloc(nc->inv.n_gis + 1, sizeof(*used));
	size_t n_used;
	int want = -1, ret;

	if (!used) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	n_used = accel_inventory_spans(&nc->inv, used, nc->inv.n_gis);
	if (a->want_start >= 0 && a->exact) {
		want = accel_place_exact(nc->card.name, &nc->inv, nc->view, p, a->want_start, used, n_used, why,
		                         whylen);
		if (want < 0) {
			free(used);
			return want; /* the caller's choice: not legal, or taken (who holds it is in why) */
		}
	} else if (a->want_start >= 0) {
		want = accel_place_again(nc->view, p, a->want_start, used, n_used);
		if (want < 0) {
			free(used);
			snprintf(why, whylen, "%s has no free placement of %s any more", nc->card.name, a->profile);
			return -EAGAIN; /* another carve got there first: a race lost, not a full node */
		}
	}
	if (want < 0)
		want = accel_ledger_pick(p->placements, p->n_placements, used, n_used);
	/* Said durably before the driver is asked: after any crash, the instance is known for accelfs's own. */
	ret = want >= 0 ? node_intend(node, nc, a->job, p->id, p->placements[want], why, whylen) : 0;
	if (ret) {
		free(used);
		return ret;
	}
	struct commit_ctx ctx = { node, nc, p, a };
	ret = accel_carve(&nc->card, p, want, used, n_used, commit_record, &ctx, &res, why, whylen);
	free(used);
	/* Recorded, or nothing left: the intent is spent.  Left behind, it keeps the instance ours (an orphan). */
	if (want >= 0 && (!ret || !res.left_behind))
		node_drop_intent(node, nc, a->job, p->placements[want].start, false);
	if (ret)
		return ret;
	/* The carve read the new job's nodes: the rebuild below takes them instead of reading them again. */
	node_card_forget_carved(nc);
	nc->carved_gi = res.gi;
	nc->carved_ci = res.ci;
	nc->carved_nodes = res.nodes;
	nc->n_carved_nodes = res.n_nodes;
	log_info("%s/%s: carved job %s for uid %u gid %u: GPU instance %u, compute instance %u, placement %u:%u, %s",
	         nc->card.name, a->profile, a->job, (unsigned)a->uid, (unsigned)a->gid, res.gi, res.ci,
	         res.placement.start, res.placement.size, res.uuid);
	if (node_remember_carved(nc, p, &res))
		node_card_refresh(node, nc, false); /* out of memory: learn it from the driver instead */
	else
		node_card_rebuild(node, nc);
	return 0;
}

/* One decision and one carve on what the card knows; -EAGAIN etc. as carve_on. */
static int carve_once(struct accel_node *node, struct node_card *nc, const struct carve_ask *a, char *why,
                      size_t whylen)
{
	const struct accel_profile *p = NULL;
	int ret;

	if (nc->mode)
		for (size_t i = 0; i < nc->catalog.n_profiles && !p; i++)
			if (!strcmp(nc->catalog.profiles[i].name, a->profile))
				p = &nc->catalog.profiles[i];
	if (!p) {
		snprintf(why, whylen, "%s does not offer %s (MIG mode off, or no such profile)", nc->card.name,
		         a->profile);
		return -ENOENT;
	}
	if (nc->view && nc->view->refused) {
		/* Read without view_lock: only this card's lock holder replaces its view. */
		snprintf(why, whylen, "%s is refused: %s", nc->card.name, nc->view->refusal);
		return -EBUSY;
	}
	/*
	 * What the job costs its owner (core/engine/quota_check.c), held here and let
	 * go here alone: until the view shows the job, which then counts it,
	 * or until the carve made nothing.
	 */
	ret = node_quota_hold(node, a->job, a->uid, a->gid, p->name, p->span, why, whylen);
	if (ret)
		return ret;
	ret = carve_held(node, nc, p, a, why, whylen);
	node_quota_release(node, a->job);
	if (!ret && a->made)
		node_job_as_recorded(nc, a->job, a->profile, a->made);
	return ret;
}

/* May the job be carved on the card now (card lock held)?  0 (a refused card: the carve says), or the errno with why. */
static int card_admits(const struct node_card *nc, bool layout, char *why, size_t whylen)
{
	int ret = nc->view && !nc->view->refused ? accel_device_admits_job(nc->view, layout) : 0;

	if (ret)
		snprintf(why, whylen, "%s", nc->view->admits.why);
	return ret;
}

/*
 * Carve on one card: the node's topology read-held, the job's name claimed,
 * the card's lock held and the card present (node_card_take).
 * want_start < 0 takes the lowest free placement; otherwise the placement
 * starting there, or the card's best one if another carve took it since
 * (-EAGAIN when the card has none left: a race lost, the card is not read
 * again for it); exact: that placement and no other (-EINVAL when it is not
 * legal, -ENOSPC naming who holds it when it is not free).
 *
 * It decides on what the card knows (the last reading, kept current by
 * every carve and reclaim), without asking the driver again: the driver
 * refuses a placement that is not free, and a failure makes the card be
 * read again and, if that showed something new (an instance carved by
 * hand, a mode flipped), the decision be made once more.  On success the
 * card's view already shows the job, built from what the carve itself
 * produced: no later reading can turn the answer into a failure.
 */
static int carve_on(struct accel_node *node, struct node_card *nc, const struct carve_ask *a, char *why, size_t whylen)
{
	int ret;

	/* A card never read, or refused, is read now: a refusal may be over.  Then what it takes (core/policy/admits.c). */
	if (!nc->view || nc->view->refused || !nc->catalog_valid)
		node_card_refresh(node, nc, false);
	ret = card_admits(nc, a->layout, why, whylen);
	if (ret)
		return ret;
	ret = carve_once(node, nc, a, why, whylen);
	if (ret && ret != -ENOMEM && ret != -EAGAIN && ret != -EDQUOT) {
		struct accel_inventory before = { 0 };
		bool mode = nc->mode;

		before.gis = calloc(nc->inv.n_gis + 1, sizeof(*before.gis));
		if (before.gis) {
			if (nc->inv.n_gis) /* an empty card's gis may be NULL: never memcpy from NULL */
				memcpy(before.gis, nc->inv.gis, nc->inv.n_gis * sizeof(*before.gis));
			before.n_gis = nc->inv.n_gis;
		}
		/* The driver said no, or the card looked full: what is on it now is the driver's to say. */
		node_card_refresh(node, nc, false);
		if (before.gis && !same_knowledge(mode, &before, nc))
			ret = carve_once(node, nc, a, why, whylen);
		accel_inventory_clear(&before);
	}
	return ret;
}

/*
 * How loud a refusal is.  What a user's own command met (no room, a name
 * taken or not legal, a job gone or in use, a read-only mount) is normal
 * operation: notice, so that `journalctl -p warning` keeps only what needs
 * an administrator.  A driver that could not finish (busy after the
 * retries, a race lost) is a warning; the rest (I/O, the records) errors.
 */
static enum accel_log_level refusal_level(int ret)
{
	switch (-ret) {
	case ENOSPC:
	case EEXIST:
	case EINVAL:
	case ENAMETOOLONG:
	case ENOENT:
	case ENODEV:
	case ESTALE:
	case EROFS:
	case EPERM:
	case EACCES:
	case EDQUOT:
		return ACCEL_LOG_NOTICE;
	case EBUSY:
	case EAGAIN:
		return ACCEL_LOG_WARN;
	default:
		return ACCEL_LOG_ERROR;
	}
}

static void finish_op(struct accel_node *node, const char *key, const char *what, const char *job, int ret,
                      const char *why)
{
	if (ret) {
		accel_log(refusal_level(ret), "%s: %s %.64s: %s", key, what, job, why);
		accel_node_set_last_error(node, key, why);
	} else {
		accel_node_set_last_error(node, key, "");
	}
}

/*
 * What every mkdir starts with: the read-only refusal, then the name checked
 * and claimed, the topology read-held (on success only).
 */
static int begin_mkdir(struct accel_node *node, const char *job, bool layout, char *why, size_t whylen)
{
	int ret = node_refuse_read_only(node, "nothing is carved", why, whylen);

	return ret ? ret : node_claim_name(node, job, layout, why, whylen);
}

/* The name is released only once the card's view shows the job: no second mkdir can take it meanwhile. */
static void end_mkdir(struct accel_node *node, const char *job)
{
	node_unclaim_name(node, job);
	accel_snapshot_unref(node_publish(node));
}

/* mkdir on one device: at the lowest free placement (want_start < 0), or exactly at the caller's start. */
static int mkdir_on(struct accel_node *node, const char *device, const char *profile, const char *job, long want_start,
                    bool layout, uid_t uid, gid_t gid, struct accel_job *made, char *why, size_t whylen)
{
	struct carve_ask ask = { profile, job, uid, gid, want_start, want_start >= 0, layout, made };
	char key[ACCEL_LAST_ERROR_KEY_MAX];
	struct node_card *nc;
	int ret;
	uint64_t t0 = accel_metrics_now();

	why[0] = '\0';
	accel_last_error_key(key, sizeof(key), device, profile);
	ret = begin_mkdir(node, job, layout, why, whylen);
	if (!ret) {
		ret = node_card_take(node, device, NODE_NOT_CARVED, 0, &nc, why, whylen);
		if (!ret) {
			ret = carve_on(node, nc, &ask, why, whylen);
			node_unlock(&nc->lock, NODE_LOCK_CARD);
		}
		end_mkdir(node, job);
	}
	finish_op(node, key, "mkdir", job, ret, why);
	accel_metrics_carve(ret, t0);
	return ret;
}

int accel_node_mkdir(struct accel_node *node, const char *device, const char *profile, const char *job, uid_t uid,
                     gid_t gid, struct accel_job *made, char *why, size_t whylen)
{
	return mkdir_on(node, device, profile, job, -1, false, uid, gid, made, why, whylen);
}

int accel_node_mkdir_at(struct accel_node *node, const char *device, const char *profile, const char *job,
                        unsigned start, uid_t uid, gid_t gid, struct accel_job *made, char *why, size_t whylen)
{
	return mkdir_on(node, device, profile, job, (long)start, false, uid, gid, made, why, whylen);
}

int accel_node_mkdir_layout(struct accel_node *node, const char *device, const char *profile, const char *job,
                            unsigned start, uid_t uid, gid_t gid, char *why, size_t whylen)
{
	return mkdir_on(node, device, profile, job, (long)start, true, uid, gid, NULL, why, whylen);
}

int accel_node_mkdir_any(struct accel_node *node, const char *profile, const char *job, uid_t uid, gid_t gid,
                         char *device, size_t len, struct accel_job *made, char *why, size_t whylen)
{
	struct accel_place_refused refused = { .n = 0 };
	char key[ACCEL_LAST_ERROR_KEY_MAX];
	int ret;
	uint64_t t0 = accel_metrics_now();

	why[0] = '\0';
	device[0] = '\0';
	accel_last_error_key(key, sizeof(key), NULL, profile);
	ret = begin_mkdir(node, job, false, why, whylen);
	if (ret)
		goto out;
	/*
	 * Choose from the newest snapshot.  The carve decides again under the
	 * card's lock (the chosen placement, or the card's best one if another
	 * carve took it since the snapshot).  A card found full there is a race
	 * lost: choose again, from a snapshot that shows what was learnt.  A
	 * card whose driver refused (ENOSPC, EBUSY) is left out of the next
	 * choices.  ENOSPC only when no other card fits.  Each lost race is some
	 * other carve's success: the bound only keeps a node that never stops
	 * changing from holding this mkdir forever.
	 */
	struct accel_quota_table table = { 0 };
	if (accel_node_quota_table(node, &table)) {
		ret = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto end;
	}
	for (unsigned attempt = 0;; attempt++) {
		struct accel_snapshot *s = attempt ? node_publish(node) : accel_node_snapshot(node);
		/* Only devices where the job keeps its owner within the quota (their profile's slices). */
		struct accel_place_quota quota = { .table = &table, .job = job, .uid = uid, .gid = gid };
		struct node_card *nc;
		long start = -1;

		ret = s ? accel_place_choose(s, profile, &refused, &quota, device, len, &start) : -ENOMEM;
		accel_snapshot_unref(s);
		if (ret == -ENOMEM) {
			snprintf(why, whylen, "out of memory");
			break;
		}
		if (ret == -EDQUOT) {
			snprintf(why, whylen, "%s", quota.why);
			break;
		}
		if (ret == -ENOSPC && refused.n) {
			snprintf(why, whylen, "no other device has a free placement for %s; %s", profile, refused.why);
			break;
		}
		if (ret == -ENOSPC) {
			snprintf(why, whylen, "no device has a free placement for %s", profile);
			break;
		}
		if (attempt >= NODE_CHOICES_MAX) {
			snprintf(
				why, whylen,
				"the devices kept changing while one was chosen (%u choices overtaken by other carves): "
				"try again",
				attempt);
			ret = -EAGAIN;
			break;
		}
		ret = node_card_take(node, device, NODE_NOT_CARVED, 0, &nc, why, whylen);
		if (ret == -ENOENT) {
			why[0] = '\0';
			continue; /* a snapshot from before a rescan: the next one knows */
		}
		if (!ret) {
			struct carve_ask ask = { profile, job, uid, gid, start, false, false, made };

			ret = carve_on(node, nc, &ask, why, whylen);
			node_unlock(&nc->lock, NODE_LOCK_CARD);
		}
		if (ret == -EAGAIN) {
			log_debug("mig/%s: job %s lost its placement on %s: %s; choosing again", profile, job, device,
			          why);
			continue;
		}
		if ((ret != -ENOSPC && ret != -EBUSY) || !accel_place_refuse(&refused, device, why))
			break;
		log_info("mig/%s: job %s: %s refused: %s; choosing another device", profile, job, device, why);
	}
end:
	accel_quota_table_free(&table);
	end_mkdir(node, job);
out:
	finish_op(node, key, "mkdir", job, ret, why);
	accel_metrics_carve(ret, t0);
	return ret;
}

/* Replace the phase of a record, durably; the in-memory copy follows the disk. */
static int set_phase(struct accel_node *node, struct accel_record *r, enum accel_record_phase phase, char *why,
                     size_t whylen)
{
	struct accel_record copy = *r;
	int ret;

	copy.phase = phase;
	ret = accel_record_write(node->state_dir, &copy, why, whylen);
	if (!ret)
		r->phase = phase;
	return ret;
}

/*
 * Reclaim a job (core/engine/node.h): stopped midway, it stays "removing", owning
 * what is left; one that destroyed nothing leaves the job as it was.
 */
int accel_node_rmdir_instance(struct accel_node *node, const char *device, const char *profile, const char *job,
                              const char *uuid, char *why, size_t whylen)
{
	char key[ACCEL_LAST_ERROR_KEY_MAX], vendor[ACCEL_NAME_MAX];
	struct node_card *nc;
	bool resume, progressed = false;
	size_t i;
	int ret;
	uint64_t t0 = accel_metrics_now();

	why[0] = '\0';
	accel_last_error_key(key, sizeof(key), device, profile);
	ret = node_refuse_read_only(node, "nothing is destroyed", why, whylen);
	if (ret)
		return ret;
	node_topo_rdlock(node);
	ret = node_card_take(node, device, NULL, 0, &nc, why, whylen); /* an absent card's job is forgotten */
	if (ret) {
		node_topo_unlock(node);
		return ret;
	}
	i = node_find_record(nc, job);
	accel_name_vendor(profile, nc->card.family->publish_geometry, vendor, sizeof(vendor));
	if (i == (size_t)-1 || strcmp(nc->records[i].profile, vendor)) {
		snprintf(why, whylen, "no job %s under %s/%s", job, device, profile);
		ret = -ENOENT;
		goto out;
	}
	if (uuid && uuid[0] && strcmp(nc->records[i].uuid, uuid)) { /* removed and made again since uuid was read */
		snprintf(why, whylen, "job %s under %s/%s is instance %s now, not %.95s: nothing was removed", job,
		         device, profile, nc->records[i].uuid, uuid);
		ret = -ESTALE;
		goto out;
	}
	if (nc->absent) {
		ret = node_absent_forget(node, nc, i, why, whylen); /* nothing there to destroy */
		goto out;
	}
	struct accel_record *r = &nc->records[i];
	unsigned gi = r->gi;
	resume = r->phase == ACCEL_RECORD_REMOVING;
	if (!resume) {
		ret = set_phase(node, r, ACCEL_RECORD_REMOVING, why, whylen);
		if (ret)
			goto out;
	}
	struct accel_expect expect = { .profile_id = r->profile_id,
		                       .placement = r->placement,
		                       .uuid = r->uuid,
		                       .ci = r->ci,
		                       .mig_index = r->mig_index,
		                       .resume = resume };
	ret = accel_reclaim(&nc->card, gi, &expect, &progressed, why, whylen);
	int ret_reclaim = ret;
	if (ret == 0 || ret == -ENOENT) /* gone: its events from now on are its own (node_tombs.c) */
		node_tomb_add(node, nc, NODE_TOMB_JOB, gi, r->ci, job, r->uuid);
	if (ret == 0 || ret == -ENOENT || ret == -ESTALE) {
		if (ret)
			log_info("%s/%s: job %s: %s; dropping its record", device, profile, job, why);
		ret = node_drop_record(node, nc, i, why, whylen);
		if (!ret) {
			log_info("%s/%s: removed job %s", device, profile, job);
			if (ret_reclaim != -ESTALE)
				node_forget_gi(nc, gi); /* gone; under ESTALE the id is someone else's instance now */
			node_card_rebuild(node, nc);
		} else {
			node_card_refresh(node, nc, false);
		}
		goto out;
	}
	if (!progressed && !resume) {
		/* Nothing was destroyed: the job is still whole and usable. */
		char ignored[256];
		if (set_phase(node, &nc->records[i], ACCEL_RECORD_ACTIVE, ignored, sizeof(ignored)))
			log_error("%s/%s: job %s: cannot restore its record: %s", device, profile, job, ignored);
	}
	if (nc->records[i].phase == ACCEL_RECORD_REMOVING) {
		size_t l = strlen(why);
		snprintf(nc->records[i].note, sizeof(nc->records[i].note), "%s", why);
		snprintf(why + l, whylen - l,
		         "; the job stays 'removing' and keeps what is left: rmdir again to resume");
	}
	node_card_refresh(node, nc, false);
out:
	node_unlock(&nc->lock, NODE_LOCK_CARD);
	node_topo_unlock(node);
	accel_snapshot_unref(node_publish(node));
	finish_op(node, key, "rmdir", job, ret, why);
	if (ret != -ESTALE) /* only another instance's name answers it: no reclaim was tried, none failed */
		accel_metrics_reclaim(ret, t0);
	return ret;
}

int accel_node_rmdir(struct accel_node *node, const char *device, const char *profile, const char *job, char *why,
                     size_t whylen)
{
	return accel_node_rmdir_instance(node, device, profile, job, NULL, why, whylen);
}
