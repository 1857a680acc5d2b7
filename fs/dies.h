/* SPDX-License-Identifier: MIT */
/*
 * dies/: the barswap dies in the tree (docs/dies.md).
 *
 *   dies/slot          the slot: active die, holders and waiters with pids,
 *                      the lease left, a lent die and whom the slot waits on
 *   dies/lease_ms      the lease: while others wait, a holder keeps the slot
 *                      at most this long (0: none)
 *   dies/<n>/info      bus id, VRAM bytes, enabled, parked/held/lent ...
 *   dies/<n>/enabled   1 or 0; writing 0 quarantines the die
 *   dies/<n>/driver    the driver the die is bound to; a holder lends it
 *                      by writing a driver's name, takes it back with bar_swap
 *   dies/<n>/policy    pinned or resident (what a lent die does when let go)
 *   dies/<n>/vram      the die's VRAM: opening it holds the slot
 *
 * This file is the FUSE side only: requests on vram files are turned into
 * holds on the arbiter (barswap/bs_arbiter.c), which shares the daemon's one
 * slot handle among every opener.  An open that has to wait is parked (its
 * request kept) and answered from whichever thread moves the slot; no
 * worker thread ever blocks on the slot.
 *
 * The mount's dies/ lives in struct accelfs (fs->mount.dies); requests
 * reach it from there, and the tree from the fs_node it resolved
 * (n->mount->dies, fs/tree.h).  Without a slot (no /dev/bar_swap and no --sim)
 * it is NULL and there is no dies/ at all: every function below takes NULL
 * for "no dies".
 */
#ifndef ACCELFS_DIES_H
#define ACCELFS_DIES_H

#include <stdbool.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

#include "barswap/bs_arbiter.h"
#include "fs/text.h"
#include "fs/tree.h"

struct fs_dies;

/* Serve dies/ over slot (taken over).  NULL with *err on failure. */
struct fs_dies *fs_dies_new(struct bs_slot *slot, bool read_only, int *err);
void fs_dies_free(struct fs_dies *d);
/* The mountpoint, once mounted: FLUSH recognizes our files in other processes' fd tables by it. */
void fs_dies_mounted(struct fs_dies *d, const char *mountpoint);
/*
 * The kernel's bound on a FUSE answer for this mount, in seconds (0: none;
 * fs/request_timeout.h), told once, before the mount serves (the limit is
 * read without a lock after): from now on a request parked longer than
 * fs_dies_wait_limit_for(bound_s) is answered ETIMEDOUT instead of ending
 * the mount (fs/dies_wait_limit.c).  0, or -errno when its thread could
 * not start (logged; the waits stay unbounded).
 */
int fs_dies_limit_waits(struct fs_dies *d, unsigned bound_s);
/* The limit a bound of bound_s gives, in ms: a quarter earlier, at most 5 s earlier. */
uint32_t fs_dies_wait_limit_for(unsigned bound_s);

/* ---- for tree.c and render.c ----------------------------------------------- */

unsigned fs_dies_count(const struct fs_dies *d);
bool fs_dies_has(const struct fs_dies *d, uint32_t die);
int fs_dies_die_info(const struct fs_dies *d, uint32_t die, bs_die_info *out);
uint64_t fs_dies_vram_size(const struct fs_dies *d, uint32_t die);

#define FS_DIES_LISTED 64 /* holders and lenders of this mount listed in a status */

/*
 * What dies/ is, at one instant: everything a document about the dies says
 * (dies/slot, dies/<n>/info, node.json, metrics) comes from one of these,
 * so no part of a document contradicts another (fs/dies_render.c).
 */
