/* SPDX-License-Identifier: MIT */
/*
 * A card's view and records, for every file that changes them: installing a
 * view built elsewhere, dropping a record, and the whole view of an absent
 * card (one the driver does not give us), which its records alone make.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/policy/admits.h"
#include "core/driver/carve.h"
#include "core/model/log.h"

void node_install_view(struct accel_node *node, struct node_card *nc, struct accel_device *v)
{
	struct accel_device *shared, *old;

	accel_health_book_apply(&nc->health, v);
	v->hold = nc->hold;
	accel_device_admission(v); /* what it can take, with every profile's available */
	if (nc->view && accel_device_equal(nc->view, v)) {
		accel_device_clear(v);
		return;
	}
	shared = accel_device_share(v);
	if (!shared) {
		log_error("%s: out of memory installing its view; the tree keeps the previous one", nc->card.name);
		return;
	}
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	old = nc->view;
	nc->view = shared;
	node_names_swap(node, old, shared);
	node_unlock(&node->view_lock, NODE_LOCK_VIEW);
	accel_device_unref(old);
}

void node_card_reshow(struct accel_node *node, struct node_card *nc)
{
	struct accel_device v;
	bool have = false;

	memset(&v, 0, sizeof(v));
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	if (nc->view)
		have = accel_device_copy(&v, nc->view) == 0;
	node_unlock(&node->view_lock, NODE_LOCK_VIEW);
	if (have) {
		v.refs = 0;
		node_install_view(node, nc, &v);
	}
}

void node_card_forget_carved(struct node_card *nc)
{
	free(nc->carved_nodes);
	nc->carved_nodes = NULL;
	nc->n_carved_nodes = 0;
}

int node_drop_record(struct accel_node *node, struct node_card *nc, size_t i, char *why, size_t whylen)
{
	int ret = accel_record_remove(node->state_dir, &nc->records[i], why, whylen);

	if (ret)
		return ret;
	memmove(&nc->records[i], &nc->records[i + 1], (nc->n_records - i - 1) * sizeof(*nc->records));
	nc->n_records--;
	return 0;
}

int node_add_intent(struct accel_node *node, struct node_card *nc, const struct accel_intent *in, char *why,
                    size_t whylen)
{
	struct accel_intent *grown = realloc(nc->intents, (nc->n_intents + 1) * sizeof(*grown));
	struct accel_intent mine = *in;
	int ret;

	if (!grown) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	nc->intents = grown;
	/* Bound to this boot: an instance does not outlive the kernel (core/state/intent.h). */
	snprintf(mine.boot, sizeof(mine.boot), "%s", accel_boot_id());
	ret = accel_intent_write(node->state_dir, nc->card.family->tree_prefix, nc->ident.uuid, &mine, why, whylen);
	if (ret)
		return ret;
	nc->intents[nc->n_intents++] = mine;
	return 0;
}

int node_intend(struct accel_node *node, struct node_card *nc, const char *job, unsigned profile_id,
                struct accel_span placement, char *why, size_t whylen)
{
	struct accel_intent in = {
		.profile_id = profile_id, .placement = placement, .gi = UINT_MAX, .created = (int64_t)time(NULL)
	};

	snprintf(in.job, sizeof(in.job), "%s", job);
	return node_add_intent(node, nc, &in, why, whylen);
}

void node_drop_intent(struct accel_node *node, struct node_card *nc, const char *job, unsigned start, bool durable)
{
	char why[ACCEL_TEXT_MAX];

	for (size_t i = 0; i < nc->n_intents; i++) {
		if (strcmp(nc->intents[i].job, job) || nc->intents[i].placement.start != start)
			continue;
		/* Kept in memory when the file stays: what is on disk is what a restart believes. */
		if (accel_intent_remove(node->state_dir, nc->card.family->tree_prefix, nc->ident.uuid, job, start,
		                        durable, why, sizeof(why))) {
			log_error("%s: %s", nc->card.name, why);
			return;
		}
		memmove(&nc->intents[i], &nc->intents[i + 1], (nc->n_intents - i - 1) * sizeof(*nc->intents));
		nc->n_intents--;
		return;
	}
}

/* The live GPU instance a carve just made, as the driver answered it: the card's inventory without a re-read. */
int node_remember_carved(struct node_card *nc, const struct accel_profile *p, const struct accel_carve_result *res)
{
	struct accel_live_gi *grown = realloc(nc->inv.gis, (nc->inv.n_gis + 1) * sizeof(*grown));
	struct accel_live_gi *g;

	if (!grown)
		return -ENOMEM;
	nc->inv.gis = grown;
	g = &grown[nc->inv.n_gis++];
	memset(g, 0, sizeof(*g));
	g->id = res->gi;
	g->profile_id = p->id;
	g->placement = res->placement;
	g->n_ci = 1;
	g->ci[0].id = res->ci;
	snprintf(g->ci[0].uuid, sizeof(g->ci[0].uuid), "%s", res->uuid);
	return 0;
}

/* A GPU instance is gone: drop it from the card's inventory. */
void node_forget_gi(struct node_card *nc, unsigned gi)
{
	for (size_t i = 0; i < nc->inv.n_gis; i++)
		if (nc->inv.gis[i].id == gi) {
			memmove(&nc->inv.gis[i], &nc->inv.gis[i + 1], (nc->inv.n_gis - i - 1) * sizeof(*nc->inv.gis));
			nc->inv.n_gis--;
			return;
		}
}

size_t node_find_record(const struct node_card *nc, const char *job)
{
	for (size_t i = 0; i < nc->n_records; i++)
		if (!strcmp(nc->records[i].job, job))
			return i;
	return (size_t)-1;
}

