/* SPDX-License-Identifier: MIT */
/*
 * The event thread: one per driver family, waiting in the driver's event
 * set for what the cards raise (Xid errors, ECC errors, a recovery action),
 * and writing each event into its card's health book (core/state/health_book.h).
 *
 * It waits in the driver, never polls: with nothing happening it wakes once
 * per wait timeout (health_wait_ms, a minute by default) and does nothing.
 * An event is handled in a batch with whatever else is queued: each read
 * once (the recovery action the driver asks for, the ECC counts), written
 * into the book under the card's lock (no driver call is made holding it,
 * so a carve never waits for the driver on this thread's account), the
 * card's view installed again with the new health, the book stored, and
 * one snapshot published for the batch.
 *
 * A driver error (the wait failing, a card lost) never ends the thread: the
 * set is made again over the cards the driver still gives, each card it
 * cannot watch says `unknown: <why>`, and a failure that comes back at once
 * is retried after a pause that doubles up to a minute.  A library without
 * the event functions leaves every card of its family `unknown`, and the
 * tree is served as before.
 *
 * Stopping: the thread is woken from the driver's wait by SIGURG (a handler
 * that does nothing, installed without SA_RESTART); a driver that resumes
 * its wait after a signal delays the stop by at most one wait timeout.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state/health_book.h"
#include "core/state/health_store.h"
#include "core/model/log.h"
#include "core/engine/node_internal.h"
#include "core/model/timed_wait.h"

#define WANTED_EVENTS                                                                                                  \
	(MIG_EVENT_TYPE_XID_CRITICAL_ERROR | MIG_EVENT_TYPE_SINGLE_BIT_ECC_ERROR |                                     \
	 MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR | MIG_EVENT_TYPE_GPU_UNAVAILABLE_ERROR |                                  \
	 MIG_EVENT_TYPE_GPU_RECOVERY_ACTION)
#define BATCH_MAX 1024
#define LOGGED_PER_BATCH 16
#define BACKOFF_MAX_MS 60000

struct node_health {
	struct accel_node *node;
	struct node_family *fam;
	pthread_t thread;
	bool started;
	mig_event_set_t set;
	uint64_t topo_seen; /* node->topo_generation the set was made for */
	uint64_t mark;      /* node->gone_seq read before the queue was last seen empty (node_tombs.c) */
	bool retry;         /* a card could not be registered: try again after each wait */
	bool rewatch;       /* make the set again before the next wait */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping; /* guarded by lock */
};

static void on_wake(int sig)
{
	(void)sig; /* only to interrupt the driver's wait */
}

static bool stopping(struct node_health *w)
{
	bool s;

	pthread_mutex_lock(&w->lock);
	s = w->stopping;
	pthread_mutex_unlock(&w->lock);
	return s;
}

static int64_t wall_now(void)
{
	return (int64_t)time(NULL);
}

/* ---- reading the driver (no lock held) ------------------------------------ */

static unsigned read_action(const struct mig_lib *lib, mig_device_t h)
{
	mig_field_value_t v;

	if (!lib->DeviceGetFieldValues)
		return ACCEL_HEALTH_ACTION_UNKNOWN;
	memset(&v, 0, sizeof(v));
	v.fieldId = MIG_FI_DEV_GET_GPU_RECOVERY_ACTION;
	if (lib->DeviceGetFieldValues(h, 1, &v) != MIG_SUCCESS || v.nvmlReturn != MIG_SUCCESS ||
	    v.valueType != MIG_VALUE_TYPE_UNSIGNED_INT)
		return ACCEL_HEALTH_ACTION_UNKNOWN;
	return v.value.uiVal;
}

