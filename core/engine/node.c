/* SPDX-License-Identifier: MIT */
/* The node: its cards and families, its snapshots, its poller; start and stop. */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state/cdi.h"
#include "core/engine/usage_cache.h"
#include "core/driver/devnodes.h"
#include "core/model/log.h"
#include "core/model/timed_wait.h"
#include "core/driver/udev_watch.h"

/* ---- holders ----------------------------------------------------------- */

int accel_node_holders(struct accel_node *node, const char *device, struct accel_holder **out, size_t *n)
{
	struct accel_snapshot *s = accel_node_snapshot(node);
	const struct accel_device *d = accel_snapshot_device(s, device);
	int ret = d ? accel_card_holders(d->card_nodes, d->n_card_nodes, d->family->control_holders_block, out, n)
	            : -ENOENT;

	if (!d) {
		*out = NULL;
		*n = 0;
	}
	accel_snapshot_unref(s);
	return ret;
}

int accel_node_control_holders(struct accel_node *node, const char *device, struct accel_control_holder **out,
                               size_t *n)
{
	struct accel_snapshot *s = accel_node_snapshot(node);
	const struct accel_device *d = accel_snapshot_device(s, device);
	int ret = d ? accel_control_holders(d->card_nodes, d->n_card_nodes, out, n) : -ENOENT;

	if (!d) {
		*out = NULL;
		*n = 0;
	}
	accel_snapshot_unref(s);
	return ret;
}

/* ---- poller ----------------------------------------------------------- */

void accel_node_refresh_all(struct accel_node *node)
{
	bool want_rescan;

	node_lock(&node->poll_lock, NODE_LOCK_LEAF);
	want_rescan = node->rescan;
	node->rescan = false;
	node_unlock(&node->poll_lock, NODE_LOCK_LEAF);
	/* A udev event says the devices may have changed; the driver's own answers say so every pass. */
	if (!want_rescan) {
		node_topo_rdlock(node);
		want_rescan = node_cards_changed(node);
		node_topo_unlock(node);
	}
	if (want_rescan) {
		node_cards_rescan(node);
		node_health_kick(node);
	}

	node_topo_rdlock(node);
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++) {
			struct node_card *nc = node->fams[f].cards[c];
			if (nc->absent)
				continue; /* nothing to ask: its view is its records' */
			node_lock(&nc->lock, NODE_LOCK_CARD);
			node_card_refresh(node, nc, true);
			node_unlock(&nc->lock, NODE_LOCK_CARD);
		}
	node_topo_unlock(node);
	accel_snapshot_unref(node_publish(node));
}

int accel_node_refresh_device(struct accel_node *node, const char *device)
{
	struct node_card *nc;
	int ret;

	node_topo_rdlock(node);
	ret = node_card_take(node, device, NULL, 0, &nc, NULL, 0);
	if (!ret) {
		if (!nc->absent) /* nothing to ask: its view is its records' */
			node_card_refresh(node, nc, true);
		node_unlock(&nc->lock, NODE_LOCK_CARD);
	}
	node_topo_unlock(node);
	accel_snapshot_unref(node_publish(node));
	return ret;
}

static void on_udev_event(void *ctx, const char *action, const char *syspath)
{
	struct accel_node *node = ctx;

	(void)syspath;
	node_lock(&node->poll_lock, NODE_LOCK_LEAF);
	if (!strcmp(action, "add") || !strcmp(action, "remove") || !strcmp(action, "bind") || !strcmp(action, "unbind"))
		node->rescan = true;
	node->kicked = true;
	pthread_cond_signal(&node->poll_cond);
	node_unlock(&node->poll_lock, NODE_LOCK_LEAF);
}

void accel_node_kick(struct accel_node *node)
{
	node_lock(&node->poll_lock, NODE_LOCK_LEAF);
	node->kicked = true;
	pthread_cond_signal(&node->poll_cond);
	node_unlock(&node->poll_lock, NODE_LOCK_LEAF);
}

void accel_node_touch(struct accel_node *node)
{
	__atomic_store_n(&node->used_ms, node_now_ms(), __ATOMIC_RELAXED);
	if (__atomic_load_n(&node->idle, __ATOMIC_ACQUIRE))
		accel_node_kick(node);
}

void accel_node_watching(struct accel_node *node, unsigned waiters)
{
	/* No kick: a waiter opened and read first (a touch); waiting alone asks the driver nothing. */
	__atomic_store_n(&node->watchers, waiters, __ATOMIC_RELAXED);
}

