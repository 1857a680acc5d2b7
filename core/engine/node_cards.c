/* SPDX-License-Identifier: MIT */
/*
 * Which cards the node has: opening a family's library and its cards, and
 * looking again when they may have changed (a udev event, or the poller's
 * check that a device count moved or that an index that would not open now
 * does).  A card that is kept stays as it is; one that appears is opened and
 * its jobs come back from their records, as after a restart.
 *
 * A card whose records are on disk but which the driver does not give us
 * (not enumerated, cannot be opened, its family's library missing) is
 * absent: it stays in the tree, made from its records (node_view.c), so that
 * nothing recorded for its jobs (attachments, reclaim policies, the records
 * themselves) is taken for the leftovers of jobs that are gone.  It goes
 * when the card is back (the present card takes its place) or when rmdir has
 * forgotten its last job.
 */
#include "core/engine/node_internal.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/health_store.h"
#include "core/model/log.h"

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
	free(nc->intents);
	accel_inventory_clear(&nc->inv);
	accel_health_book_clear(&nc->health);
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
			v->pci_id = pci.pciDeviceId;
		}
	}
	if (lib->DeviceGetMemoryInfo) {
		mig_memory_t mem;
		if (lib->DeviceGetMemoryInfo(nc->card.handle, &mem) == MIG_SUCCESS)
			v->memory_mib = mem.total / (1024 * 1024);
	}
}

static void card_name(struct node_card *nc, unsigned ordinal)
{
	nc->card.ordinal = nc->ident.ordinal = ordinal;
	snprintf(nc->card.name, sizeof(nc->card.name), "%s%u", nc->fam->family->tree_prefix, ordinal);
	snprintf(nc->ident.name, sizeof(nc->ident.name), "%s", nc->card.name);
}

/* A card of fam, not yet opened: named <prefix><ordinal>, no handle. */
static struct node_card *card_new(struct accel_node *node, struct node_family *fam, unsigned ordinal)
{
	struct node_card *nc = calloc(1, sizeof(*nc));

	if (!nc)
		return NULL;
	pthread_mutex_init(&nc->lock, NULL);
	nc->fam = fam;
	nc->card.family = fam->family;
	nc->card.lib = &fam->lib;
	nc->card.dev_root = fam->dev_root;
	nc->card.proc_root = fam->proc_root;
	nc->card.busy_retries = node->opt.busy_retries;
	nc->card.busy_delay_ms = node->opt.busy_delay_ms;
	nc->card.ci_cache = &nc->ci_cache;
	nc->ident.family = fam->family;
	card_name(nc, ordinal);
	if (fam->loaded)
		snprintf(nc->ident.library, sizeof(nc->ident.library), "%s", fam->lib.path);
	return nc;
}

/* The card's records; label names it in the log (an absent card has no name yet). */
static void load_records(struct accel_node *node, struct node_card *nc, const char *label)
{
	if (accel_record_load_card(node->state_dir, nc->fam->family->tree_prefix, nc->ident.uuid, &nc->records,
	                           &nc->n_records, &nc->bad, &nc->n_bad) < 0)
		log_error("%s: cannot read its records", label);
	if (accel_intent_load_card(node->state_dir, nc->fam->family->tree_prefix, nc->ident.uuid, &nc->intents,
	                           &nc->n_intents, &nc->bad, &nc->n_bad) < 0)
		log_error("%s: cannot read its intents", label);
	for (size_t i = 0; i < nc->n_bad; i++)
		log_error("%s: unreadable record %s: %s; orphans on this card are kept until it is fixed or removed",
		          label, nc->bad[i].path, nc->bad[i].why);
}

/*
 * A card that had fallen off the bus (Xid 79, or the driver called it
 * unavailable) and opens again was reset or plugged again: that fault is
 * over, as a recovery the driver reports would say (HGML reports none); its
 * counts stay.  Kept in its book on disk at once.
 */
static void back_on_bus(struct accel_node *node, struct node_card *nc)
{
	char why[ACCEL_TEXT_MAX];
	size_t n = accel_health_book_back(&nc->health);

	if (!n)
		return;
	log_info("%s: on the bus again: its %zu fault%s cleared (the card was reset or plugged again)", nc->card.name,
	         n, n == 1 ? " is" : "s are");
	if (!node->opt.read_only &&
	    accel_health_store_save(node->state_dir, nc->ident.uuid, &nc->health, why, sizeof(why)))
		log_error("%s: %s", nc->card.name, why);
	nc->health.dirty = false;
}

