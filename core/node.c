/* SPDX-License-Identifier: MIT */
#include "core/node.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/card.h"
#include "core/carve.h"
#include "core/cdi.h"
#include "core/catalog.h"
#include "core/devnodes.h"
#include "core/inventory.h"
#include "core/log.h"
#include "core/reconcile.h"
#include "core/record.h"
#include "core/udev_watch.h"

struct node_family;

struct node_card {
	struct accel_card card;
	struct node_family *fam;
	pthread_mutex_t lock; /* one driver conversation at a time on this card */

	/* Guarded by lock. */
	struct accel_catalog catalog;
	bool catalog_valid;
	bool catalog_mode; /* the MIG mode the catalogue was probed under */
	char drops_logged[1024];
	char refusal_logged[512];
	struct accel_record *records; /* authoritative in memory; mirrored on disk */
	size_t n_records;
	struct accel_record_bad *bad;
	size_t n_bad;
	struct accel_orphan_seen *seen;
	size_t n_seen;
	struct accel_inventory inv; /* what the last refresh read from the driver */

	/* Guarded by node->view_lock. */
	struct accel_device view;
};

struct node_family {
	const struct accel_family *family;
	struct mig_lib lib;
	bool loaded;
	char library[PATH_MAX];
	char dev_root[PATH_MAX];
	char proc_root[PATH_MAX];
	struct node_card **cards;
	size_t n_cards;
};

struct error_entry {
	char key[160];
	char text[ACCEL_TEXT_MAX];
};

struct accel_node {
	struct accel_node_options opt;
	char state_dir[PATH_MAX];
	struct node_family fams[ACCEL_MAX_FAMILIES];
	size_t n_fams;
	/* The card lists: read-held by every operation, write-held to re-enumerate. */
	pthread_rwlock_t topo;
	struct accel_udev *udev;
	bool rescan; /* a udev event: look for added or removed devices */

	pthread_mutex_t view_lock;
	pthread_mutex_t snap_lock;
	struct accel_snapshot *snap;
	uint64_t generation;

	pthread_mutex_t names_lock; /* job names being carved, so two mkdirs cannot take one name */
	char (*reserved)[ACCEL_JOB_NAME_MAX + 1];
	size_t n_reserved;

	pthread_mutex_t err_lock;
	struct error_entry *errors;
	size_t n_errors;

	pthread_t poller;
	bool poller_started;
	pthread_mutex_t poll_lock;
	pthread_cond_t poll_cond;
	bool kicked;
	bool stopping;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- last_error ------------------------------------------------------- */

void accel_node_set_last_error(struct accel_node *node, const char *key, const char *text)
{
	pthread_mutex_lock(&node->err_lock);
	for (size_t i = 0; i < node->n_errors; i++) {
		if (strcmp(node->errors[i].key, key))
			continue;
		snprintf(node->errors[i].text, sizeof(node->errors[i].text), "%s", text);
		pthread_mutex_unlock(&node->err_lock);
		return;
	}
	struct error_entry *grown = realloc(node->errors, (node->n_errors + 1) * sizeof(*grown));
	if (grown) {
		node->errors = grown;
		snprintf(grown[node->n_errors].key, sizeof(grown[node->n_errors].key), "%s", key);
		snprintf(grown[node->n_errors].text, sizeof(grown[node->n_errors].text), "%s", text);
		node->n_errors++;
	}
	pthread_mutex_unlock(&node->err_lock);
}

void accel_node_last_error(struct accel_node *node, const char *key, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	pthread_mutex_lock(&node->err_lock);
	for (size_t i = 0; i < node->n_errors; i++)
		if (!strcmp(node->errors[i].key, key))
			snprintf(buf, len, "%s", node->errors[i].text);
	pthread_mutex_unlock(&node->err_lock);
}

/* ---- job-name reservations --------------------------------------------- */

static bool job_name_taken(struct accel_node *node, const char *job)
{
	for (size_t i = 0; i < node->n_reserved; i++)
		if (!strcmp(node->reserved[i], job))
			return true;
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++) {
			struct node_card *nc = node->fams[f].cards[c];
			for (size_t j = 0; j < nc->view.n_jobs; j++)
				if (!strcmp(nc->view.jobs[j].name, job))
					return true;
		}
	return false;
}

/* Job names are unique on the node: the node-level mig/ view lists every device's jobs together. */
static int reserve_name(struct accel_node *node, const char *job)
{
	int ret = 0;

	pthread_mutex_lock(&node->names_lock);
	pthread_mutex_lock(&node->view_lock);
	if (job_name_taken(node, job)) {
		ret = -EEXIST;
	} else {
		char(*grown)[ACCEL_JOB_NAME_MAX + 1] = realloc(node->reserved, (node->n_reserved + 1) * sizeof(*grown));
		if (!grown) {
			ret = -ENOMEM;
		} else {
			node->reserved = grown;
			snprintf(grown[node->n_reserved++], sizeof(*grown), "%s", job);
		}
	}
	pthread_mutex_unlock(&node->view_lock);
	pthread_mutex_unlock(&node->names_lock);
	return ret;
}

static void release_name(struct accel_node *node, const char *job)
{
	pthread_mutex_lock(&node->names_lock);
	for (size_t i = 0; i < node->n_reserved; i++) {
		if (strcmp(node->reserved[i], job))
			continue;
		memmove(node->reserved[i], node->reserved[i + 1], (node->n_reserved - i - 1) * sizeof(*node->reserved));
		node->n_reserved--;
		break;
	}
	pthread_mutex_unlock(&node->names_lock);
}

/* ---- snapshots --------------------------------------------------------- */

static bool nodes_equal(const struct accel_devnode *a, size_t na, const struct accel_devnode *b, size_t nb)
{
	return na == nb && (na == 0 || !memcmp(a, b, na * sizeof(*a)));
}

