/* SPDX-License-Identifier: MIT */
#include "fs/render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cdi.h"
#include "core/family.h"
#include "fs/dies.h"
#include "fs/metrics_text.h"
#include "fs/mig_map.h"
#include "fs/node_json.h"
#include "fs/jobctl.h"

/* A growing text buffer. */
struct text {
	char *buf;
	size_t len, cap;
	bool oom;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->oom)
		return;
	for (;;) {
		size_t room = t->cap - t->len;
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->oom = true;
			return;
		}
		if (t->buf && (size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = (t->cap ? t->cap * 2 : 256) + (size_t)n;
		char *grown = realloc(t->buf, cap);
		if (!grown) {
			t->oom = true;
			return;
		}
		t->buf = grown;
		t->cap = cap;
	}
}

static void render_device_info(struct text *t, const struct accel_device *d)
{
	const struct accel_family *f = d->family;

	put(t, "name: %s\n", d->name);
	put(t, "vendor: %s\n", f->vendor);
	put(t, "product: %s\n", d->product);
	put(t, "uuid: %s\n", d->uuid);
	if (f->card_node_by_minor) {
		/* NVIDIA: the tree's number is NVML's index; paths use the minor. */
		put(t, "index: %u (the %u in %s%u: NVML's device index)\n", d->ordinal, d->ordinal, f->tree_prefix,
		    d->ordinal);
		put(t, "minor: %u (/dev/%s%u and procfs capabilities/gpu%u)\n", d->minor, f->card_node_prefix, d->minor,
		    d->minor);
	} else {
		put(t, "ordinal: %u (the card ordinal: /dev/%s%u, capabilities/ppu%u)\n", d->ordinal,
		    f->card_node_prefix, d->ordinal, d->ordinal);
		put(t, "minor: %u (the driver's minor number; not a path)\n", d->minor);
	}
	put(t, "bus_id: %s\n", d->bus_id);
	if (d->memory_mib)
		put(t, "memory_mib: %llu\n", d->memory_mib);
	put(t, "mig_mode: %s\n", d->mig_enabled ? "enabled" : "disabled");
	put(t, "driver_library: %s\n", d->library);
	put(t, "pci_driver: %s\n", d->pci_driver[0] ? d->pci_driver : "unknown");
	if (d->udev_syspath[0])
		put(t, "syspath: %s\n", d->udev_syspath);
	for (size_t i = 0; i < d->n_card_nodes; i++)
		put(t, "node: %s c %u:%u\n", d->card_nodes[i].path, d->card_nodes[i].major, d->card_nodes[i].minor);
	put(t, "state: %s%s%s\n", d->refused ? "refused" : "ok", d->refused ? ": " : "", d->refused ? d->refusal : "");
}

static void render_holders(struct text *t, struct accel_node *node, const struct accel_device *d)
{
	struct accel_holder *h;
	size_t n;

	if (accel_node_holders(node, d->name, &h, &n))
		return;
	for (size_t i = 0; i < n; i++)
		put(t, "pid=%d command=%s fds=%u cmdline=%s\n", (int)h[i].pid, h[i].comm, h[i].nfds, h[i].cmdline);
	free(h);
}

static void render_mode(struct text *t, const struct accel_device *d)
{
	const char *cur = d->mig_enabled ? "enabled" : "disabled";
	const char *pend = d->mig_pending_enabled ? "enabled" : "disabled";

	if (d->mig_enabled == d->mig_pending_enabled)
		put(t, "%s\n", cur);
	else
		put(t, "%s (pending: %s)\n", cur, pend);
}

static void render_instances(struct text *t, const struct accel_device *d)
{
	for (size_t i = 0; i < d->n_instances; i++) {
		const struct accel_instance *in = &d->instances[i];
		put(t, "gi=%u ci=", in->gi);
		if (!in->n_ci)
			put(t, "-");
		for (unsigned c = 0; c < in->n_ci && c < 8; c++)
			put(t, "%s%u", c ? "," : "", in->ci[c]);
		put(t, " profile=%s profile_id=%u placement=%u:%u uuid=%s job=%s", in->profile_name, in->profile_id,
		    in->placement.start, in->placement.size, in->uuid[0] ? in->uuid : "-", in->job[0] ? in->job : "-");
		if (in->note[0])
			put(t, " note=\"%s\"", in->note);
		put(t, "\n");
	}
}

static void render_profile_info(struct text *t, const struct accel_profile *p)
{
	char placements[256];

	accel_ledger_format(p->placements, p->n_placements, placements, sizeof(placements));
	put(t, "name: %s\n", p->name);
	put(t, "driver_name: %s\n", p->vendor_name);
	put(t, "driver_display_name: %s\n", p->driver_name);
	put(t, "profile_id: %u\n", p->id);
	put(t, "memory_slices: %u\n", p->span);
	put(t, "memory_mib: %llu\n", p->memory_mib);
	put(t, "compute_slices: %u\n", p->slice_count);
	put(t, "multiprocessors: %u\n", p->multiprocessors);
	put(t, "copy_engines: %u\n", p->copy_engines);
	put(t, "decoders: %u\n", p->decoders);
	put(t, "encoders: %u\n", p->encoders);
	put(t, "jpeg: %u\n", p->jpegs);
	put(t, "ofa: %u\n", p->ofas);
	put(t, "placements: %s\n", placements);
	put(t, "capacity: %u\n", accel_ledger_capacity(p->n_placements));
}

