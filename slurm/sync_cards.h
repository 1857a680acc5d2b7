/* SPDX-License-Identifier: MIT */
/*
 * What each card of the node can take now, as accelfs-slurm-sync tells Slurm:
 * read from one snapshot (MOUNT/node.json), so that a count and the sentence
 * saying why it is low never disagree.
 *
 * A card takes new jobs when node.json's .devices[].admits.new_jobs says so
 * (docs/tree.md).  An accelfs without `admits` is read the older way: a card
 * whose health is `failed`, that is `absent`, or whose mig/cordon reads 1
 * takes none.  A card that takes none gives Slurm no capacity, whatever its
 * `available` says, and is named in the node's comment.
 */
#ifndef ACCELFS_SLURM_SYNC_CARDS_H
#define ACCELFS_SLURM_SYNC_CARDS_H

#include "mig_jobs.h"

#include <stddef.h>

#define CARDS_MAX 64

/* A card that takes no new job, and why (admits.condition and admits.why). */
struct card_closed {
	char name[AM_NAME_MAX];
	char condition[32]; /* cordoned, draining, mode-pending, failed, mig-disabled, absent */
	char why[512];      /* "" when accelfs gave no sentence */
};

struct node_cards {
	struct card_closed closed[CARDS_MAX];
	size_t nclosed;
	struct am_avail avail[AM_MAX_PROFILES]; /* per profile, over the cards that take jobs */
	size_t navail;
};

/* Read MOUNT/node.json.  0, or -1 with err. */
int cards_read(const char *mount, struct node_cards *out, char *err, size_t len);

/*
 * The node's comment for Slurm: "accelfs: gpu0 cordoned (WHY); ppu0 failed
 * (WHY)", cut to fit len; "" when every card takes jobs.
 */
void cards_comment(const struct node_cards *c, char *out, size_t len);

#endif