/* What the card's health book said when the daemon last stored it (core/state/health_store.h). */
static void load_health(struct accel_node *node, struct node_card *nc)
{
	char why[ACCEL_TEXT_MAX];

	if (accel_health_store_load(node->state_dir, nc->ident.uuid, &nc->health, why, sizeof(why)))
		log_error("%s: %s", nc->card.name, why);
	back_on_bus(node, nc);
}

/* Open device index of fam, with its records; NULL with err (no card name in it) when it cannot be. */
static struct node_card *card_open(struct accel_node *node, struct node_family *fam, unsigned index, char *err,
                                   size_t errlen)
{
	struct node_card *nc = card_new(node, fam, index);
	mig_return_t r;

	if (!nc) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r = fam->lib.DeviceGetHandleByIndex_v2(index, &nc->card.handle);
	if (r == MIG_SUCCESS)
		r = fam->lib.DeviceGetMinorNumber(nc->card.handle, &nc->card.minor);
	if (r != MIG_SUCCESS) {
		snprintf(err, errlen, "cannot open: %s (%s)", mig_lib_strerror(&fam->lib, r), mig_return_name(r));
		node_card_free(nc);
		return NULL;
	}
	nc->ident.minor = nc->card.minor;
	read_identity(nc);
	if (!nc->ident.uuid[0]) {
		snprintf(err, errlen, "the driver reports no UUID; records could not be tied to it");
		node_card_free(nc);
		return NULL;
	}
	load_records(node, nc, nc->card.name);
	node_foreign_load(node, nc);
	load_health(node, nc);
	return nc;
}

/* ---- the cards of one family --------------------------------------------- */

/* Cards being gathered: the family's next list, and what leaves it. */
struct gather {
	struct node_card **keep, **gone;
	size_t n_keep, n_gone, cap; /* keep and gone have room for cap each */
	bool *taken; /* fam->cards[i] is in keep or gone: that list is never written, a publish reads it */
	struct node_open_failure *failed;
	size_t n_failed;
};

static struct node_card *find_uuid(struct node_card **cards, size_t n, const char *uuid, bool absent)
{
	for (size_t i = 0; i < n; i++)
		if (cards[i] && cards[i]->absent == absent && !strcmp(cards[i]->ident.uuid, uuid))
			return cards[i];
	return NULL;
}

static bool ordinal_taken(const struct gather *g, unsigned ordinal)
{
	for (size_t i = 0; i < g->n_keep; i++)
		if (g->keep[i]->card.ordinal == ordinal)
			return true;
	return false;
}

static const struct node_open_failure *failure_at(const struct node_open_failure *f, size_t n, unsigned index)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].index == index)
			return &f[i];
	return NULL;
}

/* Is nc still the card at its index?  Its handle may have changed; its UUID may not. */
static bool still_there(struct node_family *fam, struct node_card *nc)
{
	char uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
	mig_device_t h;

	if (fam->lib.DeviceGetHandleByIndex_v2(nc->card.ordinal, &h) != MIG_SUCCESS ||
	    fam->lib.DeviceGetUUID(h, uuid, sizeof(uuid)) != MIG_SUCCESS)
		return false;
	uuid[sizeof(uuid) - 1] = '\0';
	if (strcmp(uuid, nc->ident.uuid))
		return false;
	nc->card.handle = h;
	return true;
}

/* The present cards: indices 0..count-1, those kept as they are, the others opened. */
static void gather_present(struct accel_node *node, struct node_family *fam, unsigned count, struct gather *g)
{
	for (size_t c = 0; c < fam->n_cards; c++) {
		struct node_card *nc = fam->cards[c];
		if (nc->absent)
			continue;
		if (nc->card.ordinal < count && still_there(fam, nc)) {
			g->keep[g->n_keep++] = nc;
			continue;
		}
		log_info("%s: the driver no longer answers for it (UUID %s)", nc->card.name, nc->ident.uuid);
		g->gone[g->n_gone++] = nc;
	}
	for (unsigned i = 0; i < count; i++) {
		const struct node_open_failure *was = failure_at(fam->failed, fam->n_failed, i);
		struct node_open_failure *f;
		char err[256];
		struct node_card *nc;

		if (ordinal_taken(g, i))
			continue;
		nc = card_open(node, fam, i, err, sizeof(err));
		if (nc) {
			if (was)
				log_info("%s: opened (UUID %s)", nc->card.name, nc->ident.uuid);
			g->keep[g->n_keep++] = nc;
			continue;
		}
		f = &g->failed[g->n_failed++];
		f->index = i;
		snprintf(f->why, sizeof(f->why), "%s", err);
		if (!was || strcmp(was->why, err)) /* a card that stays unopenable is logged once */
			log_error("%s%u: %s", fam->family->tree_prefix, i, err);
	}
}