static bool device_equal(const struct accel_device *a, const struct accel_device *b)
{
	if (strcmp(a->name, b->name) || strcmp(a->uuid, b->uuid) || a->minor != b->minor ||
	    a->mig_enabled != b->mig_enabled || a->mig_pending_enabled != b->mig_pending_enabled ||
	    a->refused != b->refused || strcmp(a->refusal, b->refusal) || strcmp(a->pci_driver, b->pci_driver) ||
	    a->n_profiles != b->n_profiles || a->n_jobs != b->n_jobs || a->n_instances != b->n_instances ||
	    !nodes_equal(a->card_nodes, a->n_card_nodes, b->card_nodes, b->n_card_nodes))
		return false;
	for (size_t i = 0; i < a->n_profiles; i++) {
		const struct accel_profile *p = &a->profiles[i], *q = &b->profiles[i];
		if (strcmp(p->name, q->name) || p->id != q->id || p->available != q->available ||
		    p->n_placements != q->n_placements)
			return false;
	}
	for (size_t i = 0; i < a->n_jobs; i++) {
		const struct accel_job *j = &a->jobs[i], *k = &b->jobs[i];
		if (strcmp(j->name, k->name) || strcmp(j->profile, k->profile) || j->state != k->state ||
		    strcmp(j->state_reason, k->state_reason) || j->gi != k->gi || j->ci != k->ci ||
		    strcmp(j->uuid, k->uuid) || !nodes_equal(j->nodes, j->n_nodes, k->nodes, k->n_nodes))
			return false;
	}
	for (size_t i = 0; i < a->n_instances; i++)
		if (memcmp(&a->instances[i], &b->instances[i], sizeof(a->instances[i])))
			return false;
	return true;
}

/* Build and publish a snapshot from every card's view; notify if it differs. */
static void publish(struct accel_node *node)
{
	struct accel_snapshot *s = calloc(1, sizeof(*s)), *old;
	size_t total = 0;
	bool changed;

	if (!s) {
		log_error("out of memory publishing a snapshot; the tree keeps the previous state");
		return;
	}
	s->refs = 1;
	pthread_mutex_lock(&node->view_lock);
	for (size_t f = 0; f < node->n_fams; f++)
		total += node->fams[f].n_cards;
	s->devices = calloc(total + 1, sizeof(*s->devices));
	for (size_t f = 0; s->devices && f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++) {
			if (accel_device_copy(&s->devices[s->n_devices], &node->fams[f].cards[c]->view)) {
				log_error("out of memory copying %s into a snapshot", node->fams[f].cards[c]->view.name);
				continue;
			}
			s->n_devices++;
		}
	pthread_mutex_unlock(&node->view_lock);

	pthread_mutex_lock(&node->snap_lock);
	old = node->snap;
	changed = !old || old->n_devices != s->n_devices;
	for (size_t i = 0; !changed && i < s->n_devices; i++)
		changed = !device_equal(&old->devices[i], &s->devices[i]);
	if (!changed) {
		pthread_mutex_unlock(&node->snap_lock);
		accel_snapshot_unref(s);
		return;
	}
	s->generation = ++node->generation;
	node->snap = s;
	accel_snapshot_ref(s);
	/*
	 * The CDI spec follows every change before the operation that caused
	 * it returns: a runtime reading it after mkdir sees the job.  Still
	 * under snap_lock, so two publishes cannot write out of order.
	 */
	if (node->opt.cdi_dir) {
		int cdi = accel_cdi_write_node(node->opt.cdi_dir, s);
		if (cdi)
			log_error("cannot update the CDI spec in %s: %s", node->opt.cdi_dir, strerror(-cdi));
	}
	pthread_mutex_unlock(&node->snap_lock);

	if (node->opt.on_change)
		node->opt.on_change(node->opt.ctx, old, s);
	accel_snapshot_unref(s);
	accel_snapshot_unref(old);
}

struct accel_snapshot *accel_node_snapshot(struct accel_node *node)
{
	struct accel_snapshot *s;

	pthread_mutex_lock(&node->snap_lock);
	s = accel_snapshot_ref(node->snap);
	pthread_mutex_unlock(&node->snap_lock);
	return s;
}

/* ---- one card ------------------------------------------------------------ */

