/* SPDX-License-Identifier: MIT */
/*
 * Re-reading one card from its driver: mode, catalogue, live instances;
 * reconciling them with the records; carrying out what reconciliation
 * decided; and building the card's view for the next snapshot.
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

#include "core/driver/carve.h"
#include "core/driver/devnodes.h"
#include "core/model/log.h"
#include "core/engine/metrics.h"
#include "core/driver/udev_watch.h"

static void log_drops(struct node_card *nc)
{
	char sig[sizeof(nc->drops_logged)] = "";
	size_t off = 0;

	for (size_t i = 0; i < nc->catalog.n_drops; i++) {
		int w = snprintf(sig + off, sizeof(sig) - off, "%u:%s;", nc->catalog.drops[i].id,
		                 nc->catalog.drops[i].why);
		if (w > 0 && (size_t)w < sizeof(sig) - off)
			off += (size_t)w;
	}
	if (!strcmp(sig, nc->drops_logged))
		return;
	snprintf(nc->drops_logged, sizeof(nc->drops_logged), "%s", sig);
	for (size_t i = 0; i < nc->catalog.n_drops; i++) {
		const struct accel_catalog_drop *d = &nc->catalog.drops[i];
		accel_log(d->warn ? ACCEL_LOG_WARN : ACCEL_LOG_INFO,
		          "%s: profile id %u ('%s', probe index %u) not offered: %s", nc->card.name, d->id, d->raw,
		          d->index, d->why);
	}
}

static const struct accel_profile *catalog_by_id(const struct accel_catalog *c, unsigned id)
{
	for (size_t i = 0; i < c->n_profiles; i++)
		if (c->profiles[i].id == id)
			return &c->profiles[i];
	return NULL;
}

/* The published name of a profile id, or the vendor name of a profile not offered. */
static void profile_label(const struct node_card *nc, unsigned id, char *buf, size_t len)
{
	const struct accel_profile *p = catalog_by_id(&nc->catalog, id);

	if (p) {
		snprintf(buf, len, "%s", p->name);
		return;
	}
	for (size_t i = 0; i < nc->catalog.n_drops; i++)
		if (nc->catalog.drops[i].id == id) {
			char vendor[ACCEL_NAME_MAX];
			accel_name_normalize(nc->catalog.drops[i].raw, vendor, sizeof(vendor));
			snprintf(buf, len, "%s", vendor[0] ? vendor : "(nameless)");
			return;
		}
	snprintf(buf, len, "profile-%u", id);
}

static bool card_idle(struct node_card *nc)
{
	struct accel_holder *h;
	size_t n;

	if (accel_card_holders(nc->card_nodes, nc->n_card_nodes, nc->card.family->control_holders_block, &h, &n))
		return false; /* unknown is not idle */
	free(h);
	return n == 0;
}

static int read_mode(struct node_card *nc, bool *current, bool *pending, char *err, size_t errlen)
{
	unsigned cur = 0, pend = 0;
	mig_return_t r = nc->card.lib->DeviceGetMigMode(nc->card.handle, &cur, &pend);

	if (r == MIG_ERROR_NOT_SUPPORTED) {
		*current = *pending = false; /* a card without MIG at all */
		return 0;
	}
	if (r != MIG_SUCCESS) {
		snprintf(err, errlen, "%s: reading the MIG mode failed: %s (%s)", nc->card.name,
		         mig_lib_strerror(nc->card.lib, r), mig_return_name(r));
		return -mig_return_errno(r);
	}
	*current = cur == MIG_DEVICE_MIG_ENABLE;
	*pending = pend == MIG_DEVICE_MIG_ENABLE;
	return 0;
}