static void read_ecc(const struct mig_lib *lib, mig_device_t h, struct accel_health_event *e)
{
	unsigned cur = 0, pend = 0;

	e->ecc_known = lib->DeviceGetEccMode && lib->DeviceGetTotalEccErrors &&
	               lib->DeviceGetEccMode(h, &cur, &pend) == MIG_SUCCESS && cur == MIG_FEATURE_ENABLED &&
	               lib->DeviceGetTotalEccErrors(h, MIG_MEMORY_ERROR_CORRECTED, MIG_ECC_COUNTER_VOLATILE,
	                                            &e->ecc_corrected) == MIG_SUCCESS &&
	               lib->DeviceGetTotalEccErrors(h, MIG_MEMORY_ERROR_UNCORRECTED, MIG_ECC_COUNTER_VOLATILE,
	                                            &e->ecc_uncorrected) == MIG_SUCCESS;
}

/* ---- the book and the view (card lock held) ------------------------------ */

/*
 * A copy of the book to store, taken under the card's lock and written after
 * it (a durable write waits for the disk: no carve waits for it).
 */
struct pending_store {
	struct node_card *nc;
	struct accel_health_book book;
};

static void take_for_store(struct accel_node *node, struct node_card *nc, struct pending_store *out)
{
	memset(out, 0, sizeof(*out));
	if (!nc->health.dirty || node->opt.read_only)
		return;
	out->book = nc->health;
	out->book.jobs = nc->health.n_jobs ? malloc(nc->health.n_jobs * sizeof(*nc->health.jobs)) : NULL;
	if (nc->health.n_jobs && !out->book.jobs) {
		log_error("%s: out of memory storing its health; tried again at the next event", nc->card.name);
		memset(&out->book, 0, sizeof(out->book));
		return;
	}
	if (out->book.jobs)
		memcpy(out->book.jobs, nc->health.jobs, nc->health.n_jobs * sizeof(*nc->health.jobs));
	out->book.cap = out->book.n_jobs;
	out->nc = nc;
	nc->health.dirty = false;
}

/* Outside the card's lock (topo read-held, so the card stays). */
static void store(struct accel_node *node, struct pending_store *p)
{
	char why[ACCEL_TEXT_MAX];

	if (!p->nc)
		return;
	if (accel_health_store_save(node->state_dir, p->nc->ident.uuid, &p->book, why, sizeof(why)))
		log_error("%s: %s; its health is kept in memory only until the next event", p->nc->card.name, why);
	accel_health_book_clear(&p->book);
	p->nc = NULL;
}

static void set_unknown(struct accel_node *node, struct node_card *nc, const char *why)
{
	node_lock(&nc->lock, NODE_LOCK_CARD);
	if (strcmp(nc->health.unknown, why)) {
		snprintf(nc->health.unknown, sizeof(nc->health.unknown), "%s", why);
		node_card_reshow(node, nc); /* its view again, with the book laid over it */
	}
	node_unlock(&nc->lock, NODE_LOCK_CARD);
}

/* Commit a card's book and store it, the write after the lock. */
static void commit_and_store(struct accel_node *node, struct node_card *nc)
{
	struct pending_store p;

	node_lock(&nc->lock, NODE_LOCK_CARD);
	node_card_reshow(node, nc);
	take_for_store(node, nc, &p);
	node_unlock(&nc->lock, NODE_LOCK_CARD);
	store(node, &p);
}

static void all_unknown(struct node_health *w, const char *why)
{
	node_topo_rdlock(w->node);
	for (size_t c = 0; c < w->fam->n_cards; c++)
		if (!w->fam->cards[c]->absent)
			set_unknown(w->node, w->fam->cards[c], why);
	node_topo_unlock(w->node);
	accel_snapshot_unref(node_publish(w->node));
}

