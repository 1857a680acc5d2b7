/* SPDX-License-Identifier: MIT */
#include "fs/metrics_text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/family.h"
#include "core/model/health.h"
#include "core/engine/metrics.h"
#include "core/policy/quota.h"
#include "fs/dies.h"
#include "fs/job_lines.h"
#include "fs/usage_text.h"

#ifndef ACCELFS_VERSION
#define ACCELFS_VERSION "unknown"
#endif

static void family(struct fs_text *t, const char *name, const char *type, const char *help)
{
	fs_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- from the snapshot -------------------------------------------------------- */

/* A node with no driver library shows no device: this says why (node.json's families say it in words). */
static void family_libraries(struct fs_text *t, const struct accel_snapshot *s)
{
	family(t, "accelfs_family_library_loaded", "gauge",
	       "1 when the family's driver library loaded; 0 when it was not found, is unusable or was not looked "
	       "for (reason; node.json's families say why in words).");
	for (size_t i = 0; i < s->n_families; i++) {
		const struct accel_family_state *f = &s->families[i];

		fs_put(t, "accelfs_family_library_loaded{");
		fs_put_label(t, "family", f->prefix, true);
		fs_put_label(t, "vendor", f->vendor, false);
		fs_put_label(t, "library", f->library, false);
		fs_put_label(t, "reason", f->reason, false);
		fs_put(t, "} %d\n", f->loaded);
	}
}

static void device_gauges(struct fs_text *t, const struct accel_snapshot *s)
{
	unsigned refused = 0;

	family(t, "accelfs_device_info", "gauge",
	       "One per device the node serves, with what identifies it (always 1).");
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];
		fs_put(t, "%s", "accelfs_device_info{");
		fs_put_label(t, "device", d->name, true);
		fs_put_label(t, "vendor", d->family->vendor, false);
		fs_put_label(t, "product", d->product, false);
		fs_put_label(t, "uuid", d->uuid, false);
		fs_put_label(t, "bus_id", d->bus_id, false);
		fs_put(t, "%s", "} 1\n");
	}
	family(t, "accelfs_device_mig_enabled", "gauge", "1 when MIG mode is enabled on the device (mig/mode).");
	for (size_t i = 0; i < s->n_devices; i++) {
		fs_put(t, "%s", "accelfs_device_mig_enabled{");
		fs_put_label(t, "device", s->devices[i]->name, true);
		fs_put(t, "} %d\n", s->devices[i]->mig_enabled);
	}
	family(t, "accelfs_device_refused", "gauge",
	       "1 while the device is refused: it carves and reclaims nothing (its info file says why).");
	for (size_t i = 0; i < s->n_devices; i++) {
		fs_put(t, "%s", "accelfs_device_refused{");
		fs_put_label(t, "device", s->devices[i]->name, true);
		fs_put(t, "} %d\n", s->devices[i]->refused);
		refused += s->devices[i]->refused;
	}
	family(t, "accelfs_devices_refused", "gauge", "Devices refused now.");
	fs_put(t, "accelfs_devices_refused %u\n", refused);
}

/* One gauge per device of a value read from its view. */
static void device_gauge(struct fs_text *t, const struct accel_snapshot *s, const char *name, const char *help,
                         unsigned (*value)(const struct accel_device *d))
{
	family(t, name, "gauge", help);
	for (size_t i = 0; i < s->n_devices; i++) {
		fs_put(t, "%s{", name);
		fs_put_label(t, "device", s->devices[i]->name, true);
		fs_put(t, "} %u\n", value(s->devices[i]));
	}
}

static unsigned admits_jobs(const struct accel_device *d)
{
	return d->admits.new_jobs;
}

static unsigned cordoned(const struct accel_device *d)
{
	return d->hold.cordon || d->hold.drain || d->hold.mode_wait;
}

static unsigned mode_pending(const struct accel_device *d)
{
	return d->hold.mode_wait || d->mig_pending_enabled != d->mig_enabled;
}

static unsigned lines_pending(const struct accel_device *d)
{
	return d->hold.pending;
}

static unsigned lines_impossible(const struct accel_device *d)
{
	return d->hold.impossible;
}

