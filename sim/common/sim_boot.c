/* SPDX-License-Identifier: MIT */
/*
 * The first Init of a process: find the hardware (node.json and the cards'
 * files), or power a new node on from the topology; then bring the device nodes and capability records in
 * line with it.  Everything here runs under the node's lock and with the
 * lifetime lock held alone; each card's records are synced under that
 * card's lock too, as another process may be carving on it meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/common/sim_health.h"
#include "sim/common/sim_nodes.h"
#include "sim/common/sim_state_json.h"
#include "sim/common/sim_store.h"
#include "sim/common/sim_topology.h"

/*
 * No node.json yet: power a new node on.  A state.json beside it is what a
 * simulator of an older layout left (the whole node in one file): it is
 * refused, never read, so that a stale directory is not taken for a new node.
 */
static int power_on(struct sim_ctx *ctx, char *err, size_t errlen)
{
	const char *topology = getenv("ACCELFS_SIM_TOPOLOGY");
	struct sim_state s;
	int ret;

	if (access(ctx->paths.legacy_state, F_OK) == 0) {
		snprintf(err, errlen,
		         "%s is the state of a simulator of an older layout, which this one does not read (it reads "
		         "node.json, format %d): remove %s to start a fresh node",
		         ctx->paths.legacy_state, SIM_STATE_FORMAT, ctx->paths.root);
		return -EINVAL;
	}
	ret = sim_topology_build(ctx->vendor, topology && *topology ? topology : NULL, &s, err, errlen);
	if (ret)
		return ret;
	ret = sim_store_write_all(ctx, &s, err, errlen);
	sim_state_free(&s);
	return ret;
}

static int find_node(struct sim_ctx *ctx, char *err, size_t errlen)
{
	char detail[512];
	int ret = sim_store_node_refresh(ctx, detail, sizeof(detail));

	if (ret == -ENOENT) {
		ret = power_on(ctx, err, errlen);
		if (!ret)
			ret = sim_store_node_refresh(ctx, detail, sizeof(detail));
		else
			return ret;
	}
	if (ret == -EINVAL)
		snprintf(err, errlen, "%s (this simulator reads format %d; remove %s to start a fresh node)", detail,
		         SIM_STATE_FORMAT, ctx->paths.root);
	else if (ret)
		snprintf(err, errlen, "%s", detail);
	return ret;
}

/* Every card read, and its capability records made to match it. */
static int load_cards(struct sim_ctx *ctx, char *err, size_t errlen)
{
	char detail[512];
	int ret = 0;

	ctx->cards = calloc(ctx->node.n_devices + 1, sizeof(*ctx->cards));
	if (!ctx->cards) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < ctx->node.n_devices; i++)
		pthread_mutex_init(&ctx->cards[i].mutex, NULL);
	ctx->n_devices = ctx->node.n_devices;
	for (unsigned i = 0; i < ctx->n_devices && !ret; i++) {
		ret = sim_store_lock_card(ctx, i);
		if (ret) {
			snprintf(err, errlen, "cannot lock %s for card %u: %s", ctx->paths.lock, i, strerror(-ret));
			break;
		}
		ret = sim_store_card_refresh(ctx, &ctx->cards[i], err, errlen);
		if (!ret && sim_nodes_sync_card(ctx, &ctx->cards[i].dev, detail, sizeof(detail)) != 0) {
			snprintf(err, errlen, "%s", detail);
			ret = -EIO;
		}
		sim_store_unlock_card(ctx, i);
	}
	return ret;
}

