/* SPDX-License-Identifier: MIT */
#include "fs/node_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/state/attach.h"
#include "core/driver/family.h"
#include "core/model/health.h"
#include "core/model/mig_abi.h"
#include "core/engine/node.h"
#include "fs/usage_text.h"
#include "core/policy/quota.h"
#include "core/model/utc.h"
#include "fs/dies.h"
#include "fs/tree.h"

#ifndef ACCELFS_VERSION
#define ACCELFS_VERSION "unknown"
#endif

/*
 * Every builder returns a new reference or NULL when out of memory; the
 * json_pack "o" format steals its argument and fails on NULL, so a failure
 * anywhere below comes up as NULL at the top without leaking.
 */

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *span(struct accel_span sp)
{
	return json_pack("{s:I,s:I}", "start", (json_int_t)sp.start, "size", (json_int_t)sp.size);
}

static json_t *devnodes(const struct accel_devnode *nodes, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a,
		                          json_pack("{s:s,s:I,s:I}", "path", nodes[i].path, "major",
		                                    (json_int_t)nodes[i].major, "minor", (json_int_t)nodes[i].minor))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *profile(const void *elem, const void *ctx)
{
	const struct accel_profile *p = elem;

	json_t *placements = json_array();

	for (size_t i = 0; placements && i < p->n_placements; i++)
		if (json_array_append_new(placements, span(p->placements[i]))) {
			json_decref(placements);
			placements = NULL;
		}
	return json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I}", "name", p->name,
	                 "driver_name", p->vendor_name, "driver_display_name", p->driver_name, "profile_id",
	                 (json_int_t)p->id, "memory_slices", (json_int_t)p->span, "memory_mib",
	                 (json_int_t)p->memory_mib, "compute_slices", (json_int_t)p->slice_count, "multiprocessors",
	                 (json_int_t)p->multiprocessors, "copy_engines", (json_int_t)p->copy_engines, "decoders",
	                 (json_int_t)p->decoders, "encoders", (json_int_t)p->encoders, "jpeg", (json_int_t)p->jpegs,
	                 "ofa", (json_int_t)p->ofas, "placements", placements, "capacity",
	                 (json_int_t)accel_ledger_capacity(p->n_placements), "available", (json_int_t)p->available,
	                 "free", (json_int_t)p->free);
}

/* A job's or a device's health, as its health file says it. */
static json_t *health(const struct accel_health *h)
{
	bool fault = h->state == ACCEL_HEALTH_DEGRADED || h->state == ACCEL_HEALTH_FAILED;
	json_t *events = json_object(), *o;
	char when[ACCEL_UTC_MAX] = "", xid[16];

	for (size_t i = 0; events && i < ACCEL_HEALTH_XIDS && h->counts[i].events; i++) {
		snprintf(xid, sizeof(xid), "%u", h->counts[i].xid);
		json_object_set_new(events, xid, json_integer((json_int_t)h->counts[i].events));
	}
	if (fault && h->since > 0)
		accel_utc(h->since, when, sizeof(when));
	o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "state", accel_health_state_str(h->state), "why",
	              h->state == ACCEL_HEALTH_OK ? json_null() : json_string(h->why), "xid",
	              fault && h->xid ? json_integer(h->xid) : json_null(), "recovery",
	              fault ? json_string(accel_health_action_name(h->action)) : json_null(), "time",
	              when[0] ? json_string(when) : json_null(), "scope",
	              !fault ? json_null()
	              : h->gi == MIG_EVENT_NO_INSTANCE
	                      ? json_string("card")
	                      : json_pack("{s:I,s:o}", "gi", (json_int_t)h->gi, "ci",
	                                  h->ci == MIG_EVENT_NO_INSTANCE ? json_null() : json_integer(h->ci)),
	              "touched", fault && h->gi == MIG_EVENT_NO_INSTANCE ? json_string(h->touched) : json_null(),
	              "events", events);
	return o;
}

