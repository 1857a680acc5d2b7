/* SPDX-License-Identifier: MIT */
/* The utilization cache (core/engine/usage_cache.h). */
#include "core/engine/usage_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/node_internal.h"
#include "core/model/timed_wait.h"

struct node_usage *node_usage_new(void)
{
	struct node_usage *u = calloc(1, sizeof(*u));

	if (u) {
		pthread_mutex_init(&u->lock, NULL);
		accel_cond_init_monotonic(&u->kick); /* the sampler's settle is a timed wait */
	}
	return u;
}

static void entry_free(struct node_usage_entry *e)
{
	accel_usage_probe_free(&e->probe);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void node_usage_free(struct node_usage *u)
{
	if (!u)
		return;
	node_lock(&u->lock, NODE_LOCK_LEAF);
	u->stopping = true;
	pthread_cond_signal(&u->kick);
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	if (u->started)
		pthread_join(u->thread, NULL);
	while (u->head) {
		struct node_usage_entry *e = u->head;

		u->head = e->next;
		entry_free(e);
	}
	pthread_cond_destroy(&u->kick);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void node_usage_job_key(char *buf, size_t len, const struct accel_job *j)
{
	snprintf(buf, len, "%s@%lld", j->uuid, (long long)j->created);
}

void node_usage_card_key(char *buf, size_t len, const struct accel_device *d)
{
	snprintf(buf, len, "card:%s", d->uuid);
}

static bool key_in(const struct accel_snapshot *s, const char *key)
{
	char k[NODE_USAGE_KEY_MAX];

	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];

		node_usage_card_key(k, sizeof(k), d);
		if (!strcmp(k, key))
			return true;
		for (size_t j = 0; j < d->n_jobs; j++) {
			node_usage_job_key(k, sizeof(k), &d->jobs[j]);
			if (!strcmp(k, key))
				return true;
		}
	}
	return false;
}

/* Drop the entries of jobs and cards s no longer shows, once per snapshot generation (u->lock held). */
static void prune(struct node_usage *u, const struct accel_snapshot *s, struct node_usage_entry **gone)
{
	if (s->generation <= u->pruned)
		return;
	u->pruned = s->generation;
	for (struct node_usage_entry **at = &u->head; *at;) {
		struct node_usage_entry *e = *at;

		if (!e->users && !key_in(s, e->key)) {
			struct node_usage_entry **b = &u->by_hash[e->hash % NODE_USAGE_BUCKETS];

			while (*b != e)
				b = &(*b)->same_hash;
			*b = e->same_hash;
			*at = e->next;
			e->next = *gone;
			*gone = e;
		} else {
			at = &e->next;
		}
	}
}

/* A key's hash: compared before the key itself, in a table of a hundred jobs' entries. */
static uint32_t key_hash(const char *key)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return h;
}

/* key's entry, or NULL (u->lock held). */
static struct node_usage_entry *find(struct node_usage *u, const char *key)
{
	struct node_usage_entry *e;
	uint32_t h = key_hash(key);

	for (e = u->by_hash[h % NODE_USAGE_BUCKETS]; e && (e->hash != h || strcmp(e->key, key)); e = e->same_hash)
		;
	return e;
}

/* A new entry for key, first in the list (u->lock held); NULL when out of memory. */
static struct node_usage_entry *make(struct node_usage *u, const char *key)
{
	struct node_usage_entry *e = calloc(1, sizeof(*e));

	if (e) {
		snprintf(e->key, sizeof(e->key), "%s", key);
		e->hash = key_hash(key);
		pthread_mutex_init(&e->lock, NULL);
		accel_usage_probe_init(&e->probe);
		e->next = u->head;
		u->head = e;
		e->same_hash = u->by_hash[e->hash % NODE_USAGE_BUCKETS];
		u->by_hash[e->hash % NODE_USAGE_BUCKETS] = e;
	}
	return e;
}

/* Samples go back to the driver outside the table's lock. */
static void free_gone(struct node_usage_entry *gone)
{
	while (gone) {
		struct node_usage_entry *next = gone->next;

		entry_free(gone);
		gone = next;
	}
}

struct node_usage_entry *node_usage_get(struct node_usage *u, const struct accel_snapshot *s, const char *key)
{
	struct node_usage_entry *e, *gone = NULL;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	prune(u, s, &gone);
	e = find(u, key);
	if (!e)
		e = make(u, key);
	if (e)
		e->users++;
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	free_gone(gone);
	return e;
}

void node_usage_put(struct node_usage *u, struct node_usage_entry *e)
{
	node_lock(&u->lock, NODE_LOCK_LEAF);
	e->users--;
	node_unlock(&u->lock, NODE_LOCK_LEAF);
}

void node_usage_show(struct node_usage *u, struct node_usage_entry *e, const struct accel_usage *last)
{
	node_lock(&u->lock, NODE_LOCK_LEAF);
	e->shown = *last;
	e->shown_valid = true;
	e->shown_ms = e->probe.last_ms;
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	__atomic_add_fetch(&u->shown_gen, 1, __ATOMIC_RELEASE);
}

int node_usage_shown(struct node_usage *u, const char *key, struct accel_usage *out, int64_t *at_ms)
{
	struct node_usage_entry *e;
	int ret = -ENOENT;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	e = find(u, key);
	if (e && e->shown_valid) {
		*out = e->shown;
		*at_ms = e->shown_ms;
		ret = 0;
	}
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	return ret;
}

size_t node_usage_shown_many(struct node_usage *u, const struct accel_snapshot *s,
                             const char (*keys)[NODE_USAGE_KEY_MAX], size_t n, bool want, int64_t stale_ms,
                             node_usage_what_fn *what, void *ctx, struct accel_usage **out, bool **ok)
{
	struct node_usage_entry *gone = NULL;
	size_t wanted = 0;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	prune(u, s, &gone);
	for (size_t k = 0; k < n; k++) {
		uint32_t h = key_hash(keys[k]);
		struct node_usage_entry *e;

		for (e = u->by_hash[h % NODE_USAGE_BUCKETS]; e && (e->hash != h || strcmp(e->key, keys[k]));
		     e = e->same_hash)
			; /* find(), its hash taken once */
		*ok[k] = e && e->shown_valid;
		if (*ok[k]) {
			memcpy(out[k], &e->shown, ACCEL_USAGE_VALUES); /* the values: the sentences are the file's */
			out[k]->gpm_why[0] = out[k]->memory_why[0] = out[k]->energy_why[0] = '\0';
		}
		if (!want || (*ok[k] && e->shown_ms > stale_ms))
			continue;
		if (!e && (e = make(u, keys[k])))
			what(ctx, k, &e->what); /* nobody can hold it yet: the sampler takes only what is wanted */
		if (e) {
			e->wanted = true;
			wanted++;
		}
	}
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	free_gone(gone);
	return wanted;
}
