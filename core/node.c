/* SPDX-License-Identifier: MIT */
/* The node: its cards and families, its snapshots, its poller; start and stop. */
#include "core/node_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cdi.h"
#include "core/devnodes.h"
#include "core/log.h"
#include "core/udev_watch.h"

/* ---- cards and families ------------------------------------------------- */

void node_card_free(struct node_card *nc)
{
	if (!nc)
		return;
	accel_catalog_clear(&nc->catalog);
	accel_ci_cache_clear(&nc->ci_cache);
	accel_device_unref(nc->view);
	free(nc->card_nodes);
	free(nc->records);
	free(nc->bad);
	free(nc->seen);
	accel_inventory_clear(&nc->inv);
	node_card_forget_carved(nc);
	pthread_mutex_destroy(&nc->lock);
	free(nc);
}

static void read_identity(struct node_card *nc)
{
	struct mig_lib *lib = nc->card.lib;
	struct accel_device *v = &nc->ident;
	char buf[MIG_DEVICE_UUID_V2_BUFFER_SIZE];

	if (lib->DeviceGetUUID(nc->card.handle, buf, sizeof(buf)) == MIG_SUCCESS) {
		buf[sizeof(buf) - 1] = '\0';
		snprintf(v->uuid, sizeof(v->uuid), "%s", buf);
	}
	if (lib->DeviceGetName(nc->card.handle, buf, sizeof(buf)) == MIG_SUCCESS) {
		buf[sizeof(buf) - 1] = '\0';
		snprintf(v->product, sizeof(v->product), "%s", buf);
	}
	if (lib->DeviceGetPciInfo_v3) {
		mig_pci_info_t pci;
		memset(&pci, 0, sizeof(pci));
		if (lib->DeviceGetPciInfo_v3(nc->card.handle, &pci) == MIG_SUCCESS) {
			pci.busId[sizeof(pci.busId) - 1] = '\0';
			snprintf(v->bus_id, sizeof(v->bus_id), "%s", pci.busId);
		}
	}
	if (lib->DeviceGetMemoryInfo) {
		mig_memory_t mem;
		if (lib->DeviceGetMemoryInfo(nc->card.handle, &mem) == MIG_SUCCESS)
			v->memory_mib = mem.total / (1024 * 1024);
	}
}

static struct node_card *card_open(struct accel_node *node, struct node_family *fam, unsigned index, char *err,
                                   size_t errlen)
{
	struct node_card *nc = calloc(1, sizeof(*nc));
	mig_return_t r;

	if (!nc)
		return NULL;
	pthread_mutex_init(&nc->lock, NULL);
	nc->fam = fam;
	nc->card.family = fam->family;
	nc->card.lib = &fam->lib;
	nc->card.ordinal = index;
	nc->card.dev_root = fam->dev_root;
	nc->card.proc_root = fam->proc_root;
	nc->card.busy_retries = node->opt.busy_retries;
	nc->card.busy_delay_ms = node->opt.busy_delay_ms;
	nc->card.ci_cache = &nc->ci_cache;
	snprintf(nc->card.name, sizeof(nc->card.name), "%s%u", fam->family->tree_prefix, index);

	r = fam->lib.DeviceGetHandleByIndex_v2(index, &nc->card.handle);
	if (r == MIG_SUCCESS)
		r = fam->lib.DeviceGetMinorNumber(nc->card.handle, &nc->card.minor);
	if (r != MIG_SUCCESS) {
		snprintf(err, errlen, "%s: cannot open: %s (%s)", nc->card.name, mig_lib_strerror(&fam->lib, r),
		         mig_return_name(r));
		node_card_free(nc);
		return NULL;
	}
	nc->ident.family = fam->family;
	snprintf(nc->ident.name, sizeof(nc->ident.name), "%s", nc->card.name);
	nc->ident.ordinal = index;
	nc->ident.minor = nc->card.minor;
	snprintf(nc->ident.library, sizeof(nc->ident.library), "%s", fam->lib.path);
	read_identity(nc);
	if (!nc->ident.uuid[0]) {
		snprintf(err, errlen, "%s: the driver reports no UUID; records could not be tied to it", nc->card.name);
		node_card_free(nc);
		return NULL;
	}
	if (accel_record_load_card(node->state_dir, fam->family->tree_prefix, nc->ident.uuid, &nc->records,
	                           &nc->n_records, &nc->bad, &nc->n_bad) < 0)
		log_error("%s: cannot read its records", nc->card.name);
	for (size_t i = 0; i < nc->n_bad; i++)
		log_error("%s: unreadable record %s: %s; orphans on this card are kept until it is fixed or removed",
		          nc->card.name, nc->bad[i].path, nc->bad[i].why);
	return nc;
}

