/* SPDX-License-Identifier: MIT */
/*
 * The utilization cache (core/engine/node_usage.c): one sampling state per job
 * identity (its MIG UUID and creation time) or card (its UUID), found or
 * made under the table's lock, a leaf held for the lookup alone.  An entry
 * is pruned once no snapshot shows its job and no reader holds it.
 */
#ifndef ACCEL_USAGE_CACHE_H
#define ACCEL_USAGE_CACHE_H

#include <pthread.h>

#include "core/model/model.h"
#include "core/driver/usage.h"

#define NODE_USAGE_KEY_MAX (ACCEL_UUID_MAX + 32)
#define NODE_USAGE_BUCKETS 256

/* What an entry samples: a card, or one GPU instance of it (mig), as the snapshot named them. */
struct node_usage_what {
	char device[16];
	char device_uuid[ACCEL_UUID_MAX];
	bool mig;
	unsigned gi;
	char uuid[ACCEL_UUID_MAX]; /* the MIG device's, or the card's */
	unsigned sms, card_sms;
};

struct node_usage_entry {
	struct node_usage_entry *next;
	struct node_usage_entry *same_hash; /* the next of its bucket (struct node_usage's by_hash) */
	char key[NODE_USAGE_KEY_MAX];
	uint32_t hash;        /* of key, compared first */
	unsigned users;       /* readers holding it: never freed while one does */
	bool wanted;          /* a scrape asked for a reading: the sampler's to take (guarded by the table's lock) */
	pthread_mutex_t lock; /* one reading at a time; guards what and probe */
	struct node_usage_what what;
	struct accel_usage_probe probe;
	/* Guarded by the table's lock: the last reading, for the snapshot rows (accel_node_usage_shown). */
	bool shown_valid;
	struct accel_usage shown;
	int64_t shown_ms; /* node_now_ms() of that reading */
};

struct node_usage {
	pthread_mutex_t lock; /* a leaf: the list, users, wanted, pruned, the sampler's flags */
	struct node_usage_entry *head;
	/* The same entries by their key's hash: a scrape finds a hundred jobs' without walking the list each time. */
	struct node_usage_entry *by_hash[NODE_USAGE_BUCKETS];
	uint64_t pruned; /* the snapshot generation the list was last pruned against */
	/*
	 * The sampler (core/engine/node_usage.c): a thread started by the first
	 * scrape, asleep until a scrape wants a reading, so that a scrape
	 * renders what the last one asked for and never waits for the driver.
	 */
	pthread_cond_t kick;
	bool kicked, stopping, started;
	pthread_t thread;
	uint64_t shown_gen; /* grows (atomically) with every reading published: accel_node_shown_generation's part */
};

struct node_usage *node_usage_new(void);
/* Stop the sampler and free the table; the samples go back to their libraries, which must still be open. */
void node_usage_free(struct node_usage *u);

void node_usage_job_key(char *buf, size_t len, const struct accel_job *j);
void node_usage_card_key(char *buf, size_t len, const struct accel_device *d);

/* key's entry (made if new), held until node_usage_put; NULL when out of memory.  Prunes against s. */
struct node_usage_entry *node_usage_get(struct node_usage *u, const struct accel_snapshot *s, const char *key);
void node_usage_put(struct node_usage *u, struct node_usage_entry *e);
/* Publish e's last reading (after a reading, e's lock held), and copy key's: 0, or -ENOENT. */
void node_usage_show(struct node_usage *u, struct node_usage_entry *e, const struct accel_usage *last);
int node_usage_shown(struct node_usage *u, const char *key, struct accel_usage *out, int64_t *at_ms);

/* What a new entry samples: the k-th of node_usage_shown_many's keys (filled in before anyone can take it). */
typedef void node_usage_what_fn(void *ctx, size_t k, struct node_usage_what *w);
/*
 * The published readings of n keys at once, under one hold of the table's
 * lock (a scrape of a hundred jobs takes it once, not three hundred
 * times): *out[k] (its values, ACCEL_USAGE_VALUES: the sentences left
 * empty) and *ok[k] (false: none yet), where the caller wants them.  want: a key whose reading
 * is missing or was taken at stale_ms (node_now_ms()) or before is marked wanted,
 * its entry made if new (what(ctx, k, ...)); returns how many are
 * wanted, for the caller to kick the sampler once.  Prunes against s.
 */
size_t node_usage_shown_many(struct node_usage *u, const struct accel_snapshot *s,
                             const char (*keys)[NODE_USAGE_KEY_MAX], size_t n, bool want, int64_t stale_ms,
                             node_usage_what_fn *what, void *ctx, struct accel_usage **out, bool **ok);

#endif