static void render_status(struct text *t, const struct accel_device *d, const struct accel_job *j)
{
	char when[32] = "";
	struct tm tm;
	time_t created = (time_t)j->created;

	if (gmtime_r(&created, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	put(t, "state: %s\n", accel_job_state_str(j->state));
	if (j->state != ACCEL_JOB_READY)
		put(t, "reason: %s\n", j->state_reason);
	/* The card cannot be read now: everything below is its last known state. */
	if (d->refused)
		put(t, "refused: %s\n", d->refusal);
	put(t, "device: %s\n", d->name);
	put(t, "profile: %s\n", j->profile);
	put(t, "profile_id: %u\n", j->profile_id);
	put(t, "gi: %u\n", j->gi);
	put(t, "ci: %u\n", j->ci);
	put(t, "placement: %u:%u\n", j->placement.start, j->placement.size);
	put(t, "uuid: %s\n", j->uuid);
	put(t, "owner: %u:%u\n", (unsigned)j->uid, (unsigned)j->gid);
	put(t, "created: %s\n", when);
	/* reclaim and the containers given it (fs/jobctl.c) */
	char *more = fs_jobctl_status_lines(j);
	if (!more)
		t->oom = true;
	else
		put(t, "%s", more);
	free(more);
}

int fs_render(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n, char **out, size_t *len)
{
	struct text t = { 0 };
	char buf[ACCEL_TEXT_MAX + 160];
	char *cdi;

	switch (n->kind) {
	/* Whole files of their own, each rendered by its module. */
	case FS_METRICS:
		return fs_metrics_render(s, out, len);
	case FS_NODE_JSON:
		return fs_node_json_render(s, out, len);
	case FS_MIG_MAP:
		return fs_mig_map_render(n->dev, out, len);
	case FS_DEVICE_INFO:
		render_device_info(&t, n->dev);
		break;
	case FS_DEVICE_HOLDERS:
		render_holders(&t, node, n->dev);
		break;
	case FS_MIG_MODE:
		render_mode(&t, n->dev);
		break;
	case FS_MIG_INSTANCES:
		render_instances(&t, n->dev);
		break;
	case FS_PROFILE_INFO:
		render_profile_info(&t, n->profile);
		break;
	case FS_PROFILE_AVAILABLE:
		put(&t, "%u\n", n->profile->available);
		break;
	case FS_PROFILE_LAST_ERROR: {
		char key[160];
		snprintf(key, sizeof(key), "%s/%s", n->dev->name, n->profile->name);
		accel_node_last_error(node, key, buf, sizeof(buf));
		if (buf[0])
			put(&t, "%s\n", buf);
		break;
	}
	case FS_NODE_PROFILE_INFO: {
		unsigned avail;
		put(&t, "name: %s\n", n->node_profile);
		put(&t, "devices:");
		fs_node_profile_devices(s, n->node_profile, &avail);
		for (size_t i = 0; i < s->n_devices; i++)
			if (accel_device_profile(s->devices[i], n->node_profile))
				put(&t, " %s", s->devices[i]->name);
		put(&t, "\n");
		put(&t, "selection: least capacity lost, then family order and ordinal, then lowest start\n");
		break;
	}
	case FS_NODE_PROFILE_AVAILABLE: {
		unsigned avail;
		fs_node_profile_devices(s, n->node_profile, &avail);
		put(&t, "%u\n", avail);
		break;
	}
	case FS_NODE_PROFILE_LAST_ERROR: {
		char key[160];
		snprintf(key, sizeof(key), "mig/%s", n->node_profile);
		accel_node_last_error(node, key, buf, sizeof(buf));
		if (buf[0])
			put(&t, "%s\n", buf);
		break;
	}
	case FS_JOB_STATUS:
		render_status(&t, n->dev, n->job);
		break;
	case FS_JOB_DEVICES:
		if (n->job->state != ACCEL_JOB_READY)
			return -ENODEV;
		for (size_t i = 0; i < n->job->n_nodes; i++)
			put(&t, "%s c %u:%u\n", n->job->nodes[i].path, n->job->nodes[i].major, n->job->nodes[i].minor);
		break;
	case FS_JOB_CDI:
		if (n->job->state != ACCEL_JOB_READY)
			return -ENODEV;
		cdi = accel_cdi_job_spec(n->dev, n->job);
		if (!cdi)
			return -ENOMEM;
		put(&t, "%s\n", cdi);
		free(cdi);
		break;
	case FS_JOB_HOLDERS:
	case FS_JOB_CONTAINERS:
	case FS_JOB_RECLAIM:
		cdi = fs_jobctl_render(n);
		if (!cdi)
			return -ENOMEM;
		put(&t, "%s", cdi);
		free(cdi);
		break;
	case FS_DIES_SLOT:
	case FS_DIES_LEASE:
	case FS_DIE_INFO:
	case FS_DIE_ENABLED:
	case FS_DIE_DRIVER:
	case FS_DIE_POLICY:
		free(t.buf);
		return fs_dies_render(n->kind, n->die, out, len); /* fs/dies_render.c: the slot moves on its own */
	default:
		return -EISDIR;
	}
	if (t.oom) {
		free(t.buf);
		return -ENOMEM;
	}
	*out = t.buf;
	*len = t.len;
	return 0;
}