/* Where an absent card was: the ordinal of its newest record (no readable record: none). */
static bool last_ordinal(const struct node_card *nc, unsigned *ordinal)
{
	int64_t newest = INT64_MIN;

	for (size_t i = 0; i < nc->n_records; i++)
		if (nc->records[i].created >= newest) {
			newest = nc->records[i].created;
			*ordinal = nc->records[i].ordinal;
		}
	return nc->n_records > 0;
}

static void absent_reason(const struct node_family *fam, const struct gather *g, unsigned count, unsigned ordinal,
                          char *why, size_t len)
{
	const struct node_open_failure *f = failure_at(g->failed, g->n_failed, ordinal);

	if (!fam->loaded)
		snprintf(why, len, "no %s driver library is loaded", fam->family->vendor);
	else if (f)
		snprintf(why, len, "the driver has device index %u but %.200s", ordinal, f->why);
	else
		snprintf(why, len, "none of the %u %s device(s) the driver reports has its UUID", count,
		         fam->family->vendor);
}

/*
 * An absent card for the records filed under uuid, if they are not a present
 * card's: the one already shown, or a new one.  It keeps the name it had
 * unless a present card has it now (ordinals may move between boots): then it
 * takes the lowest ordinal no card has.
 */
static void gather_absent_one(struct accel_node *node, struct node_family *fam, unsigned count, const char *uuid,
                              struct gather *g)
{
	struct node_card *nc = find_uuid(fam->cards, fam->n_cards, uuid, true);
	unsigned ordinal = 0, want;
	bool known;

	if (find_uuid(g->keep, g->n_keep, uuid, false) || find_uuid(g->keep, g->n_keep, uuid, true))
		return;
	if (g->n_keep == g->cap) {
		log_error("%s: more card directories under records/ than when they were counted: %s is not shown "
		          "until the next look",
		          fam->family->tree_prefix, uuid);
		return;
	}
	if (nc) {
		for (size_t c = 0; c < fam->n_cards; c++)
			if (fam->cards[c] == nc)
				g->taken[c] = true; /* into the new list, or gone */
		if (!nc->n_records && !nc->n_bad) {
			log_info("%s: absent, and rmdir has removed its last job: no longer shown", nc->card.name);
			g->gone[g->n_gone++] = nc;
			return;
		}
		if (ordinal_taken(g, nc->card.ordinal)) {
			g->gone[g->n_gone++] = nc; /* made again below, under another name */
			nc = NULL;
		}
	}
	if (!nc) {
		char label[ACCEL_UUID_MAX + 16];

		nc = card_new(node, fam, 0);
		if (!nc)
			return;
		snprintf(nc->ident.uuid, sizeof(nc->ident.uuid), "%s", uuid);
		snprintf(label, sizeof(label), "%s card %s", fam->family->tree_prefix, uuid);
		load_records(node, nc, label);
		if (!nc->n_records && !nc->n_bad) {
			node_card_free(nc); /* an empty directory: the card's last job was removed long ago */
			return;
		}
		known = last_ordinal(nc, &ordinal);
		want = ordinal;
		if (!known || ordinal_taken(g, ordinal))
			for (ordinal = count; ordinal_taken(g, ordinal); ordinal++)
				;
		card_name(nc, ordinal);
		nc->absent = true;
		absent_reason(fam, g, count, ordinal, nc->absent_why, sizeof(nc->absent_why));
		if (known && want != ordinal)
			log_warn("%s: absent card %s was %s%u, a name another card has now: shown as %s", nc->card.name,
			         uuid, fam->family->tree_prefix, want, nc->card.name);
		log_warn("%s: absent (UUID %s): %s; its %zu job(s) are kept from their records until it is back or "
		         "rmdir removes them",
		         nc->card.name, uuid, nc->absent_why, nc->n_records);
	} else {
		absent_reason(fam, g, count, nc->card.ordinal, nc->absent_why, sizeof(nc->absent_why));
		snprintf(nc->ident.library, sizeof(nc->ident.library), "%s", fam->loaded ? fam->lib.path : "");
	}
	node_absent_rebuild(node, nc);
	g->keep[g->n_keep++] = nc;
}