/* Carry out what reconciliation decided; returns how many changed something. */
static int run_actions(struct accel_node *node, struct node_card *nc, const struct accel_reconcile_out *rec)
{
	/* The poller asks once per pass: a busy instance is not worth holding the card for. */
	struct accel_card once = nc->card;
	int done = 0;

	once.busy_retries = 0;
	/* Record indices shift as records are dropped: act on job names. */
	char(*jobs)[ACCEL_JOB_NAME_MAX + 1] = calloc(rec->n_actions + 1, sizeof(*jobs));

	if (!jobs)
		return 0;
	for (size_t a = 0; a < rec->n_actions; a++)
		if (rec->actions[a].kind == ACCEL_ACTION_RECLAIM_ORPHAN)
			snprintf(jobs[a], sizeof(jobs[a]), "%s", nc->intents[rec->actions[a].record].job);
		else if (rec->actions[a].kind != ACCEL_ACTION_RECLAIM_FOREIGN)
			snprintf(jobs[a], sizeof(jobs[a]), "%s", nc->records[rec->actions[a].record].job);

	for (size_t a = 0; a < rec->n_actions; a++) {
		const struct accel_action *act = &rec->actions[a];
		char why[ACCEL_TEXT_MAX];
		int ret;

		if (act->kind == ACCEL_ACTION_RECLAIM_FOREIGN) {
			char profile[ACCEL_NAME_MAX];
			profile_label(nc, act->profile_id, profile, sizeof(profile));
			done += node_reclaim_foreign(node, nc, &once, act, profile);
			continue;
		}
		if (act->kind == ACCEL_ACTION_RECLAIM_ORPHAN) {
			struct accel_expect expect = { .profile_id = act->profile_id,
				                       .placement = act->placement,
				                       .mig_index = UINT_MAX };
			ret = accel_reclaim(&once, act->gi, &expect, NULL, why, sizeof(why));
			accel_metrics_orphan(ret);
			/* Gone: what it raised is its own from now on, as a removed job's is (node_tombs.c). */
			if (ret == 0 || ret == -ENOENT)
				node_tomb_add(node, nc, NODE_TOMB_ORPHAN, act->gi,
				              act->n_ci == 1 ? act->ci : MIG_EVENT_NO_INSTANCE, jobs[a], act->uuid);
			if (ret == 0 || ret == -ENOENT)
				node_drop_intent(node, nc, jobs[a], act->placement.start, true);
			if (ret == 0) {
				log_notice(
					"%s: reclaimed orphan GPU instance %u (profile %u at %u:%u, %s): left by job "
					"%s, which no record accounts for (a carve cut short between the driver's "
					"create and its record)",
					nc->card.name, act->gi, act->profile_id, act->placement.start,
					act->placement.size, act->uuid[0] ? act->uuid : "no MIG device", jobs[a]);
				done++;
			} else if (ret == -EBUSY) {
				log_info("%s: orphan GPU instance %u is in use; left alone, rechecked next pass: %s",
				         nc->card.name, act->gi, why);
			} else if (ret != -ENOENT) {
				log_warn("%s: reclaiming orphan GPU instance %u failed: %s", nc->card.name, act->gi,
				         why);
			}
			continue;
		}
		size_t i = node_find_record(nc, jobs[a]);
		if (i == (size_t)-1)
			continue;
		if (act->kind == ACCEL_ACTION_FINISH_REMOVAL) {
			struct accel_expect expect = { .profile_id = nc->records[i].profile_id,
				                       .placement = nc->records[i].placement,
				                       .uuid = nc->records[i].uuid,
				                       .ci = nc->records[i].ci,
				                       .mig_index = nc->records[i].mig_index,
				                       .resume = true };
			ret = accel_reclaim(&once, act->gi, &expect, NULL, why, sizeof(why));
			if (ret == 0 || ret == -ENOENT) /* as rmdir's own removal (node_jobs.c) */
				node_tomb_add(node, nc, NODE_TOMB_JOB, act->gi, nc->records[i].ci, jobs[a],
				              nc->records[i].uuid);
			if (ret && ret != -ENOENT && ret != -ESTALE) {
				if (strcmp(nc->records[i].note, why))
					log_warn("%s: finishing the removal of job %s: %s", nc->card.name, jobs[a],
					         why);
				snprintf(nc->records[i].note, sizeof(nc->records[i].note), "%s", why);
				continue;
			}
		}
		if (node_drop_record(node, nc, i, why, sizeof(why)) == 0) {
			log_info("%s: job %s removed (its removal was interrupted)", nc->card.name, jobs[a]);
			done++;
		} else {
			log_error("%s: %s", nc->card.name, why);
		}
	}
	free(jobs);
	return done;
}

