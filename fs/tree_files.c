/* SPDX-License-Identifier: MIT */
/*
 * Every named entry of the tree's directories: one row each (struct
 * fs_entry, fs/tree.h), and the render function of each generated file.
 * Resolve, list, attributes, caching and render all read these rows; to add
 * a read-only file, add a row of kind FS_FILE and its render function.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state/cdi.h"
#include "core/driver/family.h"
#include "core/model/health.h"
#include "core/engine/node.h"
#include "core/policy/quota.h"
#include "core/model/utc.h"
#include "fs/dies.h"
#include "fs/health_text.h"
#include "fs/info_text.h"
#include "fs/containers_text.h"
#include "fs/containers_write.h"
#include "fs/foreign_files.h"
#include "fs/layout_files.h"
#include "fs/metrics_text.h"
#include "fs/mig_map.h"
#include "fs/live_text.h"
#include "fs/node_json.h"
#include "fs/usage_text.h"
#include "fs/quota_file.h"
#include "fs/render.h"
#include "fs/tree.h"
#include "fs/shown.h"

static void status_text(struct fs_text *t, struct accel_attach *reg, const struct accel_device *d,
                        const struct accel_job *j)
{
	char when[ACCEL_UTC_MAX];

	accel_utc(j->created, when, sizeof(when));
	fs_put(t, "state: %s\n", accel_job_state_str(j->state));
	if (j->state != ACCEL_JOB_READY)
		fs_put(t, "reason: %s\n", j->state_reason);
	/* The card cannot be read now (or is not there): everything below is its last known state. */
	if (d->refused)
		fs_put(t, "%s: %s\n", accel_device_state_str(d), d->refusal);
	fs_put(t, "device: %s\n", d->name);
	fs_put(t, "profile: %s\n", j->profile);
	fs_put(t, "profile_id: %u\n", j->profile_id);
	fs_put(t, "gi: %u\n", j->gi);
	fs_put(t, "ci: %u\n", j->ci);
	fs_put(t, "placement: %u:%u\n", j->placement.start, j->placement.size);
	fs_put(t, "uuid: %s\n", j->uuid);
	fs_put(t, "owner: %u:%u\n", (unsigned)j->uid, (unsigned)j->gid);
	fs_put(t, "created: %s\n", when);
	/* reclaim and the containers given it (fs/containers_text.c) */
	fs_attach_status_lines(t, reg, j);
	/*
	 * What runs on it is not here: that is the driver's answer now, the
	 * live row processes.  status is the snapshot's and the registry's.
	 */
}

/* The node-level profile's numbers (fs/tree.h): here, as its files need them and tree.c calls here. */
size_t fs_node_profile_devices(const struct accel_snapshot *s, const char *profile, unsigned *available)
{
	size_t n = 0;

	if (available)
		*available = 0;
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_profile *p = accel_device_profile(s->devices[i], profile);
		if (!p)
			continue;
		n++;
		if (available)
			*available += p->available;
	}
	return n;
}

/* ---- the render functions of the rows ---------------------------------- */

static int metrics(struct fs_text *t, const struct fs_view *v)
{
	static _Atomic size_t last; /* the last scrape's length: a hundred jobs' text grows by no copy */
	struct accel_quota_table quota;
	int ret = fs_shown_quota(v->shown, &quota);

	if (ret)
		return ret;
	fs_text_reserve(t, last + last / 8);
	fs_metrics_text(t, v->s, v->n->mount->dies, &quota);
	accel_quota_table_free(&quota);
	fs_usage_metrics(t, v->shown, v->s); /* live: a scrape samples what jobs use (never the textfile copy) */
	last = t->len;
	return 0;
}

static int node_json(struct fs_text *t, const struct fs_view *v)
{
	struct accel_quota_table quota;
	int ret = fs_shown_quota(v->shown, &quota);

	if (ret)
		return ret;
	ret = fs_node_json_text(t, v->s, v->shown, v->n->mount, &quota);
	accel_quota_table_free(&quota);
	return ret;
}

static int mig_map(struct fs_text *t, const struct fs_view *v)
{
	return fs_mig_map_text(t, v->n->dev);
}

static int device_info(struct fs_text *t, const struct fs_view *v)
{
	fs_device_info_text(t, v->n->dev);
	return 0;
}

static int device_health(struct fs_text *t, const struct fs_view *v)
{
	fs_health_text(t, &v->n->dev->health, true); /* what the driver's events said */
	return 0;
}

