/* SPDX-License-Identifier: MIT */
/*
 * The utilization cache (core/node_usage.c): one sampling state per job
 * identity (its MIG UUID and creation time) or card (its UUID), found or
 * made under the table's lock, a leaf held for the lookup alone.  An entry
 * is pruned once no snapshot shows its job and no reader holds it.
 */
#ifndef ACCEL_USAGE_CACHE_H
#define ACCEL_USAGE_CACHE_H

#include <pthread.h>

#include "core/model.h"
#include "core/usage.h"

#define NODE_USAGE_KEY_MAX (ACCEL_UUID_MAX + 32)

struct node_usage_entry {
	struct node_usage_entry *next;
	char key[NODE_USAGE_KEY_MAX];
	unsigned users;       /* readers holding it: never freed while one does */
	pthread_mutex_t lock; /* one reading at a time; guards probe */
	struct accel_usage_probe probe;
};

struct node_usage {
	pthread_mutex_t lock; /* a leaf: the list, users, pruned */
	struct node_usage_entry *head;
	uint64_t pruned; /* the snapshot generation the list was last pruned against */
};

struct node_usage *node_usage_new(void);
/* After the last reader; the samples go back to their libraries, which must still be open. */
void node_usage_free(struct node_usage *u);

void node_usage_job_key(char *buf, size_t len, const struct accel_job *j);
void node_usage_card_key(char *buf, size_t len, const struct accel_device *d);

/* key's entry (made if new), held until node_usage_put; NULL when out of memory.  Prunes against s. */
struct node_usage_entry *node_usage_get(struct node_usage *u, const struct accel_snapshot *s, const char *key);
void node_usage_put(struct node_usage *u, struct node_usage_entry *e);

#endif
