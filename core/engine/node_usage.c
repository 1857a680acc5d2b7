/* SPDX-License-Identifier: MIT */
/*
 * What jobs and cards use (core/driver/usage.h), asked only by readers: one
 * sampling state per job identity (its MIG UUID and creation time, so a
 * GPU instance id reused by a later job never carries the earlier job's
 * samples), one per card (its UUID).  A reading within ACCEL_USAGE_WINDOW_MS
 * of the last one answers from it: a hundred readers of one job cost the
 * driver what one does.  Readings of one target are serialized by its
 * entry's lock; the table's lock is held to find an entry, never across a
 * driver call.  The driver is asked with topo read-held, as every
 * operation holds it, and never under a card's lock: a carve never waits
 * for a reading, nor a reading for a carve.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model/timed_wait.h"
#include "core/driver/usage.h"
#include "core/engine/usage_cache.h"

/* What an entry for d (j: its job's GPU instance, NULL: the card) samples. */
static void what_of(const struct accel_device *d, const struct accel_job *j, struct node_usage_what *w)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->device, sizeof(w->device), "%s", d->name);
	snprintf(w->device_uuid, sizeof(w->device_uuid), "%s", d->uuid);
	w->mig = j != NULL;
	w->gi = j ? j->gi : 0;
	snprintf(w->uuid, sizeof(w->uuid), "%s", j ? j->uuid : d->uuid);
	accel_usage_sms(d, j, &w->sms, &w->card_sms);
}

/* One reading of w into p, topo read-held only for the calls (entry lock held). */
static void step(struct accel_node *node, const struct node_usage_what *w, struct accel_usage_probe *p)
{
	struct accel_usage_target t = { .card_name = w->device,
		                        .mig = w->mig,
		                        .gi = w->gi,
		                        .uuid = w->uuid,
		                        .sms = w->sms,
		                        .card_sms = w->card_sms };
	struct node_card *nc;
	char why[ACCEL_TEXT_MAX];

	node_topo_rdlock(node);
	nc = node_find_card(node, w->device);
	if (!nc || nc->absent || !nc->card.lib || strcmp(nc->ident.uuid, w->device_uuid)) {
		snprintf(why, sizeof(why), "%s is not on this node now: no driver can say what it uses", w->device);
		accel_usage_unknown(p, why);
	} else {
		struct timespec now;

		t.lib = nc->card.lib;
		t.card = nc->card.handle;
		clock_gettime(CLOCK_REALTIME, &now);
		accel_usage_step(p, &t, node_now_ms(), (int64_t)now.tv_sec);
	}
	node_topo_unlock(node);
}

/*
 * The sampler: asleep until a scrape wants readings, then, once the scrape
 * that asked had ACCEL_USAGE_SETTLE_MS to be answered (its text goes out
 * with no driver call beside it), one reading of each wanted entry, one at
 * a time.  An idle daemon's sampler never wakes.
 */
static void *sampler(void *arg)
{
	struct accel_node *node = arg;
	struct node_usage *u = node->usage;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	while (!u->stopping) {
		struct node_usage_entry *e;
		struct timespec settle;

		if (!u->kicked) {
			pthread_cond_wait(&u->kick, &u->lock);
			continue;
		}
		settle = accel_deadline_in_ms(ACCEL_USAGE_SETTLE_MS);
		while (!u->stopping && pthread_cond_timedwait(&u->kick, &u->lock, &settle) != ETIMEDOUT)
			;
		u->kicked = false;
		for (e = u->head; e && !u->stopping; e = e ? e->next : u->head) {
			if (!e->wanted)
				continue;
			e->wanted = false;
			e->users++; /* kept in the list while it is read: the walk goes on from it */
			node_unlock(&u->lock, NODE_LOCK_LEAF);
			pthread_mutex_lock(&e->lock);
			if (!e->probe.last_ms || node_now_ms() - e->probe.last_ms >= ACCEL_USAGE_WINDOW_MS) {
				step(node, &e->what, &e->probe);
				node_usage_show(u, e, &e->probe.last);
			}
			pthread_mutex_unlock(&e->lock);
			node_lock(&u->lock, NODE_LOCK_LEAF);
			e->users--;
		}
	}
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	return NULL;
}

/* Wake the sampler (started at the first call) for what is marked wanted: one signal, however many. */
static void kick(struct accel_node *node)
{
	struct node_usage *u = node->usage;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	u->kicked = true;
	if (!u->started && !u->stopping && !pthread_create(&u->thread, NULL, sampler, node)) {
		pthread_setname_np(u->thread, "usage");
		u->started = true;
	}
	pthread_cond_signal(&u->kick);
	node_unlock(&u->lock, NODE_LOCK_LEAF);
}

/* Ask the sampler for a reading of e (its what filled in). */
static void want(struct accel_node *node, struct node_usage_entry *e)
{
	struct node_usage *u = node->usage;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	e->wanted = true;
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	kick(node);
}