static void log_outcome(const struct node_card *nc, const struct accel_health_event *e,
                        const struct accel_health_outcome *out)
{
	char what[96];

	if (e->type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR)
		snprintf(what, sizeof(what), "Xid %u", e->xid);
	else
		snprintf(what, sizeof(what), "event 0x%llx", e->type);
	if (out->recovered)
		log_info("%s: %s: the driver reports the card recovered (recovery action NONE): its faults are cleared",
		         nc->card.name, what);
	else if (out->unknown_instance)
		log_error(
			"%s: %s on GPU instance %u compute instance %d, which no job holds: the card's health shows it",
			nc->card.name, what, e->gi, e->ci == MIG_EVENT_NO_INSTANCE ? -1 : (int)e->ci);
	else if (e->type != MIG_EVENT_TYPE_SINGLE_BIT_ECC_ERROR)
		log_error("%s: %s on %s (recovery action %s): jobs touched: %s", nc->card.name, what,
		          e->gi == MIG_EVENT_NO_INSTANCE ? "the card" : "an instance",
		          accel_health_action_name(e->action), out->n_touched ? out->touched : "none");
}

/* A fault that asked for a recovery action: over once the driver asks for none (a fault that asked none stays). */
static bool awaits_action(const struct accel_health *h)
{
	return h->state >= ACCEL_HEALTH_DEGRADED && h->action != MIG_GPU_RECOVERY_ACTION_NONE &&
	       h->action != ACCEL_HEALTH_ACTION_UNKNOWN;
}

/* What the driver says of the card now, laid over its book: at start and whenever the set is made again. */
static void reading(struct node_health *w, struct node_card *nc)
{
	struct accel_health_event e = { .type = MIG_EVENT_TYPE_GPU_RECOVERY_ACTION,
		                        .gi = MIG_EVENT_NO_INSTANCE,
		                        .ci = MIG_EVENT_NO_INSTANCE };
	struct accel_health_outcome out;
	struct pending_store p;
	bool faulted;

	e.action = read_action(&w->fam->lib, nc->card.handle);
	e.when = wall_now();
	read_ecc(&w->fam->lib, nc->card.handle, &e);
	node_lock(&nc->lock, NODE_LOCK_CARD);
	faulted = awaits_action(&nc->health.device);
	for (size_t i = 0; i < nc->health.n_jobs && !faulted; i++)
		faulted = awaits_action(&nc->health.jobs[i].h);
	if (e.action == MIG_GPU_RECOVERY_ACTION_NONE && faulted) {
		/* The action a stored fault asked for was done while nobody watched: that fault is over. */
		if (accel_health_book_event(&nc->health, nc->view, &e, &out) == 0)
			log_outcome(nc, &e, &out);
	} else if (e.action != ACCEL_HEALTH_ACTION_UNKNOWN && e.action != MIG_GPU_RECOVERY_ACTION_NONE &&
	           nc->health.device.action != e.action) {
		if (accel_health_book_event(&nc->health, nc->view, &e, &out) == 0)
			log_outcome(nc, &e, &out);
	}
	accel_health_book_ecc(&nc->health, &e);
	node_card_reshow(w->node, nc);
	take_for_store(w->node, nc, &p);
	node_unlock(&nc->lock, NODE_LOCK_CARD);
	store(w->node, &p);
}

/* ---- the event set --------------------------------------------------------- */

static void unwatch(struct node_health *w)
{
	if (w->set)
		w->fam->lib.EventSetFree(w->set);
	w->set = NULL;
}

