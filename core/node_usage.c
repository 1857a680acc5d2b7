/* SPDX-License-Identifier: MIT */
/*
 * What jobs and cards use (core/usage.h), asked only by readers: one
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
#include "core/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/usage.h"
#include "core/usage_cache.h"

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
 * The sampler: asleep until a scrape wants readings, then one reading of
 * each wanted entry, one at a time.  An idle daemon's sampler never wakes.
 */
static void *sampler(void *arg)
{
	struct accel_node *node = arg;
	struct node_usage *u = node->usage;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	while (!u->stopping) {
		struct node_usage_entry *e;

		if (!u->kicked) {
			pthread_cond_wait(&u->kick, &u->lock);
			continue;
		}
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

/* Ask the sampler for a reading of e (its what filled in). */
static void want(struct accel_node *node, struct node_usage_entry *e)
{
	struct node_usage *u = node->usage;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	e->wanted = true;
	u->kicked = true;
	if (!u->started && !u->stopping && !pthread_create(&u->thread, NULL, sampler, node)) {
		pthread_setname_np(u->thread, "usage");
		u->started = true;
	}
	pthread_cond_signal(&u->kick);
	node_unlock(&u->lock, NODE_LOCK_LEAF);
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

int accel_node_usage_text(struct accel_node *node, const struct accel_snapshot *s, const struct accel_device *d,
                          const struct accel_job *j, char **text)
{
	struct accel_usage u;
	size_t len = 0;
	FILE *f;
	int ret = accel_node_usage(node, s, d, j, true, &u);

	*text = NULL;
	if (ret)
		return ret;
	f = open_memstream(text, &len);
	if (!f)
		return -ENOMEM;
	accel_usage_text(&u, j != NULL, f);
	if (fclose(f)) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}