/* The ready job of the card's last view with the same name and instance: its nodes were proven then. */
static const struct accel_job *known_job(const struct node_card *nc, const struct accel_job *j)
{
	const struct accel_device *prev = nc->view; /* only this card's lock holder replaces it */

	for (size_t i = 0; prev && !prev->refused && i < prev->n_jobs; i++) {
		const struct accel_job *k = &prev->jobs[i];
		if (k->state == ACCEL_JOB_READY && k->n_nodes && k->gi == j->gi && k->ci == j->ci &&
		    !strcmp(k->name, j->name) && !strcmp(k->uuid, j->uuid))
			return k;
	}
	return NULL;
}

/* A job's device nodes: from the carve that made it, from the last view, or read live (see nodes_stale). */
static int job_nodes(struct node_card *nc, struct accel_job *j, char *why, size_t whylen)
{
	const struct accel_job *k;

	if (!nc->nodes_stale && nc->carved_nodes && nc->carved_gi == j->gi && nc->carved_ci == j->ci) {
		j->nodes = nc->carved_nodes;
		j->n_nodes = nc->n_carved_nodes;
		nc->carved_nodes = NULL;
		nc->n_carved_nodes = 0;
		return 0;
	}
	if (!nc->nodes_stale && (k = known_job(nc, j)) != NULL) {
		j->nodes = malloc(k->n_nodes * sizeof(*j->nodes));
		if (j->nodes) {
			memcpy(j->nodes, k->nodes, k->n_nodes * sizeof(*j->nodes));
			j->n_nodes = k->n_nodes;
			return 0;
		}
	}
	return accel_job_nodes(&nc->card, j->gi, j->ci, &j->nodes, &j->n_nodes, why, whylen);
}

static int build_jobs(struct node_card *nc, const struct accel_reconcile_out *rec, struct accel_device *v)
{
	v->jobs = calloc(nc->n_records + 1, sizeof(*v->jobs));
	if (!v->jobs)
		return -ENOMEM;
	for (size_t r = 0; r < nc->n_records; r++) {
		const struct accel_record *src = &nc->records[r];
		struct accel_job *j;
		char why[ACCEL_TEXT_MAX];

		j = &v->jobs[v->n_jobs++];
		node_job_from_record(j, src);
		accel_name_publish(src->profile, nc->card.family->publish_geometry, j->profile, sizeof(j->profile));
		j->state = rec->state[r];
		snprintf(j->state_reason, sizeof(j->state_reason), "%s", rec->reason[r]);
		if (src->phase == ACCEL_RECORD_REMOVING)
			snprintf(j->state_reason, sizeof(j->state_reason), "%s",
			         src->note[0] ? src->note : "rmdir in progress");
		if (j->state != ACCEL_JOB_READY)
			continue;
		/* A job whose nodes cannot be proven fails closed. */
		if (job_nodes(nc, j, why, sizeof(why))) {
			j->state = ACCEL_JOB_LOST;
			snprintf(j->state_reason, sizeof(j->state_reason), "%s", why);
		}
	}
	return 0;
}