static int job_health(struct fs_text *t, const struct fs_view *v)
{
	fs_health_text(t, &v->n->job->health, false);
	return 0;
}

static int device_holders(struct fs_text *t, const struct fs_view *v)
{
	fs_device_holders_text(t, v->live, v->n->dev);
	return 0;
}

static int mig_instances(struct fs_text *t, const struct fs_view *v)
{
	fs_mig_instances_text(t, v->n->dev);
	return 0;
}

static int profile_info(struct fs_text *t, const struct fs_view *v)
{
	fs_profile_info_text(t, v->n->profile);
	return 0;
}

static int profile_available(struct fs_text *t, const struct fs_view *v)
{
	fs_put(t, "%u\n", v->n->profile->available);
	return 0;
}

/* The node's last error for key, if any, as one line. */
static void last_error_text(struct fs_text *t, const struct fs_shown *shown, const char *key)
{
	char buf[ACCEL_TEXT_MAX + 160];

	fs_shown_last_error(shown, key, buf, sizeof(buf));
	if (buf[0])
		fs_put(t, "%s\n", buf);
}

static int profile_last_error(struct fs_text *t, const struct fs_view *v)
{
	char key[ACCEL_LAST_ERROR_KEY_MAX];

	accel_last_error_key(key, sizeof(key), v->n->dev->name, v->n->profile->name);
	last_error_text(t, v->shown, key);
	return 0;
}

static int node_profile_info(struct fs_text *t, const struct fs_view *v)
{
	fs_put(t, "name: %s\n", v->n->node_profile);
	fs_put(t, "devices:");
	for (size_t i = 0; i < v->s->n_devices; i++)
		if (accel_device_profile(v->s->devices[i], v->n->node_profile))
			fs_put(t, " %s", v->s->devices[i]->name);
	fs_put(t, "\n");
	fs_put(t, "selection: least capacity lost, then family order and ordinal, then lowest start\n");
	return 0;
}

static int node_profile_available(struct fs_text *t, const struct fs_view *v)
{
	unsigned avail;

	fs_node_profile_devices(v->s, v->n->node_profile, &avail);
	fs_put(t, "%u\n", avail);
	return 0;
}

static int node_profile_last_error(struct fs_text *t, const struct fs_view *v)
{
	char key[ACCEL_LAST_ERROR_KEY_MAX];

	accel_last_error_key(key, sizeof(key), NULL, v->n->node_profile);
	last_error_text(t, v->shown, key);
	return 0;
}

static int job_status(struct fs_text *t, const struct fs_view *v)
{
	status_text(t, v->n->mount->attach, v->n->dev, v->n->job);
	return 0;
}

static int job_devices(struct fs_text *t, const struct fs_view *v)
{
	if (v->n->job->state != ACCEL_JOB_READY)
		return -ENODEV;
	for (size_t i = 0; i < v->n->job->n_nodes; i++)
		fs_put(t, "%s c %u:%u\n", v->n->job->nodes[i].path, v->n->job->nodes[i].major,
		       v->n->job->nodes[i].minor);
	return 0;
}

static int job_cdi(struct fs_text *t, const struct fs_view *v)
{
	char *cdi;

	if (v->n->job->state != ACCEL_JOB_READY)
		return -ENODEV;
	cdi = accel_cdi_job_spec(v->n->dev, v->n->job);
	if (!cdi)
		return -ENOMEM;
	fs_put(t, "%s\n", cdi);
	free(cdi);
	return 0;
}

/*
 * placements/<start>/status: free or taken, against every live instance of
 * the card (any profile, any owner), and one line per instance in the way.
 */
static int placement_status(struct fs_text *t, const struct fs_view *v)
{
	const struct accel_device *d = v->n->dev;
	bool taken = false;

	for (size_t i = 0; i < d->n_instances; i++)
		taken = taken || accel_span_overlaps(v->n->placement, d->instances[i].placement);
	fs_put(t, "state: %s\n", taken ? "taken" : d->admits.new_jobs ? "free" : "blocked"); /* core/policy/admits.c */
	if (!taken && !d->admits.new_jobs)
		fs_put(t, "blocked: %s: %s\n", accel_condition_str(d->admits.condition), d->admits.why);
	if (d->refused)
		fs_put(t, "refused: %s\n", d->refusal);
	fs_put(t, "placement: %u:%u\n", v->n->placement.start, v->n->placement.size);
	for (size_t i = 0; i < d->n_instances; i++) {
		const struct accel_instance *in = &d->instances[i];
		if (accel_span_overlaps(v->n->placement, in->placement))
			fs_put(t, "holder: gi=%u profile=%s placement=%u:%u job=%s\n", in->gi, in->profile_name,
			       in->placement.start, in->placement.size, in->job[0] ? in->job : "-");
	}
	return 0;
}