/* Make the set again over every card the driver gives now; a card it cannot watch says why. */
static void watch(struct node_health *w)
{
	const struct mig_lib *lib = &w->fam->lib;
	char why[ACCEL_HEALTH_WHY_MAX];
	mig_return_t r;

	unwatch(w);
	w->retry = false;
	w->mark = node_gone_seq(w->node); /* a new set sees only what is raised from now on */
	r = lib->EventSetCreate(&w->set);
	if (r != MIG_SUCCESS) {
		w->set = NULL;
		snprintf(why, sizeof(why), "%sEventSetCreate failed: %s (%s)", lib->prefix, mig_lib_strerror(lib, r),
		         mig_return_name(r));
		log_error("%s: %s; health is unknown until it succeeds", w->fam->family->tree_prefix, why);
		all_unknown(w, why);
		return;
	}
	node_topo_rdlock(w->node);
	w->topo_seen = w->node->topo_generation;
	for (size_t c = 0; c < w->fam->n_cards; c++) {
		struct node_card *nc = w->fam->cards[c];
		unsigned long long supported = 0;

		if (nc->absent)
			continue;
		r = lib->DeviceGetSupportedEventTypes(nc->card.handle, &supported);
		if (r == MIG_SUCCESS && !(supported & WANTED_EVENTS))
			r = MIG_ERROR_NOT_SUPPORTED;
		if (r == MIG_SUCCESS)
			r = lib->DeviceRegisterEvents(nc->card.handle, supported & WANTED_EVENTS, w->set);
		if (r != MIG_SUCCESS) {
			snprintf(why, sizeof(why), "the driver does not report this card's events: %s (%s)",
			         mig_lib_strerror(lib, r), mig_return_name(r));
			w->retry = true;
			set_unknown(w->node, nc, why);
			continue;
		}
		set_unknown(w->node, nc, "");
		reading(w, nc);
	}
	node_topo_unlock(w->node);
	accel_snapshot_unref(node_publish(w->node));
}

static struct node_card *card_of(struct node_health *w, mig_device_t h)
{
	for (size_t c = 0; c < w->fam->n_cards; c++)
		if (!w->fam->cards[c]->absent && w->fam->cards[c]->card.handle == h)
			return w->fam->cards[c];
	return NULL;
}

/* One event: read what goes with it, then write it into its card's book. */
static struct node_card *handle(struct node_health *w, const mig_event_data_t *d, bool say)
{
	struct node_card *nc = card_of(w, d->device);
	struct accel_health_event e = {
		.type = d->eventType, .xid = (unsigned)d->eventData, .gi = d->gpuInstanceId, .ci = d->computeInstanceId
	};
	struct accel_health_outcome out;

	if (!nc) {
		log_error("%s: an event (0x%llx, data %llu) for a card accelfs does not know: ignored",
		          w->fam->family->tree_prefix, d->eventType, d->eventData);
		return NULL;
	}
	e.action = read_action(&w->fam->lib, nc->card.handle);
	e.when = wall_now();
	read_ecc(&w->fam->lib, nc->card.handle, &e);
	node_lock(&nc->lock, NODE_LOCK_CARD);
	/* Raised while an instance removed since held the id: its own, whoever took the id (node_tombs.c). */
	const struct node_tomb *t = e.gi == MIG_EVENT_NO_INSTANCE ? NULL : node_tomb_find(nc, e.gi, e.ci, w->mark);
	if (t) {
		unsigned xid = e.type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR ? e.xid : 0;
		const char *uuid = t->uuid[0] ? t->uuid : "no MIG device";

		if (say && t->kind == NODE_TOMB_JOB)
			log_notice("%s: event 0x%llx (Xid %u) on GPU instance %u is removed job %s's (instance %s): "
			           "charged to no job made on that id since",
			           nc->card.name, e.type, xid, e.gi, t->job[0] ? t->job : "-", uuid);
		else if (say)
			log_notice("%s: event 0x%llx (Xid %u) on GPU instance %u belongs to %s%s%s (instance %s), "
			           "reclaimed since: charged to no job made on that id since",
			           nc->card.name, e.type, xid, e.gi,
			           t->kind == NODE_TOMB_ORPHAN ? "the orphan job " : "a foreign instance",
			           t->kind == NODE_TOMB_ORPHAN ? t->job : "",
			           t->kind == NODE_TOMB_ORPHAN ? " left" : "", uuid);
		node_unlock(&nc->lock, NODE_LOCK_CARD);
		return NULL;
	}
	/* Under the card's lock nc->view cannot change: every install is made holding it. */
	if (accel_health_book_event(&nc->health, nc->view, &e, &out) != 0)
		log_error("%s: out of memory recording an event: its health may be behind", nc->card.name);
	else if (say)
		log_outcome(nc, &e, &out);
	node_unlock(&nc->lock, NODE_LOCK_CARD);
	return nc;
}