static void family_close(struct node_family *fam)
{
	for (size_t c = 0; c < fam->n_cards; c++)
		node_card_free(fam->cards[c]);
	free(fam->cards);
	fam->cards = NULL;
	fam->n_cards = 0;
	if (fam->loaded)
		mig_lib_close(&fam->lib);
	fam->loaded = false;
}

static int family_open(struct accel_node *node, struct node_family *fam)
{
	char err[512];
	unsigned count = 0;
	mig_return_t r;
	int ret;

	ret = accel_family_open_lib(fam->family, fam->library[0] ? fam->library : NULL, &fam->lib, err, sizeof(err));
	if (ret == -ENOENT) {
		log_info("%s: no %s driver library found; the family is not shown", fam->family->tree_prefix,
		         fam->family->vendor);
		return 0;
	}
	if (ret) {
		log_warn("%s: %s driver unusable: %s; the family is not shown", fam->family->tree_prefix,
		         fam->family->vendor, err);
		return 0;
	}
	fam->loaded = true;
	r = fam->lib.DeviceGetCount_v2(&count);
	if (r != MIG_SUCCESS) {
		log_warn("%s: counting devices failed: %s", fam->family->tree_prefix, mig_lib_strerror(&fam->lib, r));
		count = 0;
	}
	fam->cards = calloc(count + 1, sizeof(*fam->cards));
	if (!fam->cards)
		return -ENOMEM;
	for (unsigned i = 0; i < count; i++) {
		struct node_card *nc = card_open(node, fam, i, err, sizeof(err));
		if (!nc) {
			log_error("%s", err);
			continue;
		}
		fam->cards[fam->n_cards++] = nc;
	}
	log_info("%s: %zu %s device(s) through %s", fam->family->tree_prefix, fam->n_cards, fam->family->vendor,
	         fam->lib.path);
	return 0;
}

struct node_card *node_find_card(struct accel_node *node, const char *device)
{
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++)
			if (!strcmp(node->fams[f].cards[c]->card.name, device))
				return node->fams[f].cards[c];
	return NULL;
}

/* ---- holders ----------------------------------------------------------- */

int accel_node_holders(struct accel_node *node, const char *device, struct accel_holder **out, size_t *n)
{
	struct accel_snapshot *s = accel_node_snapshot(node);
	const struct accel_device *d = accel_snapshot_device(s, device);
	int ret = d ? accel_device_nodes_holders(d->card_nodes, d->n_card_nodes, out, n) : -ENOENT;

	if (!d) {
		*out = NULL;
		*n = 0;
	}
	accel_snapshot_unref(s);
	return ret;
}

/* ---- poller ----------------------------------------------------------- */

/*
 * Look for cards that appeared or went away (a udev event, a driver loaded
 * late): re-count each family's devices and compare their UUIDs.  A family
 * whose set changed is reopened whole; its jobs come back from the records
 * on disk, exactly as after a restart.
 */
static void rescan(struct accel_node *node)
{
	node_topo_wrlock(node);
	for (size_t f = 0; f < node->n_fams; f++) {
		struct node_family *fam = &node->fams[f];
		unsigned count = 0;
		bool same = true;

		if (!fam->loaded) {
			if (!node->opt.families[f].disabled && family_open(node, fam))
				log_error("%s: out of memory", fam->family->tree_prefix);
			continue;
		}
		if (fam->lib.DeviceGetCount_v2(&count) != MIG_SUCCESS)
			continue;
		same = count == fam->n_cards;
		for (size_t c = 0; same && c < fam->n_cards; c++) {
			char uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
			mig_device_t h;
			same = fam->lib.DeviceGetHandleByIndex_v2((unsigned)c, &h) == MIG_SUCCESS &&
			       fam->lib.DeviceGetUUID(h, uuid, sizeof(uuid)) == MIG_SUCCESS &&
			       !strncmp(uuid, fam->cards[c]->ident.uuid, sizeof(uuid));
		}
		if (same)
			continue;
		log_info("%s: the set of %s devices changed (%zu -> %u); re-reading them", fam->family->tree_prefix,
		         fam->family->vendor, fam->n_cards, count);
		node_lock(&node->view_lock, NODE_LOCK_VIEW);
		for (size_t c = 0; c < fam->n_cards; c++)
			node_card_free(fam->cards[c]);
		fam->n_cards = 0;
		struct node_card **cards = realloc(fam->cards, (count + 1) * sizeof(*cards));
		if (cards)
			fam->cards = cards;
		node_unlock(&node->view_lock, NODE_LOCK_VIEW);
		if (!cards)
			continue;
		for (unsigned i = 0; i < count; i++) {
			char err[512];
			struct node_card *nc = card_open(node, fam, i, err, sizeof(err));
			if (!nc) {
				log_error("%s", err);
				continue;
			}
			node_lock(&node->view_lock, NODE_LOCK_VIEW);
			fam->cards[fam->n_cards++] = nc;
			node_unlock(&node->view_lock, NODE_LOCK_VIEW);
		}
	}
	node_topo_unlock(node);
}