int accel_node_usage(struct accel_node *node, const struct accel_snapshot *s, const struct accel_device *d,
                     const struct accel_job *j, bool may_wait, struct accel_usage *out)
{
	char key[NODE_USAGE_KEY_MAX];
	struct node_usage_entry *e;
	struct accel_usage_probe *p;
	bool stale;
	int64_t now;

	if (j)
		node_usage_job_key(key, sizeof(key), j);
	else
		node_usage_card_key(key, sizeof(key), d);
	e = node_usage_get(node->usage, s, key);
	if (!e)
		return -ENOMEM;
	p = &e->probe;
	pthread_mutex_lock(&e->lock);
	what_of(d, j, &e->what);
	now = node_now_ms();
	stale = !p->last_ms || now - p->last_ms >= ACCEL_USAGE_WINDOW_MS;
	if (!may_wait) {
		/*
		 * A scrape (metrics, node.json) never asks the driver itself: it
		 * shows the last reading and wants a new one, which the sampler
		 * takes at once; the next scrape shows it.
		 */
		*out = p->last;
		pthread_mutex_unlock(&e->lock);
		if (stale)
			want(node, e);
		node_usage_put(node->usage, e);
		return 0;
	}
	if (stale || (!p->last.gpm && p->prev >= 0)) {
		bool fresh = p->prev < 0 || now - p->prev_ms > ACCEL_USAGE_STALE_MS;

		step(node, &e->what, p);
		/*
		 * A reader with nothing recent to show waits one window, with no
		 * node lock held, and reads again: what it sees is then the last
		 * second, not the time since the last reader came.  The long
		 * window still counts in the means.
		 */
		if (fresh && p->prev >= 0) {
			struct timespec w = { ACCEL_USAGE_WINDOW_MS / 1000, (ACCEL_USAGE_WINDOW_MS % 1000) * 1000000L };

			nanosleep(&w, NULL);
			step(node, &e->what, p);
		}
	}
	*out = p->last;
	node_usage_show(node->usage, e, &p->last);
	pthread_mutex_unlock(&e->lock);
	node_usage_put(node->usage, e);
	return 0;
}

int accel_node_usage_shown(struct accel_node *node, const struct accel_snapshot *s, const struct accel_device *d,
                           const struct accel_job *j, bool want_new, struct accel_usage *out)
{
	char key[NODE_USAGE_KEY_MAX];
	int64_t at = 0;
	int ret;

	if (j)
		node_usage_job_key(key, sizeof(key), j);
	else
		node_usage_card_key(key, sizeof(key), d);
	ret = node_usage_shown(node->usage, key, out, &at);
	if (want_new && (ret || node_now_ms() - at >= ACCEL_USAGE_WINDOW_MS)) {
		/* The sampler takes it, after: a snapshot row never waits for a reading (trylock: one is under way). */
		struct node_usage_entry *e = node_usage_get(node->usage, s, key);

		if (e && !pthread_mutex_trylock(&e->lock)) {
			what_of(d, j, &e->what);
			pthread_mutex_unlock(&e->lock);
			want(node, e);
		}
		if (e)
			node_usage_put(node->usage, e);
	}
	return ret;
}

/* The ready jobs of a snapshot, in its order, for node_usage_shown_many. */
struct ready_jobs {
	const struct accel_device **dev;
	const struct accel_job **job;
};

static void what_of_ready(void *ctx, size_t k, struct node_usage_what *w)
{
	const struct ready_jobs *r = ctx;

	what_of(r->dev[k], r->job[k], w);
}

int accel_node_usage_shown_jobs(struct accel_node *node, const struct accel_snapshot *s, bool want_new,
                                struct accel_usage *out, bool *known)
{
	size_t n = 0, k = 0, r = 0;
	struct ready_jobs ready;
	char(*keys)[NODE_USAGE_KEY_MAX];
	struct accel_usage **to;
	bool **ok;
	int ret = -ENOMEM;

	for (size_t i = 0; i < s->n_devices; i++)
		n += s->devices[i]->n_jobs;
	keys = malloc((n ? n : 1) * sizeof(*keys));
	ready.dev = malloc((n ? n : 1) * sizeof(*ready.dev));
	ready.job = malloc((n ? n : 1) * sizeof(*ready.job));
	to = malloc((n ? n : 1) * sizeof(*to));
	ok = malloc((n ? n : 1) * sizeof(*ok));
	if (keys && ready.dev && ready.job && to && ok) {
		/* The ready jobs alone are looked up, each reading copied straight to its job's place. */
		for (size_t i = 0; i < s->n_devices; i++)
			for (size_t j = 0; j < s->devices[i]->n_jobs; j++, k++) {
				const struct accel_job *job = &s->devices[i]->jobs[j];

				known[k] = false;
				if (job->state != ACCEL_JOB_READY)
					continue;
				node_usage_job_key(keys[r], sizeof(keys[r]), job);
				ready.dev[r] = s->devices[i];
				ready.job[r] = job;
				to[r] = &out[k];
				ok[r++] = &known[k];
			}
		if (node_usage_shown_many(node->usage, s, (const char(*)[NODE_USAGE_KEY_MAX])keys, r, want_new,
		                          node_now_ms() - ACCEL_USAGE_WINDOW_MS, what_of_ready, &ready, to, ok))
			kick(node); /* once, after the table's lock; the sampler lets the scrape be answered first */
		ret = 0;
	}
	free(keys);
	free(ready.dev);
	free(ready.job);
	free(to);
	free(ok);
	return ret;
}