/* What each card can take now (core/policy/admits.c): what an operator alerts on. */
static void admits_gauges(struct fs_text *t, const struct accel_snapshot *s)
{
	device_gauge(t, s, "accelfs_device_admits_jobs",
	             "1 while the device takes new jobs (node.json's admits.new_jobs); 0: mkdir there is refused.",
	             admits_jobs);
	family(t, "accelfs_device_condition", "gauge",
	       "1 for the device's condition now (node.json's admits.condition), 0 for the others.");
	for (size_t i = 0; i < s->n_devices; i++)
		for (int c = ACCEL_COND_OK; c <= ACCEL_COND_ABSENT; c++) {
			fs_put(t, "%s", "accelfs_device_condition{");
			fs_put_label(t, "device", s->devices[i]->name, true);
			fs_put_label(t, "condition", accel_condition_str((enum accel_condition)c), false);
			fs_put(t, "} %d\n", s->devices[i]->admits.condition == (enum accel_condition)c);
		}
	device_gauge(t, s, "accelfs_device_cordoned",
	             "1 while the device is cordoned: by the operator (mig/cordon), a layout's drain or its mode line.",
	             cordoned);
	device_gauge(t, s, "accelfs_device_mode_pending",
	             "1 while a MIG mode change waits: held pending by the driver, or a layout's mode line.",
	             mode_pending);
	device_gauge(t, s, "accelfs_layout_lines_pending", "Lines of the device's layout pending (layout_status).",
	             lines_pending);
	device_gauge(t, s, "accelfs_layout_lines_impossible",
	             "Lines of the device's layout that cannot be applied (layout_status).", lines_impossible);
}

static size_t jobs_of_profile(const struct accel_device *d, const char *profile)
{
	size_t n = 0;

	for (size_t k = 0; k < d->n_jobs; k++)
		n += !strcmp(d->jobs[k].profile, profile);
	return n;
}

/* One gauge per (device, profile) of a device with MIG enabled: the profile directories that exist. */
static void profile_gauge(struct fs_text *t, const struct accel_snapshot *s, const char *name, const char *help,
                          int what)
{
	family(t, name, "gauge", help);
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];
		for (size_t k = 0; d->mig_enabled && k < d->n_profiles; k++) {
			const struct accel_profile *p = &d->profiles[k];
			size_t v = what == 0   ? accel_ledger_capacity(p->n_placements)
			           : what == 1 ? p->available
			                       : jobs_of_profile(d, p->name);
			fs_put(t, "%s{", name);
			fs_put_label(t, "device", d->name, true);
			fs_put_label(t, "profile", p->name, false);
			fs_put(t, "} %zu\n", v);
		}
	}
}

static void job_gauges(struct fs_text *t, const struct accel_snapshot *s)
{
	static const enum accel_job_state states[] = { ACCEL_JOB_READY, ACCEL_JOB_LOST, ACCEL_JOB_REMOVING };

	family(t, "accelfs_jobs", "gauge", "Jobs by device and state (ready, lost, removing).");
	for (size_t i = 0; i < s->n_devices; i++)
		for (size_t st = 0; st < sizeof(states) / sizeof(states[0]); st++) {
			size_t n = 0;
			for (size_t k = 0; k < s->devices[i]->n_jobs; k++)
				n += s->devices[i]->jobs[k].state == states[st];
			fs_put(t, "%s", "accelfs_jobs{");
			fs_put_label(t, "device", s->devices[i]->name, true);
			fs_put_label(t, "state", accel_job_state_str(states[st]), false);
			fs_put(t, "} %zu\n", n);
		}
	family(t, "accelfs_instances", "gauge",
	       "GPU instances the driver reports, by owner: a job of accelfs, an orphan of accelfs (no job), or "
	       "foreign (made by someone else).");
	for (size_t i = 0; i < s->n_devices; i++) {
		static const char *const owners[] = { "job", "orphan", "foreign" };
		size_t count[3] = { 0 };
		for (size_t k = 0; k < s->devices[i]->n_instances; k++) {
			const struct accel_instance *in = &s->devices[i]->instances[k];
			count[in->job[0] ? 0 : in->foreign ? 2 : 1]++;
		}
		for (size_t o = 0; o < 3; o++) {
			fs_put(t, "%s", "accelfs_instances{");
			fs_put_label(t, "device", s->devices[i]->name, true);
			fs_put_label(t, "owner", owners[o], false);
			fs_put(t, "} %zu\n", count[o]);
		}
	}
}