static void log_drops(struct node_card *nc)
{
	char sig[sizeof(nc->drops_logged)] = "";
	size_t off = 0;

	for (size_t i = 0; i < nc->catalog.n_drops; i++) {
		int w = snprintf(sig + off, sizeof(sig) - off, "%u:%s;", nc->catalog.drops[i].id, nc->catalog.drops[i].why);
		if (w > 0 && (size_t)w < sizeof(sig) - off)
			off += (size_t)w;
	}
	if (!strcmp(sig, nc->drops_logged))
		return;
	snprintf(nc->drops_logged, sizeof(nc->drops_logged), "%s", sig);
	for (size_t i = 0; i < nc->catalog.n_drops; i++) {
		const struct accel_catalog_drop *d = &nc->catalog.drops[i];
		accel_log(d->warn ? ACCEL_LOG_WARN : ACCEL_LOG_INFO, "%s: profile id %u ('%s', probe index %u) not offered: %s",
			  nc->card.name, d->id, d->raw, d->index, d->why);
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
	size_t n = 0;
	const char **paths = calloc(nc->view.n_card_nodes + 1, sizeof(*paths));
	bool sim_root = strcmp(nc->card.dev_root, "/dev") != 0;

	if (!paths)
		return false;
	for (size_t i = 0; i < nc->view.n_card_nodes; i++)
		paths[i] = nc->view.card_nodes[i].host_path;
	if (accel_holders_scan("/proc", paths, nc->view.n_card_nodes, sim_root, &h, &n)) {
		free(paths);
		return false; /* unknown is not idle */
	}
	free(paths);
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

/* Remove record i from memory and disk. */
static int drop_record(struct accel_node *node, struct node_card *nc, size_t i, char *why, size_t whylen)
{
	int ret = accel_record_remove(node->state_dir, &nc->records[i], why, whylen);

	if (ret)
		return ret;
	memmove(&nc->records[i], &nc->records[i + 1], (nc->n_records - i - 1) * sizeof(*nc->records));
	nc->n_records--;
	return 0;
}

static size_t find_record(const struct node_card *nc, const char *job)
{
	for (size_t i = 0; i < nc->n_records; i++)
		if (!strcmp(nc->records[i].job, job))
			return i;
	return (size_t)-1;
}

/* Carry out what reconciliation decided; returns how many changed something. */
static int run_actions(struct accel_node *node, struct node_card *nc, const struct accel_reconcile_out *rec)
{
	int done = 0;
	/* Record indices shift as records are dropped: act on job names. */
	char (*jobs)[ACCEL_JOB_NAME_MAX + 1] = calloc(rec->n_actions + 1, sizeof(*jobs));

	if (!jobs)
		return 0;
	for (size_t a = 0; a < rec->n_actions; a++)
		if (rec->actions[a].kind != ACCEL_ACTION_RECLAIM_ORPHAN)
			snprintf(jobs[a], sizeof(jobs[a]), "%s", nc->records[rec->actions[a].record].job);

	for (size_t a = 0; a < rec->n_actions; a++) {
		const struct accel_action *act = &rec->actions[a];
		char why[ACCEL_TEXT_MAX];
		int ret;

		if (act->kind == ACCEL_ACTION_RECLAIM_ORPHAN) {
			struct accel_expect expect = { act->profile_id, act->placement, NULL };
			ret = accel_reclaim(&nc->card, act->gi, &expect, why, sizeof(why));
			if (ret == 0) {
				log_info("%s: reclaimed orphan GPU instance %u (profile %u at %u:%u): no record accounts for it",
					 nc->card.name, act->gi, act->profile_id, act->placement.start, act->placement.size);
				done++;
			} else if (ret == -EBUSY) {
				log_info("%s: orphan GPU instance %u is in use; left alone, rechecked next pass: %s",
					 nc->card.name, act->gi, why);
			} else if (ret != -ENOENT) {
				log_warn("%s: reclaiming orphan GPU instance %u failed: %s", nc->card.name, act->gi, why);
			}
			continue;
		}
		size_t i = find_record(nc, jobs[a]);
		if (i == (size_t)-1)
			continue;
		if (act->kind == ACCEL_ACTION_FINISH_REMOVAL) {
			struct accel_expect expect = { nc->records[i].profile_id, nc->records[i].placement,
						       nc->records[i].uuid };
			ret = accel_reclaim(&nc->card, act->gi, &expect, why, sizeof(why));
			if (ret && ret != -ENOENT && ret != -ESTALE) {
				log_warn("%s: finishing the removal of job %s: %s", nc->card.name, jobs[a], why);
				continue;
			}
		}
		if (drop_record(node, nc, i, why, sizeof(why)) == 0) {
			log_info("%s: job %s removed (its removal was interrupted)", nc->card.name, jobs[a]);
			done++;
		} else {
			log_error("%s: %s", nc->card.name, why);
		}
	}
	free(jobs);
	return done;
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

		if (src->phase == ACCEL_RECORD_REMOVING)
			continue;
		j = &v->jobs[v->n_jobs++];
		memset(j, 0, sizeof(*j));
		snprintf(j->name, sizeof(j->name), "%s", src->job);
		accel_name_publish(src->profile, nc->card.family->publish_geometry, j->profile, sizeof(j->profile));
		j->state = rec->state[r];
		snprintf(j->state_reason, sizeof(j->state_reason), "%s", rec->reason[r]);
		j->profile_id = src->profile_id;
		j->gi = src->gi;
		j->ci = src->ci;
		j->placement = src->placement;
		snprintf(j->uuid, sizeof(j->uuid), "%s", src->uuid);
		j->uid = src->uid;
		j->gid = src->gid;
		j->created = src->created;
		if (j->state != ACCEL_JOB_READY)
			continue;
		/* Minors are read live; a job whose nodes cannot be proven fails closed. */
		if (accel_job_nodes(&nc->card, j->gi, j->ci, &j->nodes, &j->n_nodes, why, sizeof(why))) {
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
		snprintf(in->note, sizeof(in->note), "%s", rec->note[g]);
	}
	return 0;
}

static int build_profiles(struct node_card *nc, const struct accel_inventory *inv, bool refused,
			  struct accel_device *v)
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
		p->available = refused ? 0 : accel_ledger_available(p->placements, p->n_placements, used, n_used);
	}
	free(used);
	return 0;
}

/*
 * Re-read one card from the driver and rebuild its view.  Called with the
 * card's lock held.  act: carry out reconciliation's actions (the poller and
 * start-up do; a carve in progress does not).
 */
