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

#define KEY_MAX (ACCEL_UUID_MAX + 32)

struct usage_entry {
	struct usage_entry *next;
	char key[KEY_MAX];
	unsigned users;       /* readers holding it: never freed while one does */
	pthread_mutex_t lock; /* one reading at a time; guards probe */
	struct accel_usage_probe probe;
};

struct node_usage {
	pthread_mutex_t lock; /* a leaf: the list, users, pruned */
	struct usage_entry *head;
	uint64_t pruned; /* the snapshot generation the list was last pruned against */
};

struct node_usage *node_usage_new(void)
{
	struct node_usage *u = calloc(1, sizeof(*u));

	if (u)
		pthread_mutex_init(&u->lock, NULL);
	return u;
}

static void entry_free(struct usage_entry *e)
{
	accel_usage_probe_free(&e->probe);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void node_usage_free(struct node_usage *u)
{
	if (!u)
		return;
	while (u->head) {
		struct usage_entry *e = u->head;

		u->head = e->next;
		entry_free(e);
	}
	pthread_mutex_destroy(&u->lock);
	free(u);
}

static void job_key(char *buf, size_t len, const struct accel_job *j)
{
	snprintf(buf, len, "%s@%lld", j->uuid, (long long)j->created);
}

static void card_key(char *buf, size_t len, const struct accel_device *d)
{
	snprintf(buf, len, "card:%s", d->uuid);
}

static bool key_in(const struct accel_snapshot *s, const char *key)
{
	char k[KEY_MAX];

	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];

		card_key(k, sizeof(k), d);
		if (!strcmp(k, key))
			return true;
		for (size_t j = 0; j < d->n_jobs; j++) {
			job_key(k, sizeof(k), &d->jobs[j]);
			if (!strcmp(k, key))
				return true;
		}
	}
	return false;
}

/* Drop the entries of jobs and cards s no longer shows, once per snapshot generation (u->lock held). */
static void prune(struct node_usage *u, const struct accel_snapshot *s, struct usage_entry **gone)
{
	if (s->generation <= u->pruned)
		return;
	u->pruned = s->generation;
	for (struct usage_entry **at = &u->head; *at;) {
		struct usage_entry *e = *at;

		if (!e->users && !key_in(s, e->key)) {
			*at = e->next;
			e->next = *gone;
			*gone = e;
		} else {
			at = &e->next;
		}
	}
}

static struct usage_entry *entry_get(struct accel_node *node, const struct accel_snapshot *s, const char *key)
{
	struct node_usage *u = node->usage;
	struct usage_entry *e, *gone = NULL;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	prune(u, s, &gone);
	for (e = u->head; e && strcmp(e->key, key); e = e->next)
		;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (e) {
			snprintf(e->key, sizeof(e->key), "%s", key);
			pthread_mutex_init(&e->lock, NULL);
			accel_usage_probe_init(&e->probe);
			e->next = u->head;
			u->head = e;
		}
	}
	if (e)
		e->users++;
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	/* Samples go back to the driver outside the table's lock. */
	while (gone) {
		struct usage_entry *next = gone->next;

		entry_free(gone);
		gone = next;
	}
	return e;
}

static void entry_put(struct accel_node *node, struct usage_entry *e)
{
	node_lock(&node->usage->lock, NODE_LOCK_LEAF);
	e->users--;
	node_unlock(&node->usage->lock, NODE_LOCK_LEAF);
}

/* One reading of d (j: its job's GPU instance, NULL: the card), topo read-held only for the calls. */
static void step(struct accel_node *node, const struct accel_device *d, const struct accel_job *j,
                 struct accel_usage_probe *p)
{
	struct accel_usage_target t = { .card_name = d->name, .mig = j != NULL, .gi = j ? j->gi : 0 };
	struct node_card *nc;
	char why[ACCEL_TEXT_MAX];

	t.uuid = j ? j->uuid : d->uuid;
	accel_usage_sms(d, j, &t.sms, &t.card_sms);
	node_topo_rdlock(node);
	nc = node_find_card(node, d->name);
	if (!nc || nc->absent || !nc->card.lib || strcmp(nc->ident.uuid, d->uuid)) {
		snprintf(why, sizeof(why), "%s is not on this node now: no driver can say what it uses", d->name);
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

int accel_node_usage(struct accel_node *node, const struct accel_snapshot *s, const struct accel_device *d,
                     const struct accel_job *j, bool may_wait, struct accel_usage *out)
{
	char key[KEY_MAX];
	struct usage_entry *e;
	struct accel_usage_probe *p;
	int64_t now;

	if (j)
		job_key(key, sizeof(key), j);
	else
		card_key(key, sizeof(key), d);
	e = entry_get(node, s, key);
	if (!e)
		return -ENOMEM;
	p = &e->probe;
	pthread_mutex_lock(&e->lock);
	now = node_now_ms();
	if (!p->last_ms || now - p->last_ms >= ACCEL_USAGE_WINDOW_MS || (may_wait && !p->last.gpm && p->prev >= 0)) {
		bool fresh = p->prev < 0 || now - p->prev_ms > ACCEL_USAGE_STALE_MS;

		step(node, d, j, p);
		/*
		 * A reader (not a scrape) with nothing recent to show waits one
		 * window, with no node lock held, and reads again: what it
		 * sees is then the last second, not the time since the last
		 * reader came.  The long window still counts in the means.
		 */
		if (fresh && may_wait && p->prev >= 0) {
			struct timespec w = { ACCEL_USAGE_WINDOW_MS / 1000, (ACCEL_USAGE_WINDOW_MS % 1000) * 1000000L };

			nanosleep(&w, NULL);
			step(node, d, j, p);
		}
	}
	*out = p->last;
	pthread_mutex_unlock(&e->lock);
	entry_put(node, e);
	return 0;
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