void accel_node_refresh_all(struct accel_node *node)
{
	bool want_rescan;

	pthread_mutex_lock(&node->poll_lock);
	want_rescan = node->rescan;
	node->rescan = false;
	pthread_mutex_unlock(&node->poll_lock);
	if (want_rescan)
		rescan(node);

	node_topo_rdlock(node);
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++) {
			struct node_card *nc = node->fams[f].cards[c];
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

	node_topo_rdlock(node);
	nc = node_find_card(node, device);
	if (nc) {
		node_lock(&nc->lock, NODE_LOCK_CARD);
		node_card_refresh(node, nc, true);
		node_unlock(&nc->lock, NODE_LOCK_CARD);
	}
	node_topo_unlock(node);
	accel_snapshot_unref(node_publish(node));
	return nc ? 0 : -ENOENT;
}

static void on_udev_event(void *ctx, const char *action, const char *syspath)
{
	struct accel_node *node = ctx;

	(void)syspath;
	pthread_mutex_lock(&node->poll_lock);
	if (!strcmp(action, "add") || !strcmp(action, "remove") || !strcmp(action, "bind") || !strcmp(action, "unbind"))
		node->rescan = true;
	node->kicked = true;
	pthread_cond_signal(&node->poll_cond);
	pthread_mutex_unlock(&node->poll_lock);
}

void accel_node_kick(struct accel_node *node)
{
	pthread_mutex_lock(&node->poll_lock);
	node->kicked = true;
	pthread_cond_signal(&node->poll_cond);
	pthread_mutex_unlock(&node->poll_lock);
}

static void *poll_main(void *arg)
{
	struct accel_node *node = arg;

	pthread_mutex_lock(&node->poll_lock);
	while (!node->stopping) {
		struct timespec deadline;

		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += node->opt.poll_ms / 1000;
		deadline.tv_nsec += (long)(node->opt.poll_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		while (!node->stopping && !node->kicked &&
		       pthread_cond_timedwait(&node->poll_cond, &node->poll_lock, &deadline) != ETIMEDOUT)
			;
		if (node->stopping)
			break;
		node->kicked = false;
		pthread_mutex_unlock(&node->poll_lock);
		accel_node_refresh_all(node);
		pthread_mutex_lock(&node->poll_lock);
	}
	pthread_mutex_unlock(&node->poll_lock);
	return NULL;
}

/* ---- start / stop ------------------------------------------------------- */

struct accel_node *accel_node_start(const struct accel_node_options *opt, char *err, size_t errlen)
{
	struct accel_node *node = calloc(1, sizeof(*node));
	pthread_condattr_t ca;

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
	pthread_mutex_init(&node->publish_lock, NULL);
	pthread_mutex_init(&node->view_lock, NULL);
	pthread_mutex_init(&node->snap_lock, NULL);
	pthread_mutex_init(&node->cdi_lock, NULL);
	pthread_mutex_init(&node->names_lock, NULL);
	pthread_mutex_init(&node->err_lock, NULL);
	pthread_mutex_init(&node->poll_lock, NULL);
	pthread_rwlock_init(&node->topo, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&node->poll_cond, &ca);
	pthread_condattr_destroy(&ca);

	if (accel_mkdirs(node->state_dir, 0755)) {
		snprintf(err, errlen, "cannot create the state directory %s: %s", node->state_dir, strerror(errno));
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
		if (cfg->disabled)
			continue;
		if (family_open(node, fam)) {
			snprintf(err, errlen, "out of memory opening %s", fam->family->tree_prefix);
			accel_node_stop(node);
			return NULL;
		}
	}
	node->udev = accel_udev_start(on_udev_event, node);
	accel_node_refresh_all(node);
	if (pthread_create(&node->poller, NULL, poll_main, node)) {
		snprintf(err, errlen, "cannot start the poller thread");
		accel_node_stop(node);
		return NULL;
	}
	node->poller_started = true;
	return node;
}

void accel_node_stop(struct accel_node *node)
{
	if (!node)
		return;
	if (node->poller_started) {
		pthread_mutex_lock(&node->poll_lock);
		node->stopping = true;
		pthread_cond_signal(&node->poll_cond);
		pthread_mutex_unlock(&node->poll_lock);
		pthread_join(node->poller, NULL);
	}
	accel_udev_stop(node->udev);
	for (size_t f = 0; f < node->n_fams; f++)
		family_close(&node->fams[f]);
	accel_snapshot_unref(node->snap);
	free(node->reserved);
	free(node->errors);
	free(node->cdi_text);
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