static void card_refresh(struct accel_node *node, struct node_card *nc, bool act)
{
	struct accel_device v;
	struct accel_inventory inv = { 0 };
	struct accel_reconcile_out rec = { 0 };
	bool have_inv = false;
	char err[ACCEL_TEXT_MAX] = "";
	bool mode = false, pending = false;
	int ret;

	/* Start from the static identity of the card. */
	pthread_mutex_lock(&node->view_lock);
	v = nc->view;
	pthread_mutex_unlock(&node->view_lock);
	v.profiles = NULL;
	v.jobs = NULL;
	v.instances = NULL;
	v.card_nodes = NULL;
	v.n_profiles = v.n_jobs = v.n_instances = v.n_card_nodes = 0;
	v.refused = false;
	v.refusal[0] = '\0';
	if (accel_udev_pci(node->udev, v.bus_id, v.pci_driver, sizeof(v.pci_driver), v.udev_syspath,
			   sizeof(v.udev_syspath))) {
		v.pci_driver[0] = '\0';
		v.udev_syspath[0] = '\0';
	}

	ret = read_mode(nc, &mode, &pending, err, sizeof(err));
	if (ret)
		goto refuse;
	v.mig_enabled = mode;
	v.mig_pending_enabled = pending;

	/* The catalogue is kept while the mode holds; an empty one is never trusted. */
	if (!nc->catalog_valid || nc->catalog_mode != mode || nc->catalog.n_profiles == 0) {
		accel_catalog_clear(&nc->catalog);
		nc->catalog_valid = false;
		ret = accel_catalog_probe(&nc->card, &nc->catalog, err, sizeof(err));
		if (ret)
			goto refuse;
		nc->catalog_valid = true;
		nc->catalog_mode = mode;
		log_drops(nc);
	}

	if (accel_card_nodes(&nc->card, &v.card_nodes, &v.n_card_nodes, err, sizeof(err)))
		log_debug("%s: %s", nc->card.name, err); /* reported per job when it matters */
	err[0] = '\0';

	for (int pass = 0; pass < 2; pass++) {
		struct accel_reconcile_in in;
		bool idle = true;

		ret = accel_inventory_read(&nc->card, nc->catalog.all_ids, nc->catalog.n_ids, &inv, err, sizeof(err));
		if (ret)
			goto refuse;
		have_inv = true;
		memset(&in, 0, sizeof(in));
		in.records = nc->records;
		in.n_records = nc->n_records;
		in.records_unreadable = nc->n_bad > 0;
		in.inv = &inv;
		in.seen = nc->seen;
		in.n_seen = nc->n_seen;
		in.now_ms = now_ms();
		in.grace_ms = node->opt.orphan_grace_ms;
		/* Scanning /proc is only worth it when an orphan is due. */
		for (size_t s = 0; s < nc->n_seen && idle; s++)
			if (in.now_ms - nc->seen[s].first_seen_ms >= in.grace_ms)
				idle = false;
		in.card_idle = idle ? true : card_idle(nc);
		ret = accel_reconcile(&in, &rec);
		if (ret) {
			snprintf(err, sizeof(err), "%s: out of memory reconciling", nc->card.name);
			goto refuse;
		}
		free(nc->seen);
		nc->seen = rec.seen;
		nc->n_seen = rec.n_seen;
		rec.seen = NULL;
		rec.n_seen = 0;
		if (!act || node->opt.read_only || pass == 1 || rec.n_actions == 0 || run_actions(node, nc, &rec) == 0)
			break;
		/* Something was destroyed or dropped: read the card again. */
		accel_reconcile_clear(&rec);
		accel_inventory_clear(&inv);
		have_inv = false;
	}

	if (rec.refused) {
		v.refused = true;
		snprintf(v.refusal, sizeof(v.refusal), "%s", rec.refusal);
	}
	if (nc->n_bad) {
		size_t l = strlen(v.refusal);
		snprintf(v.refusal + l, sizeof(v.refusal) - l, "%s%zu unreadable record(s), e.g. %s: %s; orphans are kept",
			 l ? "; " : "", nc->n_bad, nc->bad[0].path, nc->bad[0].why);
	}
	if ((build_profiles(nc, &inv, v.refused, &v) || build_jobs(nc, &rec, &v) || build_instances(nc, &inv, &rec, &v))) {
		snprintf(err, sizeof(err), "%s: out of memory building the view", nc->card.name);
		goto refuse;
	}
	if (!mode) {
		/* MIG off: no profile directories (the contract), but jobs and instances still show. */
		for (size_t i = 0; i < v.n_profiles; i++)
			accel_profile_clear(&v.profiles[i]);
		v.n_profiles = 0;
	}
	if (strcmp(nc->refusal_logged, v.refusal)) {
		if (v.refusal[0])
			log_error("%s: refused: %s", nc->card.name, v.refusal);
		else if (nc->refusal_logged[0])
			log_info("%s: no longer refused", nc->card.name);
		snprintf(nc->refusal_logged, sizeof(nc->refusal_logged), "%s", v.refusal);
	}
	goto done;

refuse:
	/*
	 * The driver could not be read: keep showing what was last known (jobs
	 * do not vanish on a transient error), refuse changes, say why.
	 */
	accel_device_clear(&v);
	pthread_mutex_lock(&node->view_lock);
	if (accel_device_copy(&v, &nc->view))
		memset(&v, 0, sizeof(v));
	pthread_mutex_unlock(&node->view_lock);
	v.refused = true;
	snprintf(v.refusal, sizeof(v.refusal), "%s", err);
	for (size_t i = 0; i < v.n_profiles; i++)
		v.profiles[i].available = 0;
	if (strcmp(nc->refusal_logged, v.refusal)) {
		log_error("%s", err);
		snprintf(nc->refusal_logged, sizeof(nc->refusal_logged), "%s", v.refusal);
	}
done:
	accel_reconcile_clear(&rec);
	accel_inventory_clear(&nc->inv);
	if (have_inv)
		nc->inv = inv; /* kept for the carve that may follow under the same lock */
	else
		accel_inventory_clear(&inv);
	pthread_mutex_lock(&node->view_lock);
	accel_device_clear(&nc->view);
	nc->view = v;
	pthread_mutex_unlock(&node->view_lock);
}

/* ---- cards and families ------------------------------------------------- */

static void card_free(struct node_card *nc)
{
	if (!nc)
		return;
	accel_catalog_clear(&nc->catalog);
	accel_device_clear(&nc->view);
	free(nc->records);
	free(nc->bad);
	free(nc->seen);
	accel_inventory_clear(&nc->inv);
	pthread_mutex_destroy(&nc->lock);
	free(nc);
}

static void read_identity(struct node_card *nc)
{
	struct mig_lib *lib = nc->card.lib;
	struct accel_device *v = &nc->view;
	char buf[MIG_DEVICE_UUID_V2_BUFFER_SIZE];

	if (lib->DeviceGetUUID(nc->card.handle, buf, sizeof(buf)) == MIG_SUCCESS) {
		buf[sizeof(buf) - 1] = '\0';
		snprintf(v->uuid, sizeof(v->uuid), "%s", buf);
	}
	if (lib->DeviceGetName(nc->card.handle, buf, sizeof(buf)) == MIG_SUCCESS) {
		buf[sizeof(buf) - 1] = '\0';
		snprintf(v->product, sizeof(v->product), "%s", buf);
	}
	if (lib->DeviceGetPciInfo_v3) {
		mig_pci_info_t pci;
		memset(&pci, 0, sizeof(pci));
		if (lib->DeviceGetPciInfo_v3(nc->card.handle, &pci) == MIG_SUCCESS) {
			pci.busId[sizeof(pci.busId) - 1] = '\0';
			snprintf(v->bus_id, sizeof(v->bus_id), "%s", pci.busId);
		}
	}
	if (lib->DeviceGetMemoryInfo) {
		mig_memory_t mem;
		if (lib->DeviceGetMemoryInfo(nc->card.handle, &mem) == MIG_SUCCESS)
			v->memory_mib = mem.total / (1024 * 1024);
	}
}