static int build_instances(struct node_card *nc, const struct accel_inventory *inv,
                           const struct accel_reconcile_out *rec, struct accel_device *v)
{
	v->instances = calloc(inv->n_gis + 1, sizeof(*v->instances));
	if (!v->instances)
		return -ENOMEM;
	for (size_t g = 0; g < inv->n_gis; g++) {
		const struct accel_live_gi *live = &inv->gis[g];
		struct accel_instance *in = &v->instances[v->n_instances++];

		memset(in, 0, sizeof(*in));
		in->gi = live->id;
		in->profile_id = live->profile_id;
		in->placement = live->placement;
		in->n_ci = live->n_ci;
		for (unsigned c = 0; c < live->n_ci && c < sizeof(in->ci) / sizeof(in->ci[0]); c++)
			in->ci[c] = live->ci[c].id;
		if (live->n_ci)
			snprintf(in->uuid, sizeof(in->uuid), "%s", live->ci[0].uuid);
		profile_label(nc, live->profile_id, in->profile_name, sizeof(in->profile_name));
		if (rec->owner[g] >= 0)
			snprintf(in->job, sizeof(in->job), "%s", nc->records[rec->owner[g]].job);
		in->foreign = rec->foreign[g];
		in->subdivided = accel_live_gi_subdivided(live);
		snprintf(in->note, sizeof(in->note), "%s", rec->note[g]);
	}
	return 0;
}