/* The first event and whatever else is queued; returns the wait's last answer. */
static mig_return_t batch(struct node_health *w, const mig_event_data_t *first)
{
	mig_event_data_t d = *first;
	mig_return_t r = MIG_SUCCESS;
	bool *touched;
	unsigned n;

	node_topo_rdlock(w->node);
	touched = calloc(w->fam->n_cards + 1, sizeof(*touched));
	for (n = 0; touched && r == MIG_SUCCESS && n < BATCH_MAX; n++) {
		/* A storm is said once: the first events each on a line, then how many more. */
		struct node_card *nc = handle(w, &d, n < LOGGED_PER_BATCH);

		for (size_t c = 0; nc && c < w->fam->n_cards; c++)
			touched[c] = touched[c] || w->fam->cards[c] == nc;
		uint64_t seq = node_gone_seq(w->node);

		r = w->fam->lib.EventSetWait_v2(w->set, &d, 0);
		if (r == MIG_ERROR_TIMEOUT)
			w->mark = seq; /* empty now: what comes next was raised after seq */
	}
	if (n > LOGGED_PER_BATCH)
		log_info("%s: %u more events came with those, not logged one by one: the health files and metrics "
		         "count every one",
		         w->fam->family->tree_prefix, n - LOGGED_PER_BATCH);
	for (size_t c = 0; touched && c < w->fam->n_cards; c++)
		if (touched[c])
			commit_and_store(w->node, w->fam->cards[c]);
	if (!touched)
		log_error("%s: out of memory handling events", w->fam->family->tree_prefix);
	free(touched);
	node_topo_unlock(w->node);
	accel_snapshot_unref(node_publish(w->node));
	return r == MIG_ERROR_TIMEOUT ? MIG_SUCCESS : r;
}

static void pause_ms(struct node_health *w, unsigned ms)
{
	struct timespec ts = accel_deadline_in_ms(ms);

	pthread_mutex_lock(&w->lock);
	while (!w->stopping && pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&w->lock);
}

static void *health_main(void *arg)
{
	struct node_health *w = arg;
	const struct mig_lib *lib = &w->fam->lib;
	unsigned backoff = 0;
	bool failed_last = false;

	while (!stopping(w)) {
		mig_event_data_t d;
		mig_return_t r;
		uint64_t gen;

		node_topo_rdlock(w->node);
		gen = w->node->topo_generation;
		node_topo_unlock(w->node);
		if (!w->set || gen != w->topo_seen || w->rewatch)
			watch(w);
		w->rewatch = false;
		if (!w->set) {
			backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2) : 1000;
			pause_ms(w, backoff);
			continue;
		}
		memset(&d, 0, sizeof(d));
		uint64_t seq = node_gone_seq(w->node);
		r = lib->EventSetWait_v2(w->set, &d, w->node->opt.health_wait_ms);
		if (r == MIG_ERROR_TIMEOUT)
			w->mark = seq;
		if (stopping(w))
			break;
		if (r == MIG_SUCCESS)
			r = batch(w, &d);
		if (r == MIG_ERROR_TIMEOUT || r == MIG_SUCCESS) {
			failed_last = false;
			backoff = 0;
			w->rewatch = r == MIG_ERROR_TIMEOUT && w->retry; /* a card that could not be watched: again */
			continue;
		}
		log_error("%s: waiting for the driver's events failed: %s (%s); watching again",
		          w->fam->family->tree_prefix, mig_lib_strerror(lib, r), mig_return_name(r));
		unwatch(w);
		if (failed_last) {
			backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2) : 1000;
			pause_ms(w, backoff);
		}
		failed_last = true;
	}
	return NULL;
}

