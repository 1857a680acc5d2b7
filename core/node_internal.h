/* SPDX-License-Identifier: MIT */
/*
 * The node's insides, shared by its three files:
 *   node.c          cards and families, snapshots, the poller, start and stop
 *   node_refresh.c  re-reading one card from its driver and reconciling it
 *   node_jobs.c     mkdir and rmdir: names, carving, choosing, reclaiming
 * Nothing outside core/node*.c includes this.
 */
#ifndef ACCEL_NODE_INTERNAL_H
#define ACCEL_NODE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/card.h"
#include "core/catalog.h"
#include "core/inventory.h"
#include "core/node.h"
#include "core/reconcile.h"
#include "core/record.h"

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

int64_t node_now_ms(void);

/* Build and publish a snapshot from every card's view; notify if it differs. */
void node_publish(struct accel_node *node);
/* The card named "ppu3", with the topology read-held by the caller; NULL if none. */
struct node_card *node_find_card(struct accel_node *node, const char *device);
void node_card_free(struct node_card *nc);

/* The processes holding a device's nodes (its card and control nodes). */
int node_device_holders(const struct accel_device *d, struct accel_holder **out, size_t *n);

/* Re-read one card and rebuild its view (card lock held); act: carry out reconciliation's actions. */
void node_card_refresh(struct accel_node *node, struct node_card *nc, bool act);
/* A record by job name, (size_t)-1 if none; drop one from memory and disk. */
size_t node_find_record(const struct node_card *nc, const char *job);
int node_drop_record(struct accel_node *node, struct node_card *nc, size_t i, char *why, size_t whylen);

#endif