static void records_dir(const struct accel_node *node, const struct node_family *fam, char *dir, size_t len)
{
	snprintf(dir, len, "%s/records/%s", node->state_dir, fam->family->tree_prefix);
}

/* How many card directories the family's records have: room for that many absent cards. */
static size_t count_dirs(const struct accel_node *node, const struct node_family *fam)
{
	char dir[PATH_MAX];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	records_dir(node, fam, dir, sizeof(dir));
	d = opendir(dir);
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Every card directory of the family's records that no present card answers for. */
static void gather_absent(struct accel_node *node, struct node_family *fam, unsigned count, struct gather *g)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	records_dir(node, fam, dir, sizeof(dir));
	d = opendir(dir);
	if (!d) {
		if (errno != ENOENT)
			log_error("%s: cannot list %s: %s; cards that are absent are not shown",
			          fam->family->tree_prefix, dir, strerror(errno));
		return;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strlen(de->d_name) < ACCEL_UUID_MAX)
			gather_absent_one(node, fam, count, de->d_name, g);
	closedir(d);
	/* Absent cards whose directory went (removed by hand) go too. */
	for (size_t c = 0; c < fam->n_cards; c++)
		if (!g->taken[c] && fam->cards[c]->absent)
			g->gone[g->n_gone++] = fam->cards[c];
}

static int by_ordinal(const void *a, const void *b)
{
	const struct node_card *x = *(struct node_card *const *)a, *y = *(struct node_card *const *)b;

	return x->card.ordinal < y->card.ordinal ? -1 : x->card.ordinal > y->card.ordinal;
}

/*
 * Enumerate fam's cards again (topo write-held, or before the node is
 * shared).  first: the device count failing means none; later it means
 * "leave the family as it is".
 */
static int enumerate(struct accel_node *node, struct node_family *fam, bool first)
{
	struct gather g = { 0 };
	unsigned count = 0;

	if (fam->loaded && fam->lib.DeviceGetCount_v2(&count) != MIG_SUCCESS) {
		if (!first)
			return 0;
		log_warn("%s: counting devices failed; none are opened", fam->family->tree_prefix);
		count = 0;
	}
	g.cap = fam->n_cards + count + count_dirs(node, fam) + 1;
	g.keep = calloc(g.cap, sizeof(*g.keep));
	g.gone = calloc(g.cap, sizeof(*g.gone));
	g.failed = calloc(count + 1, sizeof(*g.failed));
	g.taken = calloc(fam->n_cards + 1, sizeof(*g.taken));
	if (!g.keep || !g.gone || !g.failed || !g.taken) {
		free(g.keep);
		free(g.gone);
		free(g.failed);
		free(g.taken);
		return -ENOMEM;
	}
	gather_present(node, fam, count, &g);
	gather_absent(node, fam, count, &g);
	free(g.taken);
	qsort(g.keep, g.n_keep, sizeof(*g.keep), by_ordinal);
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	free(fam->cards);
	fam->cards = g.keep;
	fam->n_cards = g.n_keep;
	for (size_t i = 0; i < g.n_gone; i++)
		node_names_swap(node, g.gone[i]->view, NULL); /* their jobs' names go with them */
	node_unlock(&node->view_lock, NODE_LOCK_VIEW);
	for (size_t i = 0; i < g.n_gone; i++) {
		struct node_card *back = find_uuid(g.keep, g.n_keep, g.gone[i]->ident.uuid, false);
		if (g.gone[i]->absent && back)
			log_info("%s: back (UUID %s): its jobs come back from their records", back->card.name,
			         back->ident.uuid);
		node_card_free(g.gone[i]);
	}
	free(g.gone);
	free(fam->failed);
	fam->failed = g.failed;
	fam->n_failed = g.n_failed;
	fam->n_indices = count;
	return 0;
}

