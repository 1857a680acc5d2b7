/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_ctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/common/sim_faults.h"
#include "sim/common/sim_handles.h"
#include "sim/common/sim_health.h"
#include "sim/common/sim_store.h"

void sim_complain(const struct sim_ctx *ctx, const char *msg)
{
	fprintf(stderr, "accelfs simulated %s driver: %s\n", ctx->vendor->dir, msg);
}

/* Take the node: the threads of this process (node_mutex), then other processes (its byte lock). */
static int node_take(struct sim_ctx *ctx)
{
	char err[512], msg[600];
	int ret;

	pthread_mutex_lock(&ctx->node_mutex);
	ret = sim_store_lock_node(ctx);
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot lock %s: %s", ctx->paths.lock, strerror(-ret));
		sim_complain(ctx, msg);
		pthread_mutex_unlock(&ctx->node_mutex);
		return ret;
	}
	ret = sim_store_node_refresh(ctx, err, sizeof(err));
	if (ret) {
		sim_complain(ctx, err);
		sim_store_unlock_node(ctx);
		pthread_mutex_unlock(&ctx->node_mutex);
	}
	return ret;
}

static void node_let_go(struct sim_ctx *ctx)
{
	sim_store_unlock_node(ctx);
	pthread_mutex_unlock(&ctx->node_mutex);
}

mig_return_t sim_fault_hit_locked(struct sim_ctx *ctx, enum sim_fn fn)
{
	mig_return_t r = MIG_SUCCESS;
	bool changed = false;
	char err[512];

	if (sim_faults_hit(&ctx->node, fn, &r, &changed) == false)
		r = MIG_SUCCESS;
	if (changed && sim_store_node_save(ctx, err, sizeof(err)) != 0)
		sim_complain(ctx, err);
	return r;
}

/*
 * The armed faults see this call.  Only calls the published fault mask names
 * come here, and only they are put in one order, across every card and
 * process, by the node's lock: "*" with --skip K is the K-th such call from
 * now, whichever card it is on.
 */
static mig_return_t fault_check(struct sim_ctx *ctx, enum sim_fn fn)
{
	mig_return_t r;

	if (fn == SIM_FN_NONE || !(sim_counters_fault_mask(&ctx->counters) & sim_fn_bit(fn)))
		return MIG_SUCCESS;
	if (node_take(ctx) != 0)
		return MIG_ERROR_UNKNOWN;
	r = sim_fault_hit_locked(ctx, fn);
	node_let_go(ctx);
	return r;
}

mig_return_t sim_enter(struct sim_ctx *ctx, enum sim_fn fn, struct sim_call *call)
{
	mig_return_t r;

	*call = (struct sim_call){ .ctx = ctx, .fn = fn };
	pthread_rwlock_rdlock(&ctx->lifetime);
	if (ctx->refcount == 0) {
		pthread_rwlock_unlock(&ctx->lifetime);
		return MIG_ERROR_UNINITIALIZED;
	}
	/* Received, whatever comes of it: a call a fault fails counts too. */
	sim_counters_hit(&ctx->counters, fn);
	/*
	 * A fault armed anywhere publishes its mask before its arming returns,
	 * so a call that starts after that sees it; one that overlaps the
	 * arming may not, as it would have run first.
	 */
	r = fault_check(ctx, fn);
	if (r) {
		pthread_rwlock_unlock(&ctx->lifetime);
		return r;
	}
	return MIG_SUCCESS;
}

mig_return_t sim_call_card(struct sim_call *call, unsigned ordinal, struct sim_device **d)
{
	struct sim_ctx *ctx = call->ctx;
	struct sim_card *card;
	char err[512], msg[600];
	int ret;

	if (ordinal >= ctx->n_devices || call->card || call->node)
		return MIG_ERROR_INVALID_ARGUMENT;
	card = &ctx->cards[ordinal];
	pthread_mutex_lock(&card->mutex);
	call->card = card;
	/*
	 * A call that only reads, on a copy no other process has made stale:
	 * it needs nothing from the byte lock.  Any writer stores its new
	 * generation before its call returns, so a call that starts after
	 * another process's change returned sees the mismatch and takes the
	 * path below; one that overlaps the change reads the card just before it.
	 */
	if (!sim_fn_changes_state(call->fn) && card->valid &&
	    sim_counters_card_generation(&ctx->counters, ordinal) == card->generation) {
		*d = &card->dev;
		return MIG_SUCCESS;
	}
	ret = sim_store_lock_card(ctx, ordinal);
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot lock %s for card %u: %s", ctx->paths.lock, ordinal, strerror(-ret));
		sim_complain(ctx, msg);
		return MIG_ERROR_UNKNOWN;
	}
	card->locked = true;
	ret = sim_store_card_refresh(ctx, card, err, sizeof(err));
	if (ret) {
		sim_complain(ctx, err);
		return MIG_ERROR_UNKNOWN;
	}
	*d = &card->dev;
	return MIG_SUCCESS;
}