struct fs_dies_status {
	const char *backend;  /* "bar_swap", "simulated" */
	struct bs_arb_view v; /* the slot, every die, and this mount's arbiter (barswap/bs_arbiter.h) */
	/* This mount's open vram files holding the slot now (the arbiter's current hold), by process: */
	unsigned holders;
	unsigned n_held; /* the first FS_DIES_LISTED of them */
	struct fs_dies_opener {
		pid_t pid;
		uint32_t die;
	} held[FS_DIES_LISTED], lenders[FS_DIES_LISTED]; /* lenders: the handles that lent their die */
	unsigned n_lenders;
	uint32_t wait_limit_ms; /* a parked open or return is answered ETIMEDOUT after this (0: never) */
};
/* Take one (malloc'd; free() it): 0, -ENOENT without dies/ (NULL), -ENOMEM, or the slot's errno. */
int fs_dies_status(const struct fs_dies *d, struct fs_dies_status **out);
/*
 * A 64-bit fingerprint of everything st says but the clocks that run on
 * their own (lease_left_ms, returning_ms, waited_ms), folded onto seed:
 * two statuses with the same fingerprint make the same dies/ documents
 * but for those (fs_side_stamp, fs/waiters.h).  Field by field, never the
 * struct's bytes (its padding is nobody's).
 */
uint64_t fs_dies_fingerprint(const struct fs_dies_status *st, uint64_t seed);
/*
 * What dies/slot and dies/<n>/info put in words, made once for both them
 * and node.json, so that the two never say different things.
 */
struct fs_dies_slot_words {
	unsigned lease_ms;
	int32_t lease_left_ms;         /* lease_left_ms: -1 for none */
	int32_t holders_lease_left_ms; /* what each holder line says (-1: none) */
	char lent[160];                /* "" for none */
	char waiting_on[224];          /* "" for none */
};
void fs_dies_slot_words(const struct fs_dies_status *st, struct fs_dies_slot_words *w);
struct fs_die_words {
	const char *state;                      /* parked, held, lending, lent, returning */
	const char *policy;                     /* pinned, resident */
	char held_by[FS_DIES_LISTED * 12 + 24]; /* "" while the die is not in the slot */
	bs_die_lend lend;                       /* lend.driver: the driver it is bound to */
	pid_t lender_pid;                       /* while lent */
};
/* 0, -EINVAL for no such die, or the errno of reading it. */
int fs_die_words(const struct fs_dies_status *st, uint32_t die, struct fs_die_words *w);
/* Who owns the slot, in dies/slot's words: accelfs (this mount's arbiter), other, none. */
const char *fs_dies_owner(const struct fs_dies_status *st);

/*
 * The rows of dies/ and of dies/<n>/ (fs/tree_files.c): the texts of slot,
 * lease_ms, and each die's info, enabled, driver and policy
 * (fs/dies_render.c), generated at every read, ...
 */
int fs_dies_slot_text(struct fs_text *t, const struct fs_view *v);
int fs_dies_lease_text(struct fs_text *t, const struct fs_view *v);
int fs_die_info_text(struct fs_text *t, const struct fs_view *v);
int fs_die_enabled_text(struct fs_text *t, const struct fs_view *v);
int fs_die_driver_text(struct fs_text *t, const struct fs_view *v);
int fs_die_policy_text(struct fs_text *t, const struct fs_view *v);
/*
 * ... the writes to lease_ms, enabled, policy (bytes taken, or -errno) and
 * driver (a lend, or a return with "bar_swap": it answers the request
 * itself, perhaps later) (fs/dies_attr.c), ...
 */
int fs_dies_lease_write(struct fs_write *w, const struct fs_node *n);
/* The last_error key of dies/ in the node's store (core/engine/node.h): the outcome of the last such write. */
#define FS_DIES_LAST_ERROR_KEY "dies"
int fs_die_enabled_write(struct fs_write *w, const struct fs_node *n);
int fs_die_policy_write(struct fs_write *w, const struct fs_node *n);
int fs_die_driver_write(struct fs_write *w, const struct fs_node *n);
/* ... and vram: its opens (answered now, or once the slot is ours; the handle's ops are fs/dies.c's), its size. */
void fs_die_vram_open(fuse_req_t req, fuse_ino_t ino, const struct fs_node *n, struct fuse_file_info *fi);
uint64_t fs_die_vram_bytes(const struct fs_node *n);

/* ---- for ops.c -------------------------------------------------------------- */

/* The connection's limits for bulk transfers (called from init). */
void fs_dies_tune(struct fuse_conn_info *conn);

/* Largest read and write request: what max_read/max_write are set to. */
#define FS_DIES_MAX_IO (1024 * 1024)

#endif
