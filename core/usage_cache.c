/* SPDX-License-Identifier: MIT */
/* The utilization cache (core/usage_cache.h). */
#include "core/usage_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/node_internal.h"

struct node_usage *node_usage_new(void)
{
	struct node_usage *u = calloc(1, sizeof(*u));

	if (u) {
		pthread_mutex_init(&u->lock, NULL);
		pthread_cond_init(&u->kick, NULL);
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
			*at = e->next;
			e->next = *gone;
			*gone = e;
		} else {
			at = &e->next;
		}
	}
}

struct node_usage_entry *node_usage_get(struct node_usage *u, const struct accel_snapshot *s, const char *key)
{
	struct node_usage_entry *e, *gone = NULL;

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
		struct node_usage_entry *next = gone->next;

		entry_free(gone);
		gone = next;
	}
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
}

int node_usage_shown(struct node_usage *u, const char *key, struct accel_usage *out, int64_t *at_ms)
{
	struct node_usage_entry *e;
	int ret = -ENOENT;

	node_lock(&u->lock, NODE_LOCK_LEAF);
	for (e = u->head; e && strcmp(e->key, key); e = e->next)
		;
	if (e && e->shown_valid) {
		*out = e->shown;
		*at_ms = e->shown_ms;
		ret = 0;
	}
	node_unlock(&u->lock, NODE_LOCK_LEAF);
	return ret;
}