/* What the card can take now (core/policy/admits.c): the answer mkdir gives, and why. */
static json_t *admits(const struct accel_device *d)
{
	json_t *o = json_object();

	if (o && (json_object_set_new(o, "new_jobs", json_boolean(d->admits.new_jobs)) ||
	          json_object_set_new(o, "condition", json_string(accel_condition_str(d->admits.condition))) ||
	          json_object_set_new(o, "why", d->admits.new_jobs ? json_null() : json_string(d->admits.why)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* status's container: lines, as {id, pid, since}; what the registry cannot list is left out, as there. */
static json_t *containers(struct accel_attach *reg, const struct accel_job *j)
{
	struct accel_attachment *c = NULL;
	json_t *a = json_array();
	size_t n = 0;
	char since[ACCEL_UTC_MAX];

	if (!reg || accel_attach_list(reg, j->name, j->uuid, &c, &n))
		return a;
	for (size_t i = 0; a && i < n; i++) {
		accel_utc(c[i].since, since, sizeof(since));
		if (json_array_append_new(a, json_pack("{s:s,s:I,s:s}", "id", c[i].id, "pid", (json_int_t)c[i].pid,
		                                       "since", since))) {
			json_decref(a);
			a = NULL;
		}
	}
	free(c);
	return a;
}

struct job_ctx {
	const struct accel_device *d;
	struct accel_attach *reg;
	const struct fs_shown *shown;
	const struct accel_snapshot *s;
};

static json_t *job(const void *elem, const void *ctx)
{
	const struct accel_job *j = elem;
	const struct job_ctx *jc = ctx;
	const struct accel_device *d = jc->d;
	char when[ACCEL_UTC_MAX];
	bool ready = j->state == ACCEL_JOB_READY;
	json_t *o;

	accel_utc(j->created, when, sizeof(when));
	/* A job that is not ready fails closed (devices answers ENODEV): no nodes here either. */
	o = json_pack("{s:s,s:s,s:s,s:o,s:s,s:I,s:I,s:I,s:o,s:s,s:{s:I,s:I},s:s,s:o,s:o}", "name", j->name, "profile",
	              j->profile, "state", accel_job_state_str(j->state), "reason",
	              ready ? json_null() : json_string(j->state_reason), "device", d->name, "profile_id",
	              (json_int_t)j->profile_id, "gi", (json_int_t)j->gi, "ci", (json_int_t)j->ci, "placement",
	              span(j->placement), "uuid", j->uuid, "owner", "uid", (json_int_t)j->uid, "gid",
	              (json_int_t)j->gid, "created", when, "devices",
	              ready ? devnodes(j->nodes, j->n_nodes) : json_null(), "health", health(&j->health));
	/* status's reclaim and container: lines; null without a registry, where status has neither. */
	if (o && (json_object_set_new(
			  o, "reclaim",
			  jc->reg ? json_string(accel_reclaim_str(accel_attach_reclaim(jc->reg, j->name, j->uuid)))
				  : json_null()) ||
	          json_object_set_new(o, "containers", containers(jc->reg, j)) ||
	          json_object_set_new(o, "utilization", fs_usage_json(jc->shown, jc->s, d, j)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *instance(const void *elem, const void *ctx)
{
	const struct accel_instance *in = elem;

	json_t *ci = json_array();

	for (unsigned c = 0; ci && c < in->n_ci && c < 8; c++)
		if (json_array_append_new(ci, json_integer(in->ci[c]))) {
			json_decref(ci);
			ci = NULL;
		}
	/* owner: "job" (a job's), "accelfs" (ours, no job: an orphan), "foreign" (made outside accelfs) */
	return json_pack("{s:I,s:o,s:s,s:I,s:o,s:o,s:o,s:s,s:o}", "gi", (json_int_t)in->gi, "ci", ci, "profile",
	                 in->profile_name, "profile_id", (json_int_t)in->profile_id, "placement", span(in->placement),
	                 "uuid", str_or_null(in->uuid), "job", str_or_null(in->job), "owner",
	                 in->job[0]    ? "job"
	                 : in->foreign ? "foreign"
	                               : "accelfs",
	                 "note", str_or_null(in->note));
}

/* An array of what fn makes of each of n elements of `size` bytes at arr. */
static json_t *list(const void *arr, size_t n, size_t size, json_t *(*fn)(const void *elem, const void *ctx),
                    const void *ctx)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, fn((const char *)arr + i * size, ctx))) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

static json_t *device(const struct accel_snapshot *s, const struct accel_device *d, struct accel_attach *reg,
                      const struct fs_shown *shown)
{
	const struct accel_family *f = d->family;
	struct job_ctx jc = { d, reg, shown, s };
	json_t *o;

	o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:o,s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:o}", "name", d->name, "vendor",
	              f->vendor, "product", d->product, "uuid", d->uuid, "minor", (json_int_t)d->minor, "bus_id",
	              d->bus_id, "memory_mib", d->memory_mib ? json_integer((json_int_t)d->memory_mib) : json_null(),
	              "mig_mode", d->mig_enabled ? "enabled" : "disabled", "mig_pending",
	              d->mig_pending_enabled ? "enabled" : "disabled", "driver_library", d->library, "pci_driver",
	              d->pci_driver[0] ? d->pci_driver : "unknown", "syspath", str_or_null(d->udev_syspath), "nodes",
	              devnodes(d->card_nodes, d->n_card_nodes), "state", accel_device_state_str(d), "refusal",
	              d->refused ? json_string(d->refusal) : json_null());
	if (o && json_object_set_new(o, "foreign", json_string(d->foreign_reclaim ? "reclaim" : "keep"))) {
		json_decref(o);
		o = NULL;
	}
	if (o &&
	    (json_object_set_new(o, "health", health(&d->health)) ||
	     json_object_set_new(o, "utilization", fs_usage_json(shown, s, d, NULL)) ||
	     json_object_set_new(o, "admits", admits(d)) ||
	     json_object_set_new(o, "cordon", json_boolean(d->hold.cordon || d->hold.drain || d->hold.mode_wait)) ||
	     json_object_set_new(o, "layout",
	                         json_pack("{s:I,s:I,s:b,s:b}", "pending", (json_int_t)d->hold.pending, "impossible",
	                                   (json_int_t)d->hold.impossible, "draining", d->hold.drain, "mode_waiting",
	                                   d->hold.mode_wait)))) {
		json_decref(o);
		o = NULL;
	}
	if (o && d->pci_id) {
		char pci[16];
		snprintf(pci, sizeof(pci), "0x%08X", d->pci_id);
		if (json_object_set_new(o, "pci_id", json_string(pci))) {
			json_decref(o);
			return NULL;
		}
	}
	/* The tree's number: T-Head's card ordinal, NVIDIA's NVML index (info names it the same way). */
	if (o && json_object_set_new(o, f->card_node_by_minor ? "index" : "ordinal", json_integer(d->ordinal))) {
		json_decref(o);
		return NULL;
	}
	/* Profile directories exist only while the mode is enabled; so do they here. */
	if (o &&
	    json_object_set_new(o, "profiles",
	                        d->mig_enabled ? list(d->profiles, d->n_profiles, sizeof(*d->profiles), profile, NULL)
	                                       : json_array())) {
		json_decref(o);
		return NULL;
	}
	if (o && (json_object_set_new(o, "jobs", list(d->jobs, d->n_jobs, sizeof(*d->jobs), job, &jc)) ||
	          json_object_set_new(o, "instances",
	                              list(d->instances, d->n_instances, sizeof(*d->instances), instance, NULL)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The node-level mig/: each published name once, in device order, with its devices and their sum. */
static json_t *node_profiles(const struct accel_snapshot *s)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->n_devices; i++)
		for (size_t k = 0; a && s->devices[i]->mig_enabled && k < s->devices[i]->n_profiles; k++) {
			const char *name = s->devices[i]->profiles[k].name;
			json_int_t avail = 0;
			json_t *devs;
			bool seen = false;

			for (size_t e = 0; e < i && !seen; e++)
				seen = accel_device_profile(s->devices[e], name) != NULL;
			if (seen)
				continue;
			devs = json_array();
			for (size_t e = i; devs && e < s->n_devices; e++) {
				const struct accel_profile *p = accel_device_profile(s->devices[e], name);
				if (!p)
					continue;
				avail += p->available;
				if (json_array_append_new(devs, json_string(s->devices[e]->name))) {
					json_decref(devs);
					devs = NULL;
				}
			}
			if (json_array_append_new(
				    a, json_pack("{s:s,s:o,s:I}", "name", name, "devices", devs, "available", avail))) {
				json_decref(a);
				a = NULL;
			}
		}
	return a;
}

/* Each dies/<n>/info key, with its value as that file says it (fs_die_words). */
static json_t *die(const struct fs_dies_status *st, uint32_t n)
{
	const bs_die_info *d = &st->v.dies[n].info;
	struct fs_die_words w;
	char pci[16];
	json_t *o;

	if (fs_die_words(st, n, &w))
		return NULL;
	snprintf(pci, sizeof(pci), "%04x:%04x", d->vendor, d->device);
	o = json_pack("{s:I,s:s,s:I,s:b,s:b,s:b,s:s,s:o,s:s,s:o,s:o,s:s,s:I,s:o,s:o}", "die", (json_int_t)d->die,
	              "bus_id", d->bus_id, "vram_bytes", (json_int_t)d->vram_size, "enabled",
	              !!(d->flags & BS_DIE_ENABLED), "present", !!(d->flags & BS_DIE_PRESENT), "active",
	              !!(d->flags & BS_DIE_ACTIVE), "state", w.state, "held_by", str_or_null(w.held_by), "driver",
	              w.lend.driver, "lent_to", w.lend.state != BS_LEND_NONE ? json_string(w.lend.driver) : json_null(),
	              "lender_pid", w.lend.state != BS_LEND_NONE ? json_integer(w.lender_pid) : json_null(), "policy",
	              w.policy, "acquires", (json_int_t)d->acquires, "pci_id",
	              d->flags & BS_DIE_SIM ? json_null() : json_string(pci), "bar_phys",
	              d->bar_phys ? json_integer((json_int_t)d->bar_phys) : json_null());
	return o;
}

/* dies/slot's holder, waiter and slot_waiter lines, as objects. */
static json_t *openers(const struct fs_dies_status *st, int which, int32_t lease_left)
{
	json_t *a = json_array();
	unsigned n = which == 0 ? st->n_held : which == 1 ? st->v.n_waiters : st->v.n_queue;

	for (unsigned i = 0; a && i < n; i++) {
		json_t *o;
		if (which == 0)
			o = json_pack("{s:I,s:I,s:o}", "pid", (json_int_t)st->held[i].pid, "die",
			              (json_int_t)st->held[i].die, "lease_left_ms",
			              lease_left >= 0 ? json_integer(lease_left) : json_null());
		else if (which == 1)
			o = json_pack("{s:I,s:I,s:I}", "pid", (json_int_t)st->v.waiters[i].pid, "die",
			              (json_int_t)st->v.waiters[i].die, "waited_ms",
			              (json_int_t)st->v.waiters[i].waited_ms);
		else
			o = json_pack("{s:I,s:I,s:I}", "pid", (json_int_t)st->v.queue[i].pid, "die",
			              (json_int_t)st->v.queue[i].die, "waited_ms",
			              (json_int_t)(st->v.queue[i].waited_ns / 1000000));
		if (json_array_append_new(a, o)) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/*
 * dies/ and its slot, as dies/slot and dies/<n>/info say them, from one
 * status taken at one instant (fs_dies_status); null when there is no dies/.
 */
static json_t *dies_json(const struct fs_dies *dies)
{
	struct fs_dies_status *st;
	struct fs_dies_slot_words w;
	json_t *list, *slot;

	if (fs_dies_status(dies, &st)) /* no dies/ (NULL): -ENOENT */
		return json_null();
	fs_dies_slot_words(st, &w);
	list = json_array();
	for (unsigned i = 0; list && i < st->v.n_dies; i++)
		if (!st->v.dies[i].info_err && json_array_append_new(list, die(st, i))) {
			json_decref(list);
			list = NULL;
		}
	slot = json_pack("{s:o,s:I,s:I,s:I,s:s,s:I,s:I,s:o,s:o,s:o,s:I,s:o,s:o,s:I,s:o,s:I,s:I,s:I,s:s}", "active",
	                 st->v.slot.active_die >= 0 ? json_integer(st->v.slot.active_die) : json_null(), "holders",
	                 (json_int_t)st->holders, "waiters", (json_int_t)st->v.n_waiters, "swaps",
	                 (json_int_t)st->v.slot.swaps, "owner", fs_dies_owner(st), "owner_pid",
	                 (json_int_t)st->v.slot.owner_pid, "lease_ms", (json_int_t)w.lease_ms, "lease_left_ms",
	                 w.lease_left_ms >= 0 ? json_integer(w.lease_left_ms) : json_null(), "lent",
	                 str_or_null(w.lent), "waiting_on", str_or_null(w.waiting_on), "wait_limit_ms",
	                 (json_int_t)st->wait_limit_ms, "holder", openers(st, 0, w.holders_lease_left_ms), "waiter",
	                 openers(st, 1, -1), "slot_waiters", (json_int_t)st->v.slot.waiters, "slot_waiter",
	                 openers(st, 2, -1), "slot_open_files", (json_int_t)st->v.slot.open_files, "slot_size",
	                 (json_int_t)st->v.slot.slot_size, "dies", (json_int_t)st->v.slot.num_dies, "backend",
	                 st->backend);
	free(st);
	return json_pack("{s:o,s:o}", "slot", slot, "dies", list);
}

/* An entry's limits, {"slices": {"limit": 8, "used": 3}, ...}; without use (the default's), {"slices": 8}. */
static json_t *quota_limits(const struct accel_quota_entry *e, const struct accel_quota_use *u)
{
	json_t *o = json_object();

#define LIMIT(name, lim, used)                                                                                         \
	json_object_set_new(o, name,                                                                                   \
	                    u ? json_pack("{s:I,s:I}", "limit", (json_int_t)(lim), "used", (json_int_t)(used))         \
	                      : json_integer((json_int_t)(lim)))
	if (o && e->has_slices)
		LIMIT("slices", e->slices, u ? u->slices : 0);
	for (size_t k = 0; o && k < e->n_profiles; k++)
		LIMIT(e->profiles[k].profile, e->profiles[k].n, u ? u->profiles[k] : 0);
	if (o && e->has_jobs)
		LIMIT("jobs", e->jobs, u ? u->jobs : 0);
#undef LIMIT
	return o;
}

/* The quota file as data: the default's limits (null: none) and every principal's limits and use. */
static json_t *quota_json(const struct accel_snapshot *s, const struct accel_quota_table *q)
{
	struct accel_quota_charge *c = NULL;
	struct accel_quota_row *rows = NULL;
	size_t n = 0, n_rows = 0;
	json_t *dflt = json_null(), *list = json_array();

	if (q && (accel_quota_charges(s, &c, &n) || accel_quota_rows(q, c, n, &rows, &n_rows))) {
		free(c);
		json_decref(list);
		return NULL;
	}
	for (size_t i = 0; q && i < q->n; i++)
		if (q->entries[i].kind == ACCEL_QUOTA_DEFAULT)
			dflt = quota_limits(&q->entries[i], NULL);
	for (size_t i = 0; list && i < n_rows; i++)
		if (json_array_append_new(list, json_pack("{s:s,s:b,s:o}", "principal", rows[i].principal, "default",
		                                          rows[i].by_default, "limits",
		                                          quota_limits(rows[i].entry, &rows[i].use)))) {
			json_decref(list);
			list = NULL;
		}
	free(rows);
	free(c);
	return json_pack("{s:o,s:o}", "default", dflt, "principals", list);
}

/* Each family's driver library: loaded, or why not (a node with none shows no device, and says so here). */
static json_t *families_json(const struct accel_snapshot *s)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->n_families; i++) {
		const struct accel_family_state *f = &s->families[i];

		if (json_array_append_new(a,
		                          json_pack("{s:s,s:s,s:s,s:b,s:s?,s:s?}", "name", f->prefix, "vendor",
		                                    f->vendor, "library", f->library, "loaded", f->loaded, "reason",
		                                    *f->reason ? f->reason : NULL, "why", *f->why ? f->why : NULL))) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* json_dump_callback's writer: the document goes straight into the file's text. */
static int put_json(const char *buf, size_t size, void *t)
{
	fs_put(t, "%.*s", (int)size, buf);
	return 0;
}

int fs_node_json_text(struct fs_text *t, const struct accel_snapshot *s, const struct fs_shown *shown,
                      const struct fs_mount *mount, const struct accel_quota_table *quota)
{
	json_t *devs = json_array(), *root;
	char published[ACCEL_UTC_MAX];
	int ret;

	/* A snapshot row: no driver is asked (utilization is the last reading shown, fs/usage_text.h). */
	for (size_t i = 0; devs && i < s->n_devices; i++)
		if (json_array_append_new(devs, device(s, s->devices[i], mount ? mount->attach : NULL, shown))) {
			json_decref(devs);
			devs = NULL;
		}
	accel_utc_ms(s->published_ms, published, sizeof(published));
	root = json_pack("{s:i,s:s,s:I,s:s,s:o,s:o,s:{s:o},s:o,s:o}", "format", FS_NODE_JSON_FORMAT, "version",
	                 ACCELFS_VERSION, "generation", (json_int_t)s->generation, "published", published, "families",
	                 families_json(s), "devices", devs, "mig", "profiles", node_profiles(s), "dies",
	                 dies_json(mount ? mount->dies : NULL), "quota", quota_json(s, quota));
	if (!root)
		return -ENOMEM;
	ret = json_dump_callback(root, put_json, t, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ? -ENOMEM : 0;
	json_decref(root);
	/* A document ends without a newline; a file read by cat should end with one. */
	fs_put(t, "\n");
	return ret;
}