/*
 * Health, from the snapshot alone, so never stale: a job's gauge follows
 * its health file, back to ok once the driver reports the recovery.  The
 * events counted on the card itself have job="".
 */
static void health_events(struct fs_text *t, const char *device, const char *job, const struct accel_health *h)
{
	for (size_t i = 0; i < ACCEL_HEALTH_XIDS && h->counts[i].events; i++) {
		char xid[16];

		snprintf(xid, sizeof(xid), "%u", h->counts[i].xid);
		fs_put(t, "accelfs_health_events_total{");
		fs_put_label(t, "device", device, true);
		fs_put_label(t, "job", job, false);
		fs_put_label(t, "xid", xid, false);
		fs_put(t, "} %llu\n", h->counts[i].events);
	}
}

static void health_states(struct fs_text *t, const char *name, const char *device, const char *job,
                          const struct accel_health *h)
{
	size_t from = t->len, len;

	/* A job's four lines are written at every scrape: the labels once, then copied. */
	fs_put_str(t, name);
	fs_put_mem(t, "{", 1);
	fs_put_label(t, "device", device, true);
	if (job)
		fs_put_label(t, "job", job, false);
	fs_put_mem(t, ",state=\"", 8);
	len = t->len - from;
	for (int st = ACCEL_HEALTH_OK; st <= ACCEL_HEALTH_FAILED; st++) {
		if (st != ACCEL_HEALTH_OK)
			fs_put_again(t, from, len);
		fs_put_str(t, accel_health_state_str((enum accel_health_state)st));
		fs_put_str(t, h->state == (enum accel_health_state)st ? "\"} 1\n" : "\"} 0\n");
		if (t->oom)
			return;
	}
}

/* d's jobs' health lines: a pure function of d's view (fs/job_lines.h keeps them). */
static void job_health_lines(struct fs_text *t, const struct accel_device *d)
{
	for (size_t k = 0; k < d->n_jobs; k++)
		health_states(t, "accelfs_job_health", d->name, d->jobs[k].name, &d->jobs[k].health);
}

static void health_metrics(struct fs_text *t, const struct accel_snapshot *s)
{
	family(t, "accelfs_health_events_total", "counter",
	       "Driver events (Xid) by device, job touched (\"\" for the card itself) and Xid.");
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];

		health_events(t, d->name, "", &d->health);
		for (size_t k = 0; k < d->n_jobs; k++)
			health_events(t, d->name, d->jobs[k].name, &d->jobs[k].health);
	}
	family(t, "accelfs_device_health", "gauge", "1 for the device's health state now (its health file).");
	for (size_t i = 0; i < s->n_devices; i++)
		health_states(t, "accelfs_device_health", s->devices[i]->name, NULL, &s->devices[i]->health);
	family(t, "accelfs_job_health", "gauge", "1 for the job's health state now (its health file).");
	for (size_t i = 0; i < s->n_devices; i++)
		fs_job_lines(t, s->devices[i], FS_JOB_LINES_HEALTH, job_health_lines);
}

/* ---- from core/engine/metrics.c -------------------------------------------------------- */

static void by_reason(struct fs_text *t, const char *name, const char *help, const uint64_t *counts)
{
	family(t, name, "counter", help);
	for (size_t r = 0; r < ACCEL_REASON_COUNT; r++) {
		fs_put(t, "%s{", name);
		fs_put_label(t, "reason", accel_metrics_reason_name((enum accel_metrics_reason)r), true);
		fs_put(t, "} %llu\n", (unsigned long long)counts[r]);
	}
}

static void counter(struct fs_text *t, const char *name, const char *help, uint64_t v)
{
	family(t, name, "counter", help);
	fs_put(t, "%s %llu\n", name, (unsigned long long)v);
}