/* ---- when a row is there ------------------------------------------------- */

/* dies/ exists where the mount has a slot (fs/dies.h). */
static bool has_dies(const struct fs_node *dir)
{
	return dir->mount->dies != NULL;
}

/* A job seen from mig/<profile>/ or placements/<start>/ links to its device's directory. */
static bool seen_from_a_view(const struct fs_node *dir)
{
	return dir->via_node || dir->via_placement;
}

/* cdi.json exists only while the specs carry the hooks that record its containers (core/state/cdi.h). */
static bool cdi_hooked(const struct fs_node *dir)
{
	(void)dir;
	return accel_cdi_hooked();
}

/* ---- the rows ----------------------------------------------------------- */

/* Files at the top: views of the whole node, for programs and for monitoring. */
static const struct fs_entry root_files[] = {
	{ .name = "metrics", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = metrics },
	{ .name = "node.json", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = node_json },
	{ .name = "mig", .kind = FS_NODE_MIG, .fresh = FS_FRESH_SNAPSHOT },
	/* the slot moves without a snapshot: so does everything below dies/ */
	{ .name = "dies", .kind = FS_DIES, .fresh = FS_FRESH_SNAPSHOT, .flags = FS_ENTRY_LIVE, .offered = has_dies },
	/* limits change with no new snapshot; root writes the table, whole at close (fs/quota_file.c) */
	{ .name = "quota",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE | FS_ENTRY_DEFERRED,
	  .render = fs_quota_render,
	  .write = fs_quota_write },
	{ 0 },
};

static const struct fs_entry device_files[] = {
	{ .name = "info",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = device_info },
	FS_DEVICE_HEALTH_ROW(device_health), /* root or the delegate writes ok: fs/layout_files.c */
	/* live: /proc at open and read, never at stat or poll */
	{ .name = "holders", .kind = FS_FILE, .fresh = FS_FRESH_LIVE, .render = device_holders },
	FS_USAGE_ROW(0), /* live: sampled from the driver while read, never by an idle daemon */
	{ .name = "mig", .kind = FS_MIG, .fresh = FS_FRESH_SNAPSHOT },
	{ 0 },
};

/* Their names are core/model/tree_names.h's ACCEL_MIG_FILE_NAMES: no profile may be called so. */
static const struct fs_entry mig_files[] = {
	/* mode, layout and cordon are written through fs/layout_files.c */
	{ .name = "mode",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_CACHED | FS_ENTRY_WRITABLE,
	  .render = fs_mig_mode_render,
	  .write = fs_mig_setting_write },
	{ .name = "instances",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = mig_instances },
	{ .name = "map", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .flags = FS_ENTRY_CACHED, .render = mig_map },
	/* the layout's files change with no new snapshot */
	/* its writes are kept with the handle and applied at its writer's close (fs/deferred.h) */
	{ .name = "layout",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE | FS_ENTRY_DEFERRED,
	  .render = fs_layout_render,
	  .write = fs_layout_text_write },
	{ .name = "layout_status", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = fs_layout_status_render },
	{ .name = "cordon",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE,
	  .render = fs_cordon_render,
	  .write = fs_mig_setting_write },
	/* instances accelfs did not make: what becomes of them here, and taking one over (fs/foreign_files.c) */
	{ .name = "foreign",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_CACHED | FS_ENTRY_WRITABLE,
	  .render = fs_foreign_render,
	  .write = fs_foreign_write },
	{ .name = "adopt",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_CACHED | FS_ENTRY_WRITABLE,
	  .render = fs_adopt_render,
	  .write = fs_foreign_write },
	{ .name = "last_error", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = fs_mig_last_error_render },
	{ 0 },
};

/* Their names are core/model/tree_names.h's ACCEL_PROFILE_FILE_NAMES: no job may be called so. */
static const struct fs_entry profile_files[] = {
	{ .name = "info",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = profile_info },
	{ .name = "available",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = profile_available },
	/* last_error changes with no new snapshot */
	{ .name = "last_error", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = profile_last_error },
	{ .name = "placements", .kind = FS_PLACEMENTS, .fresh = FS_FRESH_SNAPSHOT },
	{ 0 },
};