static struct node_card *card_open(struct accel_node *node, struct node_family *fam, unsigned index, char *err,
				   size_t errlen)
{
	struct node_card *nc = calloc(1, sizeof(*nc));
	mig_return_t r;

	if (!nc)
		return NULL;
	pthread_mutex_init(&nc->lock, NULL);
	nc->fam = fam;
	nc->card.family = fam->family;
	nc->card.lib = &fam->lib;
	nc->card.ordinal = index;
	nc->card.dev_root = fam->dev_root;
	nc->card.proc_root = fam->proc_root;
	nc->card.busy_retries = node->opt.busy_retries;
	nc->card.busy_delay_ms = node->opt.busy_delay_ms;
	snprintf(nc->card.name, sizeof(nc->card.name), "%s%u", fam->family->tree_prefix, index);

	r = fam->lib.DeviceGetHandleByIndex_v2(index, &nc->card.handle);
	if (r == MIG_SUCCESS)
		r = fam->lib.DeviceGetMinorNumber(nc->card.handle, &nc->card.minor);
	if (r != MIG_SUCCESS) {
		snprintf(err, errlen, "%s: cannot open: %s (%s)", nc->card.name, mig_lib_strerror(&fam->lib, r),
			 mig_return_name(r));
		card_free(nc);
		return NULL;
	}
	nc->view.family = fam->family;
	snprintf(nc->view.name, sizeof(nc->view.name), "%s", nc->card.name);
	nc->view.ordinal = index;
	nc->view.minor = nc->card.minor;
	snprintf(nc->view.library, sizeof(nc->view.library), "%s", fam->lib.path);
	read_identity(nc);
	if (!nc->view.uuid[0]) {
		snprintf(err, errlen, "%s: the driver reports no UUID; records could not be tied to it", nc->card.name);
		card_free(nc);
		return NULL;
	}
	if (accel_record_load_card(node->state_dir, fam->family->tree_prefix, nc->view.uuid, &nc->records,
				   &nc->n_records, &nc->bad, &nc->n_bad) < 0)
		log_error("%s: cannot read its records", nc->card.name);
	for (size_t i = 0; i < nc->n_bad; i++)
		log_error("%s: unreadable record %s: %s; orphans on this card are kept until it is fixed or removed",
			  nc->card.name, nc->bad[i].path, nc->bad[i].why);
	return nc;
}

static void family_close(struct node_family *fam)
{
	for (size_t c = 0; c < fam->n_cards; c++)
		card_free(fam->cards[c]);
	free(fam->cards);
	fam->cards = NULL;
	fam->n_cards = 0;
	if (fam->loaded)
		mig_lib_close(&fam->lib);
	fam->loaded = false;
}

static int family_open(struct accel_node *node, struct node_family *fam)
{
	char err[512];
	unsigned count = 0;
	mig_return_t r;
	int ret;

	ret = accel_family_open_lib(fam->family, fam->library[0] ? fam->library : NULL, &fam->lib, err, sizeof(err));
	if (ret == -ENOENT) {
		log_info("%s: no %s driver library found; the family is not shown", fam->family->tree_prefix,
			 fam->family->vendor);
		return 0;
	}
	if (ret) {
		log_warn("%s: %s driver unusable: %s; the family is not shown", fam->family->tree_prefix,
			 fam->family->vendor, err);
		return 0;
	}
	fam->loaded = true;
	r = fam->lib.DeviceGetCount_v2(&count);
	if (r != MIG_SUCCESS) {
		log_warn("%s: counting devices failed: %s", fam->family->tree_prefix, mig_lib_strerror(&fam->lib, r));
		count = 0;
	}
	fam->cards = calloc(count + 1, sizeof(*fam->cards));
	if (!fam->cards)
		return -ENOMEM;
	for (unsigned i = 0; i < count; i++) {
		struct node_card *nc = card_open(node, fam, i, err, sizeof(err));
		if (!nc) {
			log_error("%s", err);
			continue;
		}
		fam->cards[fam->n_cards++] = nc;
	}
	log_info("%s: %zu %s device(s) through %s", fam->family->tree_prefix, fam->n_cards, fam->family->vendor,
		 fam->lib.path);
	return 0;
}

static struct node_card *find_card(struct accel_node *node, const char *device)
{
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++)
			if (!strcmp(node->fams[f].cards[c]->card.name, device))
				return node->fams[f].cards[c];
	return NULL;
}

/* ---- mkdir / rmdir ------------------------------------------------------ */

struct commit_ctx {
	struct accel_node *node;
	struct node_card *nc;
	const struct accel_profile *profile;
	const char *job;
	uid_t uid;
	gid_t gid;
};