void node_family_close(struct node_family *fam)
{
	for (size_t c = 0; c < fam->n_cards; c++)
		node_card_free(fam->cards[c]);
	free(fam->cards);
	fam->cards = NULL;
	fam->n_cards = 0;
	free(fam->failed);
	fam->failed = NULL;
	fam->n_failed = 0;
	fam->n_indices = 0;
	if (fam->loaded)
		mig_lib_close(&fam->lib);
	fam->loaded = false;
}

void node_family_state(struct accel_node *node, struct node_family *fam, bool disabled, int ret, const char *why)
{
	struct accel_family_state *st = &node->fam_states[fam - node->fams];
	char looked_for[PATH_MAX] = "";
	const char *library = looked_for, *slash;

	if (!disabled && !why)
		library = fam->lib.path;
	else if (fam->library[0])
		library = fam->library;
	else
		fam->family->library_candidates(&looked_for, 1);
	/* A library's file name: the series' label stays the same wherever it was found. */
	slash = strrchr(library, '/');
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	snprintf(st->prefix, sizeof(st->prefix), "%s", fam->family->tree_prefix);
	snprintf(st->vendor, sizeof(st->vendor), "%s", fam->family->vendor);
	st->disabled = disabled;
	st->loaded = !disabled && !why;
	snprintf(st->library, sizeof(st->library), "%s", slash ? slash + 1 : library);
	snprintf(st->reason, sizeof(st->reason), "%s",
	         disabled         ? "disabled"
	         : !why           ? ""
	         : ret == -ENOENT ? "not_found"
	                          : "unusable");
	snprintf(st->why, sizeof(st->why), "%s", disabled ? "not looked for (disabled)" : why ? why : "");
	node_unlock(&node->view_lock, NODE_LOCK_VIEW);
}

int node_family_open(struct accel_node *node, struct node_family *fam)
{
	char err[512];
	size_t present = 0;
	int ret;

	ret = accel_family_open_lib(fam->family, fam->library[0] ? fam->library : NULL, &fam->lib, err, sizeof(err));
	node_family_state(node, fam, false, ret, ret ? err : NULL);
	if (ret == -ENOENT)
		log_info("%s: %s: no %s driver, the family is not shown (but for cards with records)",
		         fam->family->tree_prefix, err, fam->family->vendor);
	else if (ret)
		log_warn("%s: %s driver unusable: %s; the family is not shown (but for cards with records)",
		         fam->family->tree_prefix, fam->family->vendor, err);
	fam->loaded = ret == 0;
	ret = enumerate(node, fam, true);
	if (ret || !fam->loaded)
		return ret;
	for (size_t c = 0; c < fam->n_cards; c++)
		present += !fam->cards[c]->absent;
	log_info("%s: %zu %s device(s) through %s", fam->family->tree_prefix, present, fam->family->vendor,
	         fam->lib.path);
	return 0;
}

/* ---- looking again ------------------------------------------------------- */

void node_cards_rescan(struct accel_node *node)
{
	node_topo_wrlock(node);
	for (size_t f = 0; f < node->n_fams; f++) {
		struct node_family *fam = &node->fams[f];
		int ret = 0;

		if (node->opt.families[f].disabled)
			continue;
		if (!fam->loaded)
			ret = node_family_open(node, fam);
		else
			ret = enumerate(node, fam, false);
		if (ret)
			log_error("%s: out of memory looking for its devices; trying again at the next event",
			          fam->family->tree_prefix);
	}
	node->topo_generation++;
	node_topo_unlock(node);
}

bool node_cards_changed(struct accel_node *node)
{
	for (size_t f = 0; f < node->n_fams; f++) {
		struct node_family *fam = &node->fams[f];
		unsigned count;

		for (size_t c = 0; c < fam->n_cards; c++) {
			struct node_card *nc = fam->cards[c];
			bool emptied;

			if (!nc->absent)
				continue;
			node_lock(&nc->lock, NODE_LOCK_CARD);
			emptied = !nc->n_records && !nc->n_bad;
			node_unlock(&nc->lock, NODE_LOCK_CARD);
			if (emptied)
				return true;
		}
		if (!fam->loaded)
			continue;
		if (fam->lib.DeviceGetCount_v2(&count) == MIG_SUCCESS && count != fam->n_indices)
			return true;
		for (size_t i = 0; i < fam->n_failed; i++) {
			mig_device_t h;
			if (fam->lib.DeviceGetHandleByIndex_v2(fam->failed[i].index, &h) == MIG_SUCCESS)
				return true;
		}
	}
	return false;
}
