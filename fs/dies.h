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

struct fs_dies;

/* Serve dies/ over slot (taken over).  NULL with *err on failure. */
struct fs_dies *fs_dies_new(struct bs_slot *slot, bool read_only, int *err);
void fs_dies_free(struct fs_dies *d);
/* The mountpoint, once mounted: FLUSH recognizes our files in other processes' fd tables by it. */
void fs_dies_mounted(struct fs_dies *d, const char *mountpoint);

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
};
/* Take one (malloc'd; free() it): 0, -ENOENT without dies/ (NULL), -ENOMEM, or the slot's errno. */
int fs_dies_status(const struct fs_dies *d, struct fs_dies_status **out);
/* Who owns the slot, in dies/slot's words: accelfs (this mount's arbiter), other, none. */
const char *fs_dies_owner(const struct fs_dies_status *st);

/*
 * The text of dies/slot, dies/lease_ms, dies/<n>/info, enabled, driver and
 * policy (fs/dies_render.c), malloc'd.  kind is the file's fs_kind.
 */
int fs_dies_render(struct fs_dies *d, int kind, uint32_t die, char **out, size_t *len);

/* ---- for ops.c -------------------------------------------------------------- */

/* Open dies/<n>/vram: answered now, or once the slot is ours; the handle's ops are fs/dies.c's. */
void fs_dies_open(fuse_req_t req, fuse_ino_t ino, uint32_t die, struct fuse_file_info *fi);
/* Writes to dies/<n>/enabled, dies/<n>/policy, dies/lease_ms: bytes taken, or -errno. */
int fs_dies_write_enabled(struct fs_dies *d, uint32_t die, const char *buf, size_t size);
int fs_dies_write_policy(struct fs_dies *d, uint32_t die, const char *buf, size_t size);
int fs_dies_write_lease(struct fs_dies *d, const char *buf, size_t size);
/* enabled, policy or lease_ms (an fs_kind): written with fs_dies_write_attr.  driver is not one. */
bool fs_dies_attr_kind(int kind);
int fs_dies_write_attr(struct fs_dies *d, int kind, uint32_t die, const char *buf, size_t size);
/* A write to dies/<n>/driver (lend, or return with "bar_swap"): answers req itself, perhaps later. */
void fs_dies_write_driver(fuse_req_t req, struct fs_dies *d, uint32_t die, const char *buf, size_t size);
/* The connection's limits for bulk transfers (called from init). */
void fs_dies_tune(struct fuse_conn_info *conn);

/* Largest read and write request: what max_read/max_write are set to. */
#define FS_DIES_MAX_IO (1024 * 1024)

#endif