mig_return_t sim_call_node(struct sim_call *call)
{
	if (call->card || call->node)
		return MIG_ERROR_INVALID_ARGUMENT;
	if (node_take(call->ctx) != 0)
		return MIG_ERROR_UNKNOWN;
	call->node = true;
	return MIG_SUCCESS;
}

mig_return_t sim_leave(struct sim_call *call, mig_return_t r)
{
	struct sim_ctx *ctx = call->ctx;
	struct sim_card *card = call->card;

	if (card) {
		if (card->locked)
			sim_store_unlock_card(ctx, (unsigned)(card - ctx->cards));
		card->locked = false;
		pthread_mutex_unlock(&card->mutex);
	}
	if (call->node)
		node_let_go(ctx);
	call->card = NULL;
	call->node = false;
	pthread_rwlock_unlock(&ctx->lifetime);
	return r;
}

mig_return_t sim_commit(struct sim_call *call)
{
	struct sim_ctx *ctx = call->ctx;
	char err[512];
	int ret;

	if (call->node) {
		ret = sim_store_node_save(ctx, err, sizeof(err));
	} else if (call->card && call->card->locked) {
		ret = sim_store_card_save(ctx, call->card, err, sizeof(err));
	} else {
		/* sim_fn_changes_state() is missing the function that called us: never write unlocked. */
		sim_complain(ctx, "internal error: a change in a call taken for a read (see sim_fn_changes_state)");
		if (call->card)
			call->card->valid = false; /* drop whatever it changed in memory */
		return MIG_ERROR_UNKNOWN;
	}
	if (!ret)
		return MIG_SUCCESS;
	sim_complain(ctx, err);
	return MIG_ERROR_UNKNOWN;
}

void sim_release(struct sim_ctx *ctx)
{
	for (unsigned i = 0; ctx->cards && i < ctx->n_devices; i++) {
		sim_device_free(&ctx->cards[i].dev);
		pthread_mutex_destroy(&ctx->cards[i].mutex);
	}
	free(ctx->cards);
	ctx->cards = NULL;
	ctx->n_devices = 0;
	ctx->node_valid = false;
	if (ctx->lock_fd >= 0)
		close(ctx->lock_fd);
	ctx->lock_fd = -1;
	ctx->lock_pid = 0;
	sim_counters_close(&ctx->counters);
	sim_health_close(ctx->health, ctx->health_wake);
	ctx->health = NULL;
	ctx->health_wake = NULL;
	sim_handles_free(ctx);
}

mig_return_t sim_shutdown(struct sim_ctx *ctx)
{
	mig_return_t r = MIG_SUCCESS;

	/* Alone: no call is running when the last Shutdown frees what calls use. */
	pthread_rwlock_wrlock(&ctx->lifetime);
	if (ctx->refcount == 0) {
		r = MIG_ERROR_UNINITIALIZED;
	} else {
		sim_counters_hit(&ctx->counters, SIM_FN_Shutdown);
		r = fault_check(ctx, SIM_FN_Shutdown);
	}
	if (r == MIG_SUCCESS && --ctx->refcount == 0)
		sim_release(ctx);
	pthread_rwlock_unlock(&ctx->lifetime);
	return r;
}

void sim_ctx_unload(struct sim_ctx *ctx)
{
	pthread_rwlock_wrlock(&ctx->lifetime);
	ctx->refcount = 0;
	sim_release(ctx);
	pthread_rwlock_unlock(&ctx->lifetime);
}