static int build_profiles(struct node_card *nc, const struct accel_inventory *inv, bool refused, struct accel_device *v)
{
	struct accel_span *used = calloc(inv->n_gis + 1, sizeof(*used));
	size_t n_used = accel_inventory_spans(inv, used, inv->n_gis);

	if (!used)
		return -ENOMEM;
	v->profiles = calloc(nc->catalog.n_profiles + 1, sizeof(*v->profiles));
	if (!v->profiles) {
		free(used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nc->catalog.n_profiles; i++) {
		const struct accel_profile *src = &nc->catalog.profiles[i];
		struct accel_profile *p = &v->profiles[v->n_profiles++];

		*p = *src;
		p->placements = calloc(src->n_placements, sizeof(*p->placements));
		if (!p->placements) {
			p->n_placements = 0;
			free(used);
			return -ENOMEM;
		}
		memcpy(p->placements, src->placements, src->n_placements * sizeof(*p->placements));
		p->free = refused ? 0 : accel_ledger_available(p->placements, p->n_placements, used, n_used);
		p->available = p->free; /* until the card's admission says (node_install_view) */
	}
	free(used);
	return 0;
}

/* ---- reading the driver ---------------------------------------------------- */

/* Transient driver errors are retried this often, a little later each time, before a card is refused. */
#define READ_ATTEMPTS 3
#define READ_RETRY_MS 20

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One reading: mode, catalogue (only when the mode changed or it is missing), live instances. */
static int read_once(struct node_card *nc, char *err, size_t errlen)
{
	struct accel_inventory inv = { 0 };
	bool mode = false, pending = false;
	int ret = read_mode(nc, &mode, &pending, err, errlen);

	if (ret)
		return ret;
	/* The catalogue is kept while the mode holds; an empty one is never trusted. */
	if (!nc->catalog_valid || nc->catalog_mode != mode || nc->catalog.n_profiles == 0) {
		accel_catalog_clear(&nc->catalog);
		accel_ci_cache_clear(&nc->ci_cache);
		nc->catalog_valid = false;
		ret = accel_catalog_probe(&nc->card, &nc->catalog, err, errlen);
		if (ret)
			return ret;
		nc->catalog_valid = true;
		nc->catalog_mode = mode;
		log_drops(nc);
	}
	ret = accel_inventory_read(&nc->card, nc->catalog.all_ids, nc->catalog.n_ids, &inv, err, errlen);
	if (ret)
		return ret;
	nc->mode = mode;
	nc->pending = pending;
	accel_inventory_clear(&nc->inv);
	nc->inv = inv;
	return 0;
}

/* A reading, retried a bounded number of times: one failed call must not refuse a card. */
static int read_card(struct accel_node *node, struct node_card *nc, char *err, size_t errlen)
{
	for (unsigned attempt = 1;; attempt++) {
		int ret = read_once(nc, err, errlen);

		if (!ret || attempt >= READ_ATTEMPTS || node->stopping)
			return ret;
		log_debug("%s: %s; reading again (attempt %u of %u)", nc->card.name, err, attempt + 1, READ_ATTEMPTS);
		sleep_ms(READ_RETRY_MS * attempt);
	}
}

/* What is not the driver's to say: the card's device nodes, its PCI driver as udev knows it. */
static void read_host(struct accel_node *node, struct node_card *nc)
{
	char err[ACCEL_TEXT_MAX];

	free(nc->card_nodes);
	nc->card_nodes = NULL;
	nc->n_card_nodes = 0;
	if (accel_card_nodes(&nc->card, &nc->card_nodes, &nc->n_card_nodes, err, sizeof(err)))
		log_debug("%s: %s", nc->card.name, err); /* reported per job when it matters */
	if (accel_udev_pci(node->udev, nc->ident.bus_id, nc->pci_driver, sizeof(nc->pci_driver), nc->udev_syspath,
	                   sizeof(nc->udev_syspath))) {
		nc->pci_driver[0] = '\0';
		nc->udev_syspath[0] = '\0';
	}
}

/* ---- views --------------------------------------------------------------- */

static void log_refusal(struct node_card *nc, const char *refusal)
{
	if (!strcmp(nc->refusal_logged, refusal))
		return;
	if (refusal[0])
		log_error("%s: refused: %s", nc->card.name, refusal);
	else if (nc->refusal_logged[0])
		log_info("%s: no longer refused", nc->card.name);
	if (refusal[0] && !nc->refusal_logged[0])
		accel_metrics_card_refused();
	snprintf(nc->refusal_logged, sizeof(nc->refusal_logged), "%s", refusal);
}

static int reconcile_card(struct accel_node *node, struct node_card *nc, struct accel_reconcile_out *rec)
{
	struct accel_reconcile_in in;
	bool idle = true;
	int ret;

	memset(&in, 0, sizeof(in));
	in.records = nc->records;
	in.n_records = nc->n_records;
	in.records_unreadable = nc->n_bad > 0;
	in.inv = &nc->inv;
	in.seen = nc->seen;
	in.n_seen = nc->n_seen;
	in.now_ms = node_now_ms();
	in.grace_ms = node->opt.orphan_grace_ms;
	in.read_only = node->opt.read_only;
	in.intents = nc->intents;
	in.n_intents = nc->n_intents;
	in.foreign_reclaim = node_foreign_reclaim(node, nc);
	/* Scanning /proc is only worth it when an orphan is due. */
	for (size_t s = 0; s < nc->n_seen && idle; s++)
		if (in.now_ms - nc->seen[s].first_seen_ms >= in.grace_ms)
			idle = false;
	in.card_idle = idle ? true : card_idle(nc);
	ret = accel_reconcile(&in, rec);
	if (ret)
		return ret;
	free(nc->seen);
	nc->seen = rec->seen;
	nc->n_seen = rec->n_seen;
	rec->seen = NULL;
	rec->n_seen = 0;
	return 0;
}

/* The card's identity and host facts, with no profile, job or instance yet. */
static void view_base(const struct accel_node *node, struct node_card *nc, struct accel_device *v)
{
	*v = nc->ident;
	v->refs = 0;
	snprintf(v->pci_driver, sizeof(v->pci_driver), "%s", nc->pci_driver);
	snprintf(v->udev_syspath, sizeof(v->udev_syspath), "%s", nc->udev_syspath);
	v->mig_enabled = nc->mode;
	v->mig_pending_enabled = nc->pending;
	v->foreign_reclaim = node_foreign_reclaim(node, nc);
	v->foreign_set = nc->foreign != NODE_FOREIGN_DEFAULT;
}

/*
 * The refusal as the card's own files, log lines and last_error give it,
 * each after the card's name: why without the "ppu10: " the driver seams
 * start their sentences with, so that none says the card twice.
 */
static void set_refusal(struct accel_device *v, const char *card, const char *why)
{
	size_t n = strlen(card);

	if (!strncmp(why, card, n) && !strncmp(why + n, ": ", 2))
		why += n + 2;
	snprintf(v->refusal, sizeof(v->refusal), "%s", why);
}

/*
 * A card that cannot be read now: its last known view, marked refused, with
 * nothing available.  One never read yet (a card just opened or back) shows
 * its records' jobs, lost until it answers.
 */
static void refuse(struct accel_node *node, struct node_card *nc, const char *why)
{
	struct accel_device v;
	bool known;

	memset(&v, 0, sizeof(v));
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	known = nc->view && !accel_device_copy(&v, nc->view);
	node_unlock(&node->view_lock, NODE_LOCK_VIEW);
	if (!known) {
		view_base(node, nc, &v);
		if (node_view_record_jobs(nc, &v,
		                          "cannot be read: the job is shown from its record until the card "
		                          "answers"))
			return;
	}
	v.refs = 0;
	v.refused = true;
	set_refusal(&v, nc->card.name, why);
	for (size_t i = 0; i < v.n_profiles; i++)
		v.profiles[i].free = v.profiles[i].available = 0;
	log_refusal(nc, v.refusal);
	node_install_view(node, nc, &v);
}

void node_card_rebuild(struct accel_node *node, struct node_card *nc)
{
	struct accel_reconcile_out rec = { 0 };
	struct accel_device v;

	if (reconcile_card(node, nc, &rec)) {
		refuse(node, nc, "out of memory reconciling");
		return;
	}
	memset(&v, 0, sizeof(v));
	view_base(node, nc, &v);
	if (rec.refused) {
		v.refused = true;
		set_refusal(&v, nc->card.name, rec.refusal);
	}
	if (nc->n_bad) {
		size_t l = strlen(v.refusal);
		snprintf(v.refusal + l, sizeof(v.refusal) - l,
		         "%s%zu unreadable record(s), e.g. %s: %s; orphans are kept", l ? "; " : "", nc->n_bad,
		         nc->bad[0].path, nc->bad[0].why);
	}
	v.card_nodes = calloc(nc->n_card_nodes + 1, sizeof(*v.card_nodes));
	if (!v.card_nodes || build_profiles(nc, &nc->inv, v.refused, &v) || build_jobs(nc, &rec, &v) ||
	    build_instances(nc, &nc->inv, &rec, &v)) {
		accel_device_clear(&v);
		accel_reconcile_clear(&rec);
		refuse(node, nc, "out of memory building the view");
		return;
	}
	memcpy(v.card_nodes, nc->card_nodes, nc->n_card_nodes * sizeof(*v.card_nodes));
	v.n_card_nodes = nc->n_card_nodes;
	if (!nc->mode) {
		/* MIG off: no profile directories (the contract), but jobs and instances still show. */
		for (size_t i = 0; i < v.n_profiles; i++)
			accel_profile_clear(&v.profiles[i]);
		v.n_profiles = 0;
	}
	accel_reconcile_clear(&rec);
	log_refusal(nc, v.refusal);
	node_install_view(node, nc, &v);
	node_card_forget_carved(nc);
	nc->nodes_stale = false;
}

/*
 * Re-read one card from the driver and install its view.  Called with the
 * card's lock held.  act: carry out reconciliation's actions (the poller and
 * start-up do; a carve in progress does not).
 */
void node_card_refresh(struct accel_node *node, struct node_card *nc, bool act)
{
	char err[ACCEL_TEXT_MAX] = "";
	int ret;

	read_host(node, nc);
	ret = read_card(node, nc, err, sizeof(err));
	if (!ret && act && !node->opt.read_only) {
		struct accel_reconcile_out rec = { 0 };

		/* Something destroyed or dropped: read the card again before showing it. */
		if (reconcile_card(node, nc, &rec) == 0) {
			node_drop_spent_intents(node, nc, &rec);
			if (rec.n_actions && run_actions(node, nc, &rec) > 0)
				ret = read_card(node, nc, err, sizeof(err));
		}
		accel_reconcile_clear(&rec);
	}
	if (ret) {
		refuse(node, nc, err);
		return;
	}
	nc->nodes_stale = true; /* a reading proves every job's nodes again */
	/* Read again after the driver lost it: the card was reset or plugged again (core/state/health_book.h). */
	if (nc->refusal_logged[0] && accel_health_book_back(&nc->health))
		log_info("%s: answers again: its fault of falling off the bus is cleared (the card was reset)",
		         nc->card.name);
	node_card_rebuild(node, nc);
}