static mig_return_t boot_locked(struct sim_ctx *ctx)
{
	char err[1024], msg[1200];
	const struct sim_device **devs;
	mig_return_t r;
	int ret;

	ret = sim_counters_open(&ctx->counters, ctx->paths.counters, err, sizeof(err));
	if (ret) {
		sim_complain(ctx, err);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	sim_counters_hit(&ctx->counters, SIM_FN_Init_v2);
	ctx->health = sim_health_open(ctx->paths.health, ctx->paths.health_wake, &ctx->health_wake, err, sizeof(err));
	if (!ctx->health) {
		sim_complain(ctx, err);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	ret = find_node(ctx, err, sizeof(err));
	if (ret) {
		sim_complain(ctx, err);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	/* A fault on Init_v2 (armed by name only) fails it before it touches anything. */
	if (sim_counters_fault_mask(&ctx->counters) & sim_fn_bit(SIM_FN_Init_v2)) {
		r = sim_fault_hit_locked(ctx, SIM_FN_Init_v2);
		if (r)
			return r;
	}
	ret = load_cards(ctx, err, sizeof(err));
	if (ret) {
		sim_complain(ctx, err);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	/* Whether a card is on the bus lives in its file; event waiters read it from the health page. */
	for (unsigned i = 0; i < ctx->n_devices && i < SIM_HEALTH_CARDS; i++) {
		uint32_t absent = !ctx->cards[i].dev.present;

		/* Written only when it differs: a process that changes nothing leaves the file as it was. */
		if (__atomic_load_n(&ctx->health->cards[i].absent, __ATOMIC_ACQUIRE) != absent)
			__atomic_store_n(&ctx->health->cards[i].absent, absent, __ATOMIC_RELEASE);
	}
	devs = calloc(ctx->n_devices + 1, sizeof(*devs));
	if (!devs)
		return MIG_ERROR_MEMORY;
	for (unsigned i = 0; i < ctx->n_devices; i++)
		devs[i] = &ctx->cards[i].dev;
	ret = sim_nodes_sync_static(ctx, devs, ctx->n_devices, err, sizeof(err));
	free(devs);
	if (ret) {
		snprintf(msg, sizeof(msg), "%s: %s%s", err, strerror(-ret),
		         ret == -EPERM ? " (creating device nodes needs CAP_MKNOD: run as root)" : "");
		sim_complain(ctx, msg);
		return ret == -EPERM ? MIG_ERROR_NO_PERMISSION : MIG_ERROR_DRIVER_NOT_LOADED;
	}
	return MIG_SUCCESS;
}

mig_return_t sim_boot(struct sim_ctx *ctx)
{
	const char *root = getenv("ACCELFS_SIM_ROOT");
	char msg[1200];
	mig_return_t r;
	int ret;

	if (!root || !*root) {
		sim_complain(ctx, "ACCELFS_SIM_ROOT is not set; it names the directory that holds the simulated "
		                  "hardware (accelfs --sim and accel-smi --sim set it to <state-dir>/sim)");
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	if (sim_paths_init(&ctx->paths, root, ctx->vendor->dir) != 0 || accel_mkdirs(ctx->paths.root, 0755) != 0) {
		snprintf(msg, sizeof(msg), "cannot create %s/%s", root, ctx->vendor->dir);
		sim_complain(ctx, msg);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	ret = sim_store_lock_node(ctx);
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot lock %s: %s", ctx->paths.lock, strerror(-ret));
		sim_complain(ctx, msg);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	r = boot_locked(ctx);
	sim_store_unlock_node(ctx);
	return r;
}

/* Init lives beside the boot it starts, so that the call core (sim_ctx.c) never calls up into the boot. */
mig_return_t sim_init(struct sim_ctx *ctx)
{
	mig_return_t r = MIG_SUCCESS;

	pthread_rwlock_wrlock(&ctx->lifetime);
	if (ctx->refcount == 0) {
		r = sim_boot(ctx);
		if (r != MIG_SUCCESS)
			sim_release(ctx);
	} else {
		sim_counters_hit(&ctx->counters, SIM_FN_Init_v2);
	}
	if (r == MIG_SUCCESS)
		ctx->refcount++;
	pthread_rwlock_unlock(&ctx->lifetime);
	return r;
}
