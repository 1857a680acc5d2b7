/* SPDX-License-Identifier: MIT */
/*
 * The hardware state on disk: one JSON file per vendor, guarded by flock on
 * a lock file beside it, replaced atomically (tmp + rename, no fsync: see
 * sim_store_save) on every change.  A process keeps a cached copy and
 * rereads the file only when the generation the last writer stored in the
 * shared counters file (sim_counters.h) differs from its copy's: a call
 * that finds nothing changed opens no file at all.
 */
#ifndef ACCEL_SIM_STORE_H
#define ACCEL_SIM_STORE_H

#include <stddef.h>

#include "sim/common/sim_ctx.h"

/* flock the state's lock file (opening it on first use).  0 or -errno. */
int sim_store_lock(struct sim_ctx *ctx);
/* Drop the flock if this process holds it (ctx->flocked); nothing otherwise. */
void sim_store_unlock(struct sim_ctx *ctx);

/*
 * Is the cached state the file's, as far as the generation every writer
 * stores in the counters file tells?  Needs no lock: a writer stores the
 * generation only once its new file is in place.
 */
bool sim_store_current(const struct sim_ctx *ctx);

/* Make ctx->state the file's content, reading it only if it changed.  0, -ENOENT, or -errno. */
int sim_store_refresh(struct sim_ctx *ctx, char *err, size_t errlen);

/*
 * Write ctx->state (generation + 1).  On failure the cache is marked stale
 * (the next refresh rereads the file) but stays allocated for the caller.
 */
int sim_store_save(struct sim_ctx *ctx, char *err, size_t errlen);

/* Drop the cached state (the next refresh reads the file). */
void sim_store_forget(struct sim_ctx *ctx);

#endif