/* ---- start and stop -------------------------------------------------------- */

static bool has_event_seam(const struct node_family *fam, char *why, size_t len)
{
	const struct mig_lib *lib = &fam->lib;
	const char *missing = !lib->EventSetCreate                 ? "EventSetCreate"
	                      : !lib->DeviceGetSupportedEventTypes ? "DeviceGetSupportedEventTypes"
	                      : !lib->DeviceRegisterEvents         ? "DeviceRegisterEvents"
	                      : !lib->EventSetWait_v2              ? "EventSetWait_v2"
	                      : !lib->EventSetFree                 ? "EventSetFree"
	                                                           : NULL;

	if (missing)
		snprintf(why, len, "%s lacks %s%s: this driver cannot report its cards' events", lib->path, lib->prefix,
		         missing);
	return !missing;
}

static void start_family(struct accel_node *node, struct node_family *fam)
{
	struct node_health *w;
	char why[ACCEL_HEALTH_WHY_MAX], name[16]; /* a thread's name: the kernel's 15 bytes and the NUL */

	if (!fam->loaded || fam->health)
		return;
	w = calloc(1, sizeof(*w));
	if (!w) {
		log_error("%s: out of memory starting its event thread; health is unknown", fam->family->tree_prefix);
		return;
	}
	w->node = node;
	w->fam = fam;
	pthread_mutex_init(&w->lock, NULL);
	accel_cond_init_monotonic(&w->cond);
	fam->health = w;
	if (!has_event_seam(fam, why, sizeof(why))) {
		log_info("%s: %s; health says unknown", fam->family->tree_prefix, why);
		all_unknown(w, why);
		return;
	}
	/* Synchronously, so that start-up asks the driver in one known order; then the thread waits. */
	watch(w);
	if (pthread_create(&w->thread, NULL, health_main, w)) {
		log_error("%s: cannot start its event thread; health is unknown", fam->family->tree_prefix);
		unwatch(w);
		all_unknown(w, "accelfs could not start the thread that waits for the driver's events");
		return;
	}
	snprintf(name, sizeof(name), "events-%s", fam->family->tree_prefix);
	pthread_setname_np(w->thread, name);
	w->started = true;
}

void node_health_start(struct accel_node *node)
{
	struct sigaction sa, old;

	/* A handler that does nothing, without SA_RESTART, so that SIGURG interrupts a wait; only if nobody has one. */
	if (sigaction(SIGURG, NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_wake;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGURG, &sa, NULL);
	}
	if (!node->opt.health_wait_ms)
		node->opt.health_wait_ms = 60000;
	for (size_t f = 0; f < node->n_fams; f++)
		start_family(node, &node->fams[f]);
}

void node_health_kick(struct accel_node *node)
{
	for (size_t f = 0; f < node->n_fams; f++) {
		start_family(node, &node->fams[f]);
		if (node->fams[f].health && node->fams[f].health->started)
			pthread_kill(node->fams[f].health->thread, SIGURG);
	}
}

void node_health_stop(struct accel_node *node)
{
	for (size_t f = 0; f < node->n_fams; f++) {
		struct node_health *w = node->fams[f].health;

		if (!w)
			continue;
		pthread_mutex_lock(&w->lock);
		w->stopping = true;
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->lock);
		if (w->started) {
			struct timespec ts;

			/* Again until it is out: a signal that comes before the wait begins is not seen by it. */
			do {
				pthread_kill(w->thread, SIGURG);
				ts = accel_deadline_on(CLOCK_REALTIME, 100); /* pthread_timedjoin_np counts on it */
			} while (pthread_timedjoin_np(w->thread, NULL, &ts) == ETIMEDOUT);
		}
		unwatch(w);
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
		node->fams[f].health = NULL;
	}
}