void node_job_as_recorded(const struct node_card *nc, const char *job, const char *profile, struct accel_job *out)
{
	size_t i = node_find_record(nc, job);

	if (i == (size_t)-1)
		return;
	node_job_from_record(out, &nc->records[i]);
	snprintf(out->profile, sizeof(out->profile), "%s", profile);
	out->state = ACCEL_JOB_READY;
}

/* ---- an absent card ------------------------------------------------------ */

/* The profile directory a job shown from its record sits in: its name and id; nothing to carve. */
static void record_profile(struct accel_device *v, const struct accel_record *r, const char *published)
{
	struct accel_profile *p;

	for (size_t i = 0; i < v->n_profiles; i++)
		if (!strcmp(v->profiles[i].name, published))
			return;
	p = &v->profiles[v->n_profiles++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", published);
	snprintf(p->vendor_name, sizeof(p->vendor_name), "%s", r->profile);
	p->id = r->profile_id;
	p->span = r->placement.size;
}

void node_job_from_record(struct accel_job *j, const struct accel_record *r)
{
	memset(j, 0, sizeof(*j));
	snprintf(j->name, sizeof(j->name), "%s", r->job);
	j->profile_id = r->profile_id;
	j->gi = r->gi;
	j->ci = r->ci;
	j->placement = r->placement;
	snprintf(j->uuid, sizeof(j->uuid), "%s", r->uuid);
	j->uid = r->uid;
	j->gid = r->gid;
	j->created = r->created;
}

/*
 * v's jobs from nc's records (v holds none yet; cleared, and the failure
 * logged, when memory runs out): each lost, or removing
 * where a crash interrupted its removal, with "<card> <why>" as its
 * reason, in the profile directory its record names.  For a card whose
 * driver does not answer: its jobs stay in the tree, so that their names
 * stay taken and whatever refers to them (a container's attachment, a
 * reclaim setting) is not taken for the leftover of a removed job.
 */
int node_view_record_jobs(const struct node_card *nc, struct accel_device *v, const char *why)
{
	v->profiles = calloc(nc->n_records + 1, sizeof(*v->profiles));
	v->jobs = calloc(nc->n_records + 1, sizeof(*v->jobs));
	if (!v->profiles || !v->jobs) {
		accel_device_clear(v);
		log_error("%s: out of memory building its view; the tree keeps the previous one", nc->card.name);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nc->n_records; i++) {
		const struct accel_record *r = &nc->records[i];
		struct accel_job *j = &v->jobs[v->n_jobs++];

		node_job_from_record(j, r);
		accel_name_publish(r->profile, nc->fam->family->publish_geometry, j->profile, sizeof(j->profile));
		record_profile(v, r, j->profile);
		/* A removal a crash interrupted is finished when the card answers; the rest fail closed until then. */
		j->state = r->phase == ACCEL_RECORD_REMOVING ? ACCEL_JOB_REMOVING : ACCEL_JOB_LOST;
		snprintf(j->state_reason, sizeof(j->state_reason), "%s %s", nc->card.name, why);
	}
	return 0;
}

void node_absent_rebuild(struct accel_node *node, struct node_card *nc)
{
	struct accel_device v;
	size_t used;

	v = nc->ident;
	v.refs = 0;
	v.profiles = NULL;
	v.jobs = NULL;
	v.instances = NULL;
	v.card_nodes = NULL;
	v.n_profiles = v.n_jobs = v.n_instances = v.n_card_nodes = 0;
	/* Everything a refused card does not do, an absent one does not either: no carve, no reclaim, nothing available. */
	v.refused = true;
	v.absent = true;
	/* Its jobs were carved with the mode on: that is the last thing known of it. */
	v.mig_enabled = v.mig_pending_enabled = true;
	used = (size_t)snprintf(v.refusal, sizeof(v.refusal),
	                        "%s; %zu job%s kept from %s records until the card is back "
	                        "or rmdir removes %s",
	                        nc->absent_why, nc->n_records, nc->n_records == 1 ? "" : "s",
	                        nc->n_records == 1 ? "its" : "their", nc->n_records == 1 ? "it" : "them");
	if (nc->n_bad && used < sizeof(v.refusal))
		snprintf(v.refusal + used, sizeof(v.refusal) - used, "; %zu unreadable record(s), e.g. %s: %s",
		         nc->n_bad, nc->bad[0].path, nc->bad[0].why);
	if (node_view_record_jobs(nc, &v, "is absent: the job comes back with its card, or rmdir forgets it"))
		return;
	node_install_view(node, nc, &v);
}

int node_absent_forget(struct accel_node *node, struct node_card *nc, size_t i, char *why, size_t whylen)
{
	const struct accel_record *r = &nc->records[i];
	struct accel_intent in = {
		.profile_id = r->profile_id, .placement = r->placement, .gi = r->gi, .created = (int64_t)time(NULL)
	};
	char job[ACCEL_JOB_NAME_MAX + 1];
	int ret;

	snprintf(job, sizeof(job), "%s", r->job);
	snprintf(in.job, sizeof(in.job), "%s", r->job);
	snprintf(in.uuid, sizeof(in.uuid), "%s", r->uuid);
	/* The instance stays accelfs's own (an orphan, not a foreign one) if the card comes back with it. */
	ret = node_add_intent(node, nc, &in, why, whylen);
	if (!ret)
		ret = node_drop_record(node, nc, i, why, whylen);
	if (ret)
		return ret;
	log_warn("%s: job %s: forgotten: the card is absent, so nothing was destroyed; if it comes back with the "
	         "job's instance, that instance is an orphan and is reclaimed",
	         nc->card.name, job);
	node_absent_rebuild(node, nc);
	return 0;
}