uint64_t accel_node_shown_generation(struct accel_node *node)
{
	/* Two counts that only grow: their sum moves exactly when one does. */
	return __atomic_load_n(&node->shown_gen, __ATOMIC_ACQUIRE) +
	       __atomic_load_n(&node->usage->shown_gen, __ATOMIC_ACQUIRE);
}

static bool used_lately(struct accel_node *node)
{
	return __atomic_load_n(&node->watchers, __ATOMIC_RELAXED) ||
	       node_now_ms() - __atomic_load_n(&node->used_ms, __ATOMIC_RELAXED) < ACCEL_POLL_LINGER_MS;
}

/* Does what the last pass published ask for another look, used or not? */
static bool work_left(struct accel_node *node)
{
	struct accel_snapshot *s = accel_node_snapshot(node);
	bool left = !s;

	for (size_t i = 0; s && !left && i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];

		left = d->refused || d->absent; /* a card to read again, or to see come back */
		for (size_t k = 0; !left && k < d->n_jobs; k++)
			left = d->jobs[k].state != ACCEL_JOB_READY; /* a removal to resume, a lost job's card */
		for (size_t k = 0; !left && k < d->n_instances; k++)
			left = !d->instances[k].job[0]; /* an orphan in its grace, or one left alone: rechecked */
	}
	accel_snapshot_unref(s);
	return left;
}

/*
 * The poller: a pass every poll_ms while the tree is used (or was within
 * ACCEL_POLL_LINGER_MS, or waiters wait, or the last pass left work); else
 * no deadline at all, until a touch, a kick (udev, mkdir, a test) or a
 * watcher.  So an idle node costs no driver call and no wake-up.
 */
static void *poll_main(void *arg)
{
	struct accel_node *node = arg;
	bool cadence = true;

	node_lock(&node->poll_lock, NODE_LOCK_LEAF);
	while (!node->stopping) {
		struct timespec deadline = accel_deadline_in_ms(node->opt.poll_ms);

		if (!cadence) {
			__atomic_store_n(&node->idle, true, __ATOMIC_RELEASE);
			/* A touch between the look below and idle's store would have kicked no one: look again. */
			while (!node->stopping && !node->kicked && !used_lately(node))
				pthread_cond_wait(&node->poll_cond, &node->poll_lock);
			__atomic_store_n(&node->idle, false, __ATOMIC_RELEASE);
		}
		while (cadence && !node->stopping && !node->kicked &&
		       pthread_cond_timedwait(&node->poll_cond, &node->poll_lock, &deadline) != ETIMEDOUT)
			;
		if (node->stopping)
			break;
		node->kicked = false;
		node_unlock(&node->poll_lock, NODE_LOCK_LEAF);
		accel_node_refresh_all(node);
		cadence = used_lately(node) || work_left(node);
		node_lock(&node->poll_lock, NODE_LOCK_LEAF);
	}
	node_unlock(&node->poll_lock, NODE_LOCK_LEAF);
	return NULL;
}

/* ---- start / stop ------------------------------------------------------- */

struct accel_node *accel_node_start(const struct accel_node_options *opt, char *err, size_t errlen)
{
	struct accel_node *node = calloc(1, sizeof(*node));

	if (!node) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	node->opt = *opt;
	if (!node->opt.poll_ms)
		node->opt.poll_ms = 2000;
	if (!node->opt.orphan_grace_ms)
		node->opt.orphan_grace_ms = 10000;
	if (!node->opt.busy_retries)
		node->opt.busy_retries = 4;
	if (!node->opt.busy_delay_ms)
		node->opt.busy_delay_ms = 100;
	snprintf(node->state_dir, sizeof(node->state_dir), "%s", opt->state_dir ? opt->state_dir : "/var/lib/accelfs");
	accel_cdi_tag(node->state_dir, node->cdi_tag);
	pthread_mutex_init(&node->publish_lock, NULL);
	pthread_mutex_init(&node->view_lock, NULL);
	pthread_mutex_init(&node->snap_lock, NULL);
	pthread_mutex_init(&node->cdi_lock, NULL);
	pthread_mutex_init(&node->names_lock, NULL);
	pthread_cond_init(&node->quota_cond, NULL);
	pthread_mutex_init(&node->quota_lock, NULL);
	pthread_mutex_init(&node->err_lock, NULL);
	pthread_mutex_init(&node->poll_lock, NULL);
	pthread_rwlock_init(&node->topo, NULL);
	accel_cond_init_monotonic(&node->poll_cond);
	node->usage = node_usage_new();
	if (!node->usage) {
		snprintf(err, errlen, "out of memory");
		accel_node_stop(node);
		return NULL;
	}