static int commit_record(void *ctx, const struct accel_carve_result *res, char *why, size_t whylen)
{
	struct commit_ctx *c = ctx;
	struct accel_record r, *grown;
	int ret;

	memset(&r, 0, sizeof(r));
	snprintf(r.family, sizeof(r.family), "%s", c->nc->card.family->tree_prefix);
	snprintf(r.card_uuid, sizeof(r.card_uuid), "%s", c->nc->view.uuid);
	r.ordinal = c->nc->card.ordinal;
	snprintf(r.job, sizeof(r.job), "%s", c->job);
	snprintf(r.profile, sizeof(r.profile), "%s", c->profile->vendor_name);
	r.profile_id = c->profile->id;
	r.gi = res->gi;
	r.ci = res->ci;
	r.ci_profile_id = res->ci_profile_id;
	r.placement = res->placement;
	snprintf(r.uuid, sizeof(r.uuid), "%s", res->uuid);
	r.uid = c->uid;
	r.gid = c->gid;
	r.created = (int64_t)time(NULL);
	r.phase = ACCEL_RECORD_ACTIVE;

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

static const char *const profile_files[] = { "info", "available", "last_error", NULL };

static int check_job_name(const char *job, char *why, size_t whylen)
{
	int ret = accel_job_name_check(job);

	if (ret) {
		snprintf(why, whylen, ret == -ENAMETOOLONG ? "job name '%.64s...' is longer than %d bytes"
							   : "job name '%s' is not [A-Za-z0-9][A-Za-z0-9_.-]*",
			 job, ACCEL_JOB_NAME_MAX);
		return ret;
	}
	for (size_t i = 0; profile_files[i]; i++)
		if (!strcmp(job, profile_files[i])) {
			snprintf(why, whylen, "'%s' is a file of the profile directory", job);
			return -EEXIST;
		}
	return 0;
}

/*
 * Carve on one card: the node's topology read-held, the job's name reserved.
 * want_start < 0 takes the lowest free placement; otherwise exactly the
 * placement starting there (-EAGAIN when it is no longer free).
 */
static int carve_on(struct accel_node *node, struct node_card *nc, const char *profile, const char *job, uid_t uid,
		    gid_t gid, long want_start, char *why, size_t whylen)
{
	const struct accel_profile *p = NULL;
	struct accel_carve_result res;
	struct accel_span *used = NULL;
	char refusal[ACCEL_TEXT_MAX];
	bool refused;
	int want = -1, ret;

	pthread_mutex_lock(&nc->lock);
	/* Decide on what the driver says now, not on the last poll. */
	card_refresh(node, nc, false);
	pthread_mutex_lock(&node->view_lock);
	if (nc->view.mig_enabled)
		for (size_t i = 0; i < nc->catalog.n_profiles && !p; i++)
			if (!strcmp(nc->catalog.profiles[i].name, profile))
				p = &nc->catalog.profiles[i];
	refused = nc->view.refused;
	snprintf(refusal, sizeof(refusal), "%s", nc->view.refusal);
	pthread_mutex_unlock(&node->view_lock);

	if (!p) {
		snprintf(why, whylen, "%s does not offer %s (MIG mode off, or no such profile)", nc->card.name, profile);
		ret = -ENOENT;
		goto out;
	}
	if (refused) {
		snprintf(why, whylen, "%s is refused: %s", nc->card.name, refusal);
		ret = -EBUSY;
		goto out;
	}
	for (size_t i = 0; want_start >= 0 && i < p->n_placements; i++)
		if (p->placements[i].start == (unsigned long)want_start)
			want = (int)i;
	if (want_start >= 0 && want < 0) {
		snprintf(why, whylen, "%s has no legal placement of %s at %ld", nc->card.name, profile, want_start);
		ret = -EAGAIN;
		goto out;
	}
	/* The refresh above just read the card's live instances: carve against those. */
	used = calloc(nc->inv.n_gis + 1, sizeof(*used));
	if (!used) {
		ret = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	struct commit_ctx ctx = { node, nc, p, job, uid, gid };
	ret = accel_carve(&nc->card, p, want, used, accel_inventory_spans(&nc->inv, used, nc->inv.n_gis),
			  commit_record, &ctx, &res, why, whylen);
	if (ret == 0) {
		free(res.nodes);
		log_info("%s/%s: carved job %s: GPU instance %u, compute instance %u, placement %u:%u, %s",
			 nc->card.name, profile, job, res.gi, res.ci, res.placement.start, res.placement.size, res.uuid);
	}
	card_refresh(node, nc, false);
out:
	pthread_mutex_unlock(&nc->lock);
	free(used);
	return ret;
}

static void finish_op(struct accel_node *node, const char *key, const char *what, const char *job, int ret,
		      const char *why)
{
	if (ret) {
		log_error("%s: %s %.64s: %s", key, what, job, why);
		accel_node_set_last_error(node, key, why);
	} else {
		accel_node_set_last_error(node, key, "");
	}
}

/*
 * What every mkdir starts with: the read-only and name checks, then the
 * topology read-held and the name reserved (on success only).
 */
static int begin_mkdir(struct accel_node *node, const char *job, char *why, size_t whylen)
{
	int ret;

	if (node->opt.read_only) {
		snprintf(why, whylen, "accelfs runs --read-only: nothing is carved");
		return -EROFS;
	}
	ret = check_job_name(job, why, whylen);
	if (ret)
		return ret;
	pthread_rwlock_rdlock(&node->topo);
	ret = reserve_name(node, job);
	if (ret) {
		pthread_rwlock_unlock(&node->topo);
		snprintf(why, whylen, ret == -EEXIST ? "a job named '%s' already exists on this node" : "cannot reserve '%s'",
			 job);
	}
	return ret;
}

static void end_mkdir(struct accel_node *node, const char *job)
{
	pthread_rwlock_unlock(&node->topo);
	release_name(node, job);
	publish(node);
}

int accel_node_mkdir(struct accel_node *node, const char *device, const char *profile, const char *job, uid_t uid,
		     gid_t gid, char *why, size_t whylen)
{
	char key[160];
	struct node_card *nc;
	int ret;

	why[0] = '\0';
	snprintf(key, sizeof(key), "%s/%s", device, profile);
	ret = begin_mkdir(node, job, why, whylen);
	if (!ret) {
		nc = find_card(node, device);
		if (nc) {
			ret = carve_on(node, nc, profile, job, uid, gid, -1, why, whylen);
		} else {
			snprintf(why, whylen, "no device %s", device);
			ret = -ENOENT;
		}
		end_mkdir(node, job);
	}
	finish_op(node, key, "mkdir", job, ret, why);
	return ret;
}

/* What a device can still carve, weighted by span: Σ available(q) × span(q) over its profiles. */
static unsigned long device_room(const struct accel_device *d, const struct accel_span *used, size_t n_used)
{
	unsigned long room = 0;

	for (size_t q = 0; q < d->n_profiles; q++)
		room += (unsigned long)accel_ledger_available(d->profiles[q].placements, d->profiles[q].n_placements,
							       used, n_used) *
			d->profiles[q].span;
	return room;
}

/*
 * The device and placement for a node-level request: the one that costs the
 * least room (device_room before minus after), so the most capacity stays
 * free for later requests.  Ties go to the earlier device (family order,
 * then ordinal) and the lower start.
 */
static int choose(const struct accel_snapshot *s, const char *profile, char *device, size_t len, long *start)
{
	unsigned long best_loss = 0;
	bool found = false;

	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = &s->devices[i];
		const struct accel_profile *p = accel_device_profile(d, profile);
		struct accel_span *used;
		unsigned long before;

		if (!p || d->refused || !p->available)
			continue;
		used = calloc(d->n_instances + 2, sizeof(*used));
		if (!used)
			return -ENOMEM;
		for (size_t k = 0; k < d->n_instances; k++)
			used[k] = d->instances[k].placement;
		before = device_room(d, used, d->n_instances);
		for (size_t k = 0; k < p->n_placements; k++) {
			unsigned long after, loss;

			if (!accel_ledger_is_free(p->placements[k], used, d->n_instances))
				continue;
			used[d->n_instances] = p->placements[k];
			after = device_room(d, used, d->n_instances + 1);
			loss = before > after ? before - after : 0;
			if (!found || loss < best_loss || (loss == best_loss && !strcmp(device, d->name) &&
							   p->placements[k].start < (unsigned long)*start)) {
				found = true;
				best_loss = loss;
				snprintf(device, len, "%s", d->name);
				*start = p->placements[k].start;
			}
		}
		free(used);
	}
	return found ? 0 : -ENOSPC;
}

int accel_node_mkdir_any(struct accel_node *node, const char *profile, const char *job, uid_t uid, gid_t gid,
			 char *device, size_t len, char *why, size_t whylen)
{
	char key[160];
	int ret;

	why[0] = '\0';
	device[0] = '\0';
	snprintf(key, sizeof(key), "mig/%s", profile);
	ret = begin_mkdir(node, job, why, whylen);
	if (ret)
		goto out;
	/* Choose from the last snapshot; the carve re-checks under the card's lock and says if it lost a race. */
	for (int attempt = 0; attempt < 4; attempt++) {
		struct accel_snapshot *s = accel_node_snapshot(node);
		struct node_card *nc;
		long start = -1;

		ret = choose(s, profile, device, len, &start);
		accel_snapshot_unref(s);
		if (ret) {
			snprintf(why, whylen, "no device has a free placement for %s", profile);
			break;
		}
		nc = find_card(node, device);
		if (!nc) {
			ret = -EAGAIN;
			continue;
		}
		ret = carve_on(node, nc, profile, job, uid, gid, start, why, whylen);
		if (ret != -EAGAIN && ret != -ENOSPC)
			break;
		publish(node); /* what we learned under the lock, for the next choice */
	}
	if (ret == -EAGAIN)
		ret = -ENOSPC;
	end_mkdir(node, job);
out:
	finish_op(node, key, "mkdir", job, ret, why);
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

int accel_node_rmdir(struct accel_node *node, const char *device, const char *profile, const char *job, char *why,
		     size_t whylen)
{
	char key[160], vendor[ACCEL_NAME_MAX];
	struct node_card *nc;
	size_t i;
	int ret;

	why[0] = '\0';
	snprintf(key, sizeof(key), "%s/%s", device, profile);
	if (node->opt.read_only) {
		snprintf(why, whylen, "accelfs runs --read-only: nothing is destroyed");
		return -EROFS;
	}
	pthread_rwlock_rdlock(&node->topo);
	nc = find_card(node, device);
	if (!nc) {
		pthread_rwlock_unlock(&node->topo);
		snprintf(why, whylen, "no device %s", device);
		return -ENOENT;
	}
	pthread_mutex_lock(&nc->lock);
	i = find_record(nc, job);
	accel_name_vendor(profile, nc->card.family->publish_geometry, vendor, sizeof(vendor));
	if (i == (size_t)-1 || strcmp(nc->records[i].profile, vendor)) {
		snprintf(why, whylen, "no job %s under %s/%s", job, device, profile);
		ret = -ENOENT;
		goto out;
	}
	struct accel_record *r = &nc->records[i];
	struct accel_expect expect = { r->profile_id, r->placement, r->uuid };

	ret = set_phase(node, r, ACCEL_RECORD_REMOVING, why, whylen);
	if (ret)
		goto out;
	ret = accel_reclaim(&nc->card, r->gi, &expect, why, whylen);
	if (ret == 0 || ret == -ENOENT || ret == -ESTALE) {
		if (ret)
			log_info("%s/%s: job %s: %s; dropping its record", device, profile, job, why);
		ret = drop_record(node, nc, i, why, whylen);
		if (!ret)
			log_info("%s/%s: removed job %s", device, profile, job);
	} else {
		char ignored[256];
		if (set_phase(node, &nc->records[i], ACCEL_RECORD_ACTIVE, ignored, sizeof(ignored)))
			log_error("%s/%s: job %s: cannot restore its record: %s", device, profile, job, ignored);
	}
	card_refresh(node, nc, false);
out:
	pthread_mutex_unlock(&nc->lock);
	pthread_rwlock_unlock(&node->topo);
	publish(node);
	finish_op(node, key, "rmdir", job, ret, why);
	return ret;
}

/* ---- holders ----------------------------------------------------------- */

int accel_node_holders(struct accel_node *node, const char *device, struct accel_holder **out, size_t *n)
{
	struct accel_snapshot *s = accel_node_snapshot(node);
	const struct accel_device *d = accel_snapshot_device(s, device);
	const char **paths;
	int ret;

	*out = NULL;
	*n = 0;
	if (!d) {
		accel_snapshot_unref(s);
		return -ENOENT;
	}
	paths = calloc(d->n_card_nodes + 1, sizeof(*paths));
	if (!paths) {
		accel_snapshot_unref(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->n_card_nodes; i++)
		paths[i] = d->card_nodes[i].host_path;
	/* Nodes outside /dev belong to a simulated node: match the very files. */
	ret = accel_holders_scan("/proc", paths, d->n_card_nodes,
				 d->n_card_nodes && strncmp(d->card_nodes[0].host_path, "/dev/", 5) != 0, out, n);
	free(paths);
	accel_snapshot_unref(s);
	return ret;
}

/* ---- poller ----------------------------------------------------------- */

/*
 * Look for cards that appeared or went away (a udev event, a driver loaded
 * late): re-count each family's devices and compare their UUIDs.  A family
 * whose set changed is reopened whole; its jobs come back from the records
 * on disk, exactly as after a restart.
 */
static void rescan(struct accel_node *node)
{
	pthread_rwlock_wrlock(&node->topo);
	for (size_t f = 0; f < node->n_fams; f++) {
		struct node_family *fam = &node->fams[f];
		unsigned count = 0;
		bool same = true;

		if (!fam->loaded) {
			if (!node->opt.families[f].disabled && family_open(node, fam))
				log_error("%s: out of memory", fam->family->tree_prefix);
			continue;
		}
		if (fam->lib.DeviceGetCount_v2(&count) != MIG_SUCCESS)
			continue;
		same = count == fam->n_cards;
		for (size_t c = 0; same && c < fam->n_cards; c++) {
			char uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
			mig_device_t h;
			same = fam->lib.DeviceGetHandleByIndex_v2((unsigned)c, &h) == MIG_SUCCESS &&
			       fam->lib.DeviceGetUUID(h, uuid, sizeof(uuid)) == MIG_SUCCESS &&
			       !strncmp(uuid, fam->cards[c]->view.uuid, sizeof(uuid));
		}
		if (same)
			continue;
		log_info("%s: the set of %s devices changed (%zu -> %u); re-reading them", fam->family->tree_prefix,
			 fam->family->vendor, fam->n_cards, count);
		pthread_mutex_lock(&node->view_lock);
		for (size_t c = 0; c < fam->n_cards; c++)
			card_free(fam->cards[c]);
		fam->n_cards = 0;
		struct node_card **cards = realloc(fam->cards, (count + 1) * sizeof(*cards));
		if (cards)
			fam->cards = cards;
		pthread_mutex_unlock(&node->view_lock);
		if (!cards)
			continue;
		for (unsigned i = 0; i < count; i++) {
			char err[512];
			struct node_card *nc = card_open(node, fam, i, err, sizeof(err));
			if (!nc) {
				log_error("%s", err);
				continue;
			}
			pthread_mutex_lock(&node->view_lock);
			fam->cards[fam->n_cards++] = nc;
			pthread_mutex_unlock(&node->view_lock);
		}
	}
	pthread_rwlock_unlock(&node->topo);
}

void accel_node_refresh_all(struct accel_node *node)
{
	bool want_rescan;

	pthread_mutex_lock(&node->poll_lock);
	want_rescan = node->rescan;
	node->rescan = false;
	pthread_mutex_unlock(&node->poll_lock);
	if (want_rescan)
		rescan(node);

	pthread_rwlock_rdlock(&node->topo);
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++) {
			struct node_card *nc = node->fams[f].cards[c];
			pthread_mutex_lock(&nc->lock);
			card_refresh(node, nc, true);
			pthread_mutex_unlock(&nc->lock);
		}
	pthread_rwlock_unlock(&node->topo);
	publish(node);
}

static void on_udev_event(void *ctx, const char *action, const char *syspath)
{
	struct accel_node *node = ctx;

	(void)syspath;
	pthread_mutex_lock(&node->poll_lock);
	if (!strcmp(action, "add") || !strcmp(action, "remove") || !strcmp(action, "bind") ||
	    !strcmp(action, "unbind"))
		node->rescan = true;
	node->kicked = true;
	pthread_cond_signal(&node->poll_cond);
	pthread_mutex_unlock(&node->poll_lock);
}

void accel_node_kick(struct accel_node *node)
{
	pthread_mutex_lock(&node->poll_lock);
	node->kicked = true;
	pthread_cond_signal(&node->poll_cond);
	pthread_mutex_unlock(&node->poll_lock);
}

static void *poll_main(void *arg)
{
	struct accel_node *node = arg;

	pthread_mutex_lock(&node->poll_lock);
	while (!node->stopping) {
		struct timespec deadline;

		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += node->opt.poll_ms / 1000;
		deadline.tv_nsec += (long)(node->opt.poll_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		while (!node->stopping && !node->kicked &&
		       pthread_cond_timedwait(&node->poll_cond, &node->poll_lock, &deadline) != ETIMEDOUT)
			;
		if (node->stopping)
			break;
		node->kicked = false;
		pthread_mutex_unlock(&node->poll_lock);
		accel_node_refresh_all(node);
		pthread_mutex_lock(&node->poll_lock);
	}
	pthread_mutex_unlock(&node->poll_lock);
	return NULL;
}

/* ---- start / stop ------------------------------------------------------- */

struct accel_node *accel_node_start(const struct accel_node_options *opt, char *err, size_t errlen)
{
	struct accel_node *node = calloc(1, sizeof(*node));
	pthread_condattr_t ca;

	if (!node) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	node->opt = *opt;
	if (!node->opt.poll_ms)
		node->opt.poll_ms = 2000;
	if (!node->opt.orphan_grace_ms)
		node->opt.orphan_grace_ms = 10000;
	if (!node->opt.busy_retries)
		node->opt.busy_retries = 4;
	if (!node->opt.busy_delay_ms)
		node->opt.busy_delay_ms = 100;
	snprintf(node->state_dir, sizeof(node->state_dir), "%s", opt->state_dir ? opt->state_dir : "/var/lib/accelfs");
	pthread_mutex_init(&node->view_lock, NULL);
	pthread_mutex_init(&node->snap_lock, NULL);
	pthread_mutex_init(&node->names_lock, NULL);
	pthread_mutex_init(&node->err_lock, NULL);
	pthread_mutex_init(&node->poll_lock, NULL);
	pthread_rwlock_init(&node->topo, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&node->poll_cond, &ca);
	pthread_condattr_destroy(&ca);

	if (accel_mkdirs(node->state_dir, 0755)) {
		snprintf(err, errlen, "cannot create the state directory %s: %s", node->state_dir, strerror(errno));
		accel_node_stop(node);
		return NULL;
	}
	for (size_t f = 0; f < accel_n_families && f < ACCEL_MAX_FAMILIES; f++) {
		const struct accel_family_config *cfg = &opt->families[f];
		struct node_family *fam = &node->fams[node->n_fams++];

		fam->family = accel_families[f];
		snprintf(fam->library, sizeof(fam->library), "%s", cfg->library ? cfg->library : "");
		snprintf(fam->dev_root, sizeof(fam->dev_root), "%s", cfg->dev_root ? cfg->dev_root : "/dev");
		snprintf(fam->proc_root, sizeof(fam->proc_root), "%s", cfg->proc_root ? cfg->proc_root : "/proc");
		if (cfg->disabled)
			continue;
		if (family_open(node, fam)) {
			snprintf(err, errlen, "out of memory opening %s", fam->family->tree_prefix);
			accel_node_stop(node);
			return NULL;
		}
	}
	node->udev = accel_udev_start(on_udev_event, node);
	accel_node_refresh_all(node);
	if (pthread_create(&node->poller, NULL, poll_main, node)) {
		snprintf(err, errlen, "cannot start the poller thread");
		accel_node_stop(node);
		return NULL;
	}
	node->poller_started = true;
	return node;
}

void accel_node_stop(struct accel_node *node)
{
	if (!node)
		return;
	if (node->poller_started) {
		pthread_mutex_lock(&node->poll_lock);
		node->stopping = true;
		pthread_cond_signal(&node->poll_cond);
		pthread_mutex_unlock(&node->poll_lock);
		pthread_join(node->poller, NULL);
	}
	accel_udev_stop(node->udev);
	for (size_t f = 0; f < node->n_fams; f++)
		family_close(&node->fams[f]);
	accel_snapshot_unref(node->snap);
	free(node->reserved);
	free(node->errors);
	pthread_mutex_destroy(&node->view_lock);
	pthread_mutex_destroy(&node->snap_lock);
	pthread_mutex_destroy(&node->names_lock);
	pthread_mutex_destroy(&node->err_lock);
	pthread_mutex_destroy(&node->poll_lock);
	pthread_rwlock_destroy(&node->topo);
	pthread_cond_destroy(&node->poll_cond);
	free(node);
}
