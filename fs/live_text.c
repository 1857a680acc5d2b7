/* SPDX-License-Identifier: MIT */
#include "fs/live_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/engine/node.h"
#include "core/driver/processes.h"
#include "core/driver/usage.h"
#include "fs/dies.h"
#include "fs/holder_text.h"
#include "fs/text.h"
#include "fs/shown.h"

/*
 * One line of a job's processes file: "pid=P used_memory_bytes=N|unknown
 * command=C|-|hidden"; hidden where /proc would not show the process to the
 * gate's reader (core/driver/proc_view.h).
 */
static void process_line(struct fs_text *t, const struct accel_process *p, const struct accel_proc_gate *gate)
{
	const char *command = p->command[0] ? p->command : "-";
	char used[24];

	if (p->used_bytes == ACCEL_USED_UNKNOWN)
		snprintf(used, sizeof(used), "unknown");
	else
		snprintf(used, sizeof(used), "%llu", p->used_bytes);
	/* A pid /proc does not show here says "-" to everyone; one it hides from this reader, "hidden". */
	if (p->command[0] && !accel_proc_gate_lets(gate, &p->owner))
		command = "hidden";
	fs_put(t, "pid=%u used_memory_bytes=%s command=%s\n", p->pid, used, command);
}

int fs_job_processes_text(struct fs_text *t, const struct fs_view *v)
{
	struct accel_proc_gate g;
	struct accel_process *p;
	char why[ACCEL_TEXT_MAX];
	size_t np;
	int ret;

	if (v->n->job->state != ACCEL_JOB_READY)
		return -ENODEV;
	ret = accel_node_job_processes(v->live, v->n->dev->name, v->n->job->name, v->n->job->uuid, &p, &np, why,
	                               sizeof(why));
	/* The job is gone (removed since the caller's snapshot): nothing to say, and no "unknown" to say it. */
	if (ret == -ENOENT)
		return ret;
	if (ret) {
		fs_put(t, "unknown: %s\n", ret == -ENOMEM ? "out of memory" : why);
		return 0;
	}
	fs_text_proc_gate(t, &g);
	for (size_t i = 0; i < np; i++)
		process_line(t, &p[i], &g);
	free(p);
	return 0;
}

static void line_pct(struct fs_text *t, const char *key, bool known, double v, const char *why)
{
	if (known)
		fs_put(t, "%s: %.1f\n", key, v);
	else
		fs_put(t, "%s: unknown: %s\n", key, why);
}

/*
 * The utilization file's text (one "key: value" per line, `unknown: why`
 * where the driver cannot say), job true for a job's (its energy labelled
 * an estimate), false for a card's.
 */
static void usage_lines(struct fs_text *t, const struct accel_usage *u, bool job)
{
	const char *gwhy = u->gpm_why;

	if (u->gpm)
		fs_put(t, "window_ms: %lld\n", (long long)u->window_ms);
	else
		fs_put(t, "window_ms: unknown: %s\n", gwhy);
	line_pct(t, "sm_activity_percent", u->gpm, u->sm_activity, gwhy);
	line_pct(t, "sm_occupancy_percent", u->gpm, u->sm_occupancy, gwhy);
	line_pct(t, "dram_bandwidth_percent", u->gpm, u->dram_bandwidth, gwhy);
	if (u->observed_ms > 0) {
		fs_put(t, "observed_since: %lld\n", (long long)u->observed_since);
		fs_put(t, "observed_ms: %lld\n", (long long)u->observed_ms);
		fs_put(t, "sm_activity_mean_percent: %.1f\n", u->sm_activity_mean);
		fs_put(t, "sm_activity_peak_percent: %.1f\n", u->sm_activity_peak);
	} else {
		fs_put(t, "sm_activity_mean_percent: unknown: %s\n", u->gpm_why[0] ? gwhy : "no window measured yet");
		fs_put(t, "sm_activity_peak_percent: unknown: %s\n", u->gpm_why[0] ? gwhy : "no window measured yet");
	}
	if (u->memory) {
		fs_put(t, "memory_used_bytes: %llu\n", u->memory_used);
		fs_put(t, "memory_total_bytes: %llu\n", u->memory_total);
		fs_put(t, "memory_used_peak_bytes: %llu\n", u->memory_used_peak);
	} else {
		fs_put(t, "memory_used_bytes: unknown: %s\n", u->memory_why);
		fs_put(t, "memory_total_bytes: unknown: %s\n", u->memory_why);
	}
	if (!u->energy) {
		fs_put(t, "%s: unknown: %s\n", job ? "energy_estimate_joules" : "energy_joules", u->energy_why);
	} else if (job) {
		/* An estimate, and said to be one: the card's energy shared by SM count (docs/operations.md). */
		fs_put(t, "energy_estimate_joules: %.3f\n", u->energy_joules);
		fs_put(t, "energy_estimate_since: %lld\n", (long long)u->energy_since);
		fs_put(t, "energy_estimate_share: %u/%u SMs\n", u->sms, u->card_sms);
	} else {
		fs_put(t, "energy_joules: %.3f\n", u->energy_joules);
		fs_put(t, "energy_since: %lld\n", (long long)u->energy_since);
	}
}

int fs_usage_text(struct fs_text *t, const struct fs_view *v)
{
	struct accel_usage u;
	int ret;

	if (v->n->job && v->n->job->state != ACCEL_JOB_READY)
		return -ENODEV;
	if (!v->live)
		return 0;
	/* Sampled now, or answered from a reading under a window old (core/engine/node_usage.c); never a card's lock. */
	ret = accel_node_usage(v->live, v->s, v->n->dev, v->n->job, true, &u);
	if (!ret)
		usage_lines(t, &u, v->n->job != NULL);
	return ret;
}

uint64_t fs_usage_size(const struct fs_node *n)
{
	(void)n;
	return 0; /* as /proc's live files: a stat (ls -l) never samples the driver, a read does */
}

int fs_dies_last_error_text(struct fs_text *t, const struct fs_view *v)
{
	char buf[ACCEL_TEXT_MAX + 64];

	fs_shown_last_error(v->shown, FS_DIES_LAST_ERROR_KEY, buf, sizeof(buf));
	if (buf[0])
		fs_put(t, "%s\n", buf);
	return 0;
}