static void histogram(struct fs_text *t, const char *name, const char *help, const struct accel_metrics_histogram *h)
{
	uint64_t cumulative = 0;

	family(t, name, "histogram", help);
	for (size_t b = 0; b < ACCEL_METRICS_BUCKETS; b++) {
		cumulative += h->bucket[b];
		fs_put(t, "%s_bucket{le=\"%g\"} %llu\n", name, accel_metrics_bucket_le[b],
		       (unsigned long long)cumulative);
	}
	cumulative += h->bucket[ACCEL_METRICS_BUCKETS];
	fs_put(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cumulative);
	fs_put(t, "%s_sum %.9f\n", name, (double)h->sum_ns / 1e9);
	fs_put(t, "%s_count %llu\n", name, (unsigned long long)cumulative);
}

static void operation_counters(struct fs_text *t, const struct accel_metrics_values *v)
{
	counter(t, "accelfs_carves_total", "mkdirs that carved a job (instance made and recorded).", v->carves);
	by_reason(t, "accelfs_carve_failures_total", "mkdirs that failed, by reason (from the errno they answered).",
	          v->carve_failures);
	histogram(t, "accelfs_carve_duration_seconds", "How long a successful mkdir took, driver calls included.",
	          &v->carve_seconds);
	counter(t, "accelfs_reclaims_total", "rmdirs that gave a job's capacity back.", v->reclaims);
	by_reason(t, "accelfs_reclaim_failures_total", "rmdirs that failed, by reason (from the errno they answered).",
	          v->reclaim_failures);
	histogram(t, "accelfs_reclaim_duration_seconds", "How long a successful rmdir took, driver calls included.",
	          &v->reclaim_seconds);
	counter(t, "accelfs_orphans_reclaimed_total",
	        "Instances no job accounted for, destroyed after the orphan grace period.", v->orphans_reclaimed);
	by_reason(t, "accelfs_orphan_reclaim_failures_total",
	          "Attempts to reclaim an orphan that the driver refused, by reason (busy: something runs on it).",
	          v->orphan_failures);
	counter(t, "accelfs_device_refusals_total", "Times a device became refused.", v->refusals);
}

/* ---- the dies ------------------------------------------------------------------ */

/* The slot and every die from one status taken at one instant (fs_dies_status), as dies/slot says them. */
static void dies_metrics(struct fs_text *t, const struct fs_dies *dies, const struct accel_metrics_values *v)
{
	struct fs_dies_status *st;

	if (fs_dies_status(dies, &st)) /* no dies/ (NULL): -ENOENT */
		return;
	counter(t, "accelfs_dies_slot_swaps_total",
	        "Dies put into the BAR slot so far, by any process (dies/slot swaps).", st->v.slot.swaps);
	family(t, "accelfs_dies_slot_active_die", "gauge", "The die in the slot, -1 when it is empty.");
	fs_put(t, "accelfs_dies_slot_active_die %d\n", (int)st->v.slot.active_die);
	family(t, "accelfs_dies_slot_holders", "gauge", "Open vram files of this mount holding the slot.");
	fs_put(t, "accelfs_dies_slot_holders %u\n", st->holders);
	family(t, "accelfs_dies_slot_waiters", "gauge", "Opens of vram files of this mount waiting for the slot.");
	fs_put(t, "accelfs_dies_slot_waiters %u\n", st->v.n_waiters);
	histogram(t, "accelfs_dies_slot_wait_seconds", "How long an open of dies/<n>/vram waited for the slot.",
	          &v->slot_wait_seconds);
	family(t, "accelfs_dies_wait_limit_seconds", "gauge",
	       "How long an open queued for the slot or a return of a lent die waits before it is answered "
	       "ETIMEDOUT, under the kernel's bound on a FUSE answer (0: for ever).");
	fs_put(t, "accelfs_dies_wait_limit_seconds %u.%03u\n", st->wait_limit_ms / 1000, st->wait_limit_ms % 1000);
	counter(t, "accelfs_dies_waits_timed_out_total",
	        "Opens queued for the slot and returns of a lent die answered ETIMEDOUT at the wait limit.",
	        v->dies_waits_timed_out);
	family(t, "accelfs_die_enabled", "gauge", "1 unless the die is quarantined (dies/<n>/enabled).");
	for (unsigned i = 0; i < st->v.n_dies; i++)
		if (!st->v.dies[i].info_err)
			fs_put(t, "accelfs_die_enabled{die=\"%u\"} %d\n", i,
			       !!(st->v.dies[i].info.flags & BS_DIE_ENABLED));
	family(t, "accelfs_die_acquires_total", "counter", "Times the die was put into the slot.");
	for (unsigned i = 0; i < st->v.n_dies; i++)
		if (!st->v.dies[i].info_err)
			fs_put(t, "accelfs_die_acquires_total{die=\"%u\"} %llu\n", i,
			       (unsigned long long)st->v.dies[i].info.acquires);
	free(st);
}