/* Their names are core/model/tree_names.h's ACCEL_PLACEMENT_FILE_NAMES: jobs show beside them. */
static const struct fs_entry placement_files[] = {
	{ .name = "status",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = placement_status },
	{ 0 },
};

/* Their names are core/model/tree_names.h's ACCEL_NODE_PROFILE_FILE_NAMES. */
static const struct fs_entry node_profile_files[] = {
	{ .name = "info",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = node_profile_info },
	{ .name = "available",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = node_profile_available },
	{ .name = "last_error", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = node_profile_last_error },
	{ 0 },
};

static const struct fs_entry job_files[] = {
	/* the snapshot's and the registry's (fs/notify.c drops it when either changes): what runs is processes' */
	{ .name = "status",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = job_status },
	{ .name = "devices",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED | FS_ENTRY_JOB_READY,
	  .render = job_devices },
	{ .name = "cdi.json",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED | FS_ENTRY_JOB_READY,
	  .render = job_cdi,
	  .offered = cdi_hooked },
	{ .name = "dev", .kind = FS_JOB_DEV, .fresh = FS_FRESH_SNAPSHOT },
	/* live: the driver's running-process query at open and read (fs/live_text.c) */
	{ .name = "processes",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_LIVE,
	  .flags = FS_ENTRY_JOB_READY,
	  .render = fs_job_processes_text },
	/* what the driver's events said about the job's instance (core/model/health.h) */
	{ .name = "health",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .flags = FS_ENTRY_CACHED,
	  .render = job_health },
	FS_USAGE_ROW(FS_ENTRY_JOB_READY), /* live: sampled while read, never by an idle daemon */
	/* holders: /proc, live; containers and reclaim: the attach registry's view (fs/containers_*.c) */
	{ .name = "holders", .kind = FS_FILE, .fresh = FS_FRESH_LIVE, .render = fs_holders_text },
	{ .name = "containers",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE,
	  .render = fs_containers_text,
	  .write = fs_containers_write },
	{ .name = "reclaim",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE,
	  .render = fs_reclaim_text,
	  .write = fs_reclaim_write },
	{ .name = "device", .kind = FS_JOB_LINK, .fresh = FS_FRESH_SNAPSHOT, .offered = seen_from_a_view },
	{ 0 },
};

/* dies/ (fs/dies_render.c says, fs/dies_attr.c writes), and one directory per die (fs/dies_tree.c). */
static const struct fs_entry dies_files[] = {
	{ .name = "slot", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = fs_dies_slot_text },
	/* why the last write to enabled, policy or lease_ms failed: fs/dies_attr.c keeps it, as last_error */
	{ .name = "last_error", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = fs_dies_last_error_text },
	{ .name = "lease_ms",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE,
	  .render = fs_dies_lease_text,
	  .write = fs_dies_lease_write },
	{ 0 },
};

static const struct fs_entry die_files[] = {
	{ .name = "info", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .render = fs_die_info_text },
	{ .name = "enabled",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE,
	  .render = fs_die_enabled_text,
	  .write = fs_die_enabled_write },
	{ .name = "driver",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE,
	  .render = fs_die_driver_text,
	  .write = fs_die_driver_write },
	{ .name = "policy",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_SNAPSHOT,
	  .mode = 0644,
	  .flags = FS_ENTRY_WRITABLE,
	  .render = fs_die_policy_text,
	  .write = fs_die_policy_write },
	/* the die's memory through the slot: handles of its own (fs/dies.c), opening holds the slot */
	{ .name = "vram",
	  .kind = FS_FILE,
	  .fresh = FS_FRESH_LIVE,
	  .mode = 0600,
	  .flags = FS_ENTRY_WRITABLE,
	  .open = fs_die_vram_open,
	  .size = fs_die_vram_bytes },
	{ 0 },
};

const struct fs_entry *fs_tree_files(enum fs_kind dir)
{
	switch (dir) {
	case FS_ROOT:
		return root_files;
	case FS_DEVICE:
		return device_files;
	case FS_MIG:
		return mig_files;
	case FS_PROFILE:
		return profile_files;
	case FS_NODE_PROFILE:
		return node_profile_files;
	case FS_PLACEMENT:
		return placement_files;
	case FS_JOB:
	case FS_NODE_JOB:
	case FS_PLACEMENT_JOB:
		return job_files;
	case FS_DIES:
		return dies_files;
	case FS_DIE:
		return die_files;
	default:
		return NULL;
	}
}
