/* SPDX-License-Identifier: MIT */
/*
 * The hardware state on disk (format 2, sim_state_json.h): node.json, and
 * per card cards/<N>.hw.json (written once) and cards/<N>.json (rewritten
 * by every change of that card: one page overwritten in place, or tmp +
 * rename when it outgrows a page; never fsync'ed: see write_json).
 *
 * Locks are open-file-description byte-range locks on <root>/locks: byte 0
 * is the node's, byte 1 + N card N's.  One descriptor per process serves
 * every card (flock would need a file, and a descriptor, per card), and
 * unlike classic POSIX record locks an OFD lock is not dropped when some
 * other descriptor of the file is closed.  Threads of one process share the
 * descriptor, hence the lock: the card's mutex keeps them apart.
 *
 * A process keeps a cached copy of each card and of the node, and rereads
 * a file only when the generation the last writer stored in the shared
 * counters file differs from its copy's: a call that finds nothing changed
 * opens no file at all.
 */
#ifndef ACCEL_SIM_STORE_H
#define ACCEL_SIM_STORE_H

#include <stddef.h>

#include <jansson.h>

#include "sim/common/sim_ctx.h"

/* Take (blocking) or drop the node's or a card's byte lock.  0 or -errno. */
int sim_store_lock_node(struct sim_ctx *ctx);
void sim_store_unlock_node(struct sim_ctx *ctx);
int sim_store_lock_card(struct sim_ctx *ctx, unsigned ordinal);
void sim_store_unlock_card(struct sim_ctx *ctx, unsigned ordinal);

/* A JSON file, read in one read(2).  0, -ENOENT, or -errno with a message. */
int sim_store_load_json(const char *path, json_t **out, char *err, size_t errlen);

/*
 * Make ctx->node node.json's content, rereading it only if its generation
 * changed; under the node's lock.  0, -ENOENT (no node yet) or -errno.
 */
int sim_store_node_refresh(struct sim_ctx *ctx, char *err, size_t errlen);
/* Write ctx->node (generation + 1) and publish its generation and fault mask. */
int sim_store_node_save(struct sim_ctx *ctx, char *err, size_t errlen);

/*
 * Make card->dev the card's files' content (the fixed part read once, the
 * changing part when its generation changed); under the card's lock.
 */
int sim_store_card_refresh(struct sim_ctx *ctx, struct sim_card *card, char *err, size_t errlen);
/*
 * Write the card's changing part (generation + 1).  On failure the copy is
 * marked stale (the next call rereads the file) but stays for the caller.
 */
int sim_store_card_save(struct sim_ctx *ctx, struct sim_card *card, char *err, size_t errlen);

/*
 * Write a whole node's files, cards first and node.json last (so a node
 * exists only once every card does), and publish their generations: power-on
 * and migration, under the node's lock.
 */
int sim_store_write_all(struct sim_ctx *ctx, const struct sim_state *s, char *err, size_t errlen);

#endif