	if (accel_mkdirs(node->state_dir, 0755)) {
		snprintf(err, errlen, "cannot create the state directory %s: %s", node->state_dir, strerror(errno));
		accel_node_stop(node);
		return NULL;
	}
	if (node_quota_load(node, err, errlen)) {
		accel_node_stop(node);
		return NULL;
	}
	for (size_t f = 0; f < accel_n_families && f < ACCEL_MAX_FAMILIES; f++) {
		const struct accel_family_config *cfg = &opt->families[f];
		struct node_family *fam = &node->fams[node->n_fams++];

		fam->family = accel_families[f];
		snprintf(fam->library, sizeof(fam->library), "%s", cfg->library ? cfg->library : "");
		snprintf(fam->dev_root, sizeof(fam->dev_root), "%s", cfg->dev_root ? cfg->dev_root : "/dev");
		snprintf(fam->proc_root, sizeof(fam->proc_root), "%s", cfg->proc_root ? cfg->proc_root : "/proc");
		if (cfg->disabled) {
			node_family_state(node, fam, true, 0, NULL);
			continue;
		}
		if (node_family_open(node, fam)) {
			snprintf(err, errlen, "out of memory opening %s", fam->family->tree_prefix);
			accel_node_stop(node);
			return NULL;
		}
	}
	{
		size_t loaded = 0, tried = 0;

		for (size_t f = 0; f < node->n_fams; f++) {
			tried += !opt->families[f].disabled;
			loaded += node->fams[f].loaded;
		}
		/* Each family said where it looked (info); an empty tree is worth one line above info. */
		if (tried && !loaded)
			log_warn("no driver library was found for any family: the tree shows no device until one is "
			         "installed and accelfs restarted (PPU_HOME names the T-Head SDK; --sim serves a "
			         "simulated node)");
	}
	node->udev = accel_udev_start(on_udev_event, node);
	node->used_ms = node_now_ms(); /* the start counts as a use: the poller lingers, then rests */
	accel_node_refresh_all(node);
	node_health_start(node);
	if (pthread_create(&node->poller, NULL, poll_main, node)) {
		snprintf(err, errlen, "cannot start the poller thread");
		accel_node_stop(node);
		return NULL;
	}
	pthread_setname_np(node->poller, "poller");
	node->poller_started = true;
	return node;
}

void accel_node_mute(struct accel_node *node)
{
	if (!node)
		return;
	node_lock(&node->publish_lock, NODE_LOCK_PUBLISH);
	node->opt.on_change = NULL;
	node_unlock(&node->publish_lock, NODE_LOCK_PUBLISH);
}

void accel_node_stop(struct accel_node *node)
{
	if (!node)
		return;
	if (node->poller_started) {
		node_lock(&node->poll_lock, NODE_LOCK_LEAF);
		node->stopping = true;
		pthread_cond_signal(&node->poll_cond);
		node_unlock(&node->poll_lock, NODE_LOCK_LEAF);
		pthread_join(node->poller, NULL);
	}
	accel_udev_stop(node->udev);
	node_health_stop(node);
	/* No publication comes after the poller: the spec files go with the daemon (node_cdi.c). */
	if (node->opt.cdi_dir && !node->opt.read_only) {
		node_lock(&node->cdi_lock, NODE_LOCK_LEAF);
		node_cdi_withdraw(node);
		node_unlock(&node->cdi_lock, NODE_LOCK_LEAF);
	}
	node_usage_free(node->usage); /* its GPM samples go back to the libraries before they close */
	for (size_t f = 0; f < node->n_fams; f++)
		node_family_close(&node->fams[f]);
	node_names_free(node);
	accel_snapshot_unref(node->snap);
	free(node->reserved);
	node_quota_free(node);
	free(node->errors);
	node_cdi_forget(node);
	pthread_mutex_destroy(&node->publish_lock);
	pthread_mutex_destroy(&node->view_lock);
	pthread_mutex_destroy(&node->snap_lock);
	pthread_mutex_destroy(&node->cdi_lock);
	pthread_mutex_destroy(&node->names_lock);
	pthread_mutex_destroy(&node->err_lock);
	pthread_mutex_destroy(&node->poll_lock);
	pthread_rwlock_destroy(&node->topo);
	pthread_cond_destroy(&node->poll_cond);
	free(node);
}