/* Each principal's limits and use (core/policy/quota.h's rows): one series per limit it has. */
static void quota_limit(struct fs_text *t, const char *metric, const char *principal, const char *limit,
                        unsigned long v)
{
	fs_put(t, "%s{", metric);
	fs_put_label(t, "principal", principal, true);
	fs_put_label(t, "limit", limit, false);
	fs_put(t, "} %lu\n", v);
}

static void quota_gauges(struct fs_text *t, const struct accel_snapshot *s, const struct accel_quota_table *q)
{
	struct accel_quota_charge *c = NULL;
	struct accel_quota_row *rows = NULL;
	size_t n = 0, n_rows = 0;

	if (q && (accel_quota_charges(s, &c, &n) || accel_quota_rows(q, c, n, &rows, &n_rows))) {
		free(c);
		t->oom = true; /* finishing the text answers -ENOMEM */
		return;
	}
	for (int used = 0; used < 2; used++) {
		const char *metric = used ? "accelfs_quota_used" : "accelfs_quota_limit";
		family(t, metric, "gauge",
		       used ? "What the principal's jobs use of each limited resource (slices, jobs, a profile)."
		            : "The principal's limit (the quota file; a user under the default has the default's).");
		for (size_t i = 0; i < n_rows; i++) {
			const struct accel_quota_entry *e = rows[i].entry;
			const struct accel_quota_use *u = &rows[i].use;
			if (e->has_slices)
				quota_limit(t, metric, rows[i].principal, "slices", used ? u->slices : e->slices);
			for (size_t k = 0; k < e->n_profiles; k++)
				quota_limit(t, metric, rows[i].principal, e->profiles[k].profile,
				            used ? u->profiles[k] : e->profiles[k].n);
			if (e->has_jobs)
				quota_limit(t, metric, rows[i].principal, "jobs", used ? u->jobs : e->jobs);
		}
	}
	free(rows);
	free(c);
}

void fs_metrics_text(struct fs_text *t, const struct accel_snapshot *s, const struct fs_dies *dies,
                     const struct accel_quota_table *quota)
{
	struct accel_metrics_values v;

	accel_metrics_read(&v);
	family(t, "accelfs_build_info", "gauge", "The accelfs version serving this node (always 1).");
	fs_put(t, "accelfs_build_info{version=\"%s\"} 1\n", ACCELFS_VERSION);
	/* 0 only in a textfile its guardian marked when the daemon died (fs/textfile.h, fs/crashguard.h). */
	family(t, "accelfs_up", "gauge", FS_METRICS_UP_HELP);
	fs_put(t, "accelfs_up 1\n");
	/* The snapshot's, not the render's: the same snapshot renders the same text (fs/textfile.c skips it). */
	family(t, "accelfs_snapshot_timestamp_seconds", "gauge",
	       "When the snapshot shown was published (Unix time): the last change accelfs saw on the node.");
	fs_put(t, "accelfs_snapshot_timestamp_seconds %lld.%03lld\n", (long long)(s->published_ms / 1000),
	       (long long)(s->published_ms % 1000));
	family_libraries(t, s);
	device_gauges(t, s);
	admits_gauges(t, s);
	profile_gauge(t, s, "accelfs_profile_capacity",
	              "Legal placements of the profile on the device (its info's capacity).", 0);
	profile_gauge(t, s, "accelfs_profile_available",
	              "Instances of the profile that could be carved now (available).", 1);
	profile_gauge(t, s, "accelfs_profile_jobs", "Jobs of the profile on the device, in any state.", 2);
	job_gauges(t, s);
	fs_usage_info_metrics(t, s); /* the identity the live usage series and DCGM's join on */
	health_metrics(t, s);
	quota_gauges(t, s, quota);
	operation_counters(t, &v);
	dies_metrics(t, dies, &v);
}
