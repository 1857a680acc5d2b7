/* SPDX-License-Identifier: MIT */
#include "fs/usage_text.h"

#include "fs/job_lines.h"
#include "fs/render.h"
#include "fs/shown.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/node.h"
#include "core/driver/usage.h"

static void job_labels(struct fs_text *t, const struct accel_device *d, const struct accel_job *j)
{
	char num[16];

	fs_put_label(t, "job", j->name, true);
	fs_put_label(t, "device", d->name, false);
	fs_put_label(t, "profile", j->profile, false);
	snprintf(num, sizeof(num), "%u", j->gi);
	fs_put_label(t, "gi", num, false);
	fs_put_label(t, "GPU_I_ID", num, false); /* DCGM exporter's name for it */
	snprintf(num, sizeof(num), "%u", j->ci);
	fs_put_label(t, "ci", num, false);
	fs_put_label(t, "uuid", j->uuid, false);
	fs_put_label(t, "UUID", d->uuid, false); /* DCGM exporter's: the parent card's UUID */
	snprintf(num, sizeof(num), "%u", (unsigned)j->uid);
	fs_put_label(t, "owner", num, false);
}

/*
 * Six families: what a dashboard joins and plots.  The window, the means and
 * peaks and the memory's total are in the file and node.json; a scrape of a
 * hundred jobs stays small (docs/performance.md, "Utilization").
 */
enum { G_INFO, G_SM, G_OCC, G_DRAM, G_MEM, G_ENERGY, G_N, G_WINDOW, G_SM_MEAN, G_SM_PEAK, G_MEM_TOTAL, G_MEM_PEAK };

static const struct {
	const char *name, *help;
} gauges[] = {
	[G_INFO] = { "accelfs_job_info", "One per job, with what identifies it and its GPU instance (always 1)." },
	[G_WINDOW] = { "accelfs_job_usage_window_seconds", "The window the job's GPM rates were measured over." },
	[G_SM] = { "accelfs_job_sm_active_ratio", "SM activity of the job's GPU instance over the window (GPM)." },
	[G_OCC] = { "accelfs_job_sm_occupancy_ratio", "SM occupancy of the job's GPU instance over the window (GPM)." },
	[G_DRAM] = { "accelfs_job_dram_active_ratio", "DRAM bandwidth used over the window vs the maximum (GPM)." },
	[G_SM_MEAN] = { "accelfs_job_sm_active_mean_ratio", "Time-weighted mean SM activity since first observed." },
	[G_SM_PEAK] = { "accelfs_job_sm_active_peak_ratio", "Highest window SM activity since first observed." },
	[G_MEM] = { "accelfs_job_memory_used_bytes", "Memory the job's MIG device uses." },
	[G_MEM_TOTAL] = { "accelfs_job_memory_total_bytes", "Memory of the job's MIG device." },
	[G_MEM_PEAK] = { "accelfs_job_memory_used_peak_bytes", "Most memory seen used since first observed." },
	[G_ENERGY] = { "accelfs_job_energy_estimate_joules",
	               "An ESTIMATE: the card's energy since first observed times the job's share of its SMs." },
};

/* The value of gauge g, or false where the driver cannot say (the series is then left out). */
static bool value(int g, const struct accel_usage *u, double *v)
{
	switch (g) {
	case G_INFO:
		*v = 1;
		return true;
	case G_WINDOW:
		*v = (double)u->window_ms / 1000.0;
		return u->gpm;
	case G_SM:
		*v = u->sm_activity / 100.0;
		return u->gpm;
	case G_OCC:
		*v = u->sm_occupancy / 100.0;
		return u->gpm;
	case G_DRAM:
		*v = u->dram_bandwidth / 100.0;
		return u->gpm;
	case G_SM_MEAN:
		*v = u->sm_activity_mean / 100.0;
		return u->observed_ms > 0;
	case G_SM_PEAK:
		*v = u->sm_activity_peak / 100.0;
		return u->observed_ms > 0;
	case G_MEM:
		*v = (double)u->memory_used;
		return u->memory;
	case G_MEM_TOTAL:
		*v = (double)u->memory_total;
		return u->memory;
	case G_MEM_PEAK:
		*v = (double)u->memory_used_peak;
		return u->memory;
	default:
		*v = u->energy_joules;
		return u->energy;
	}
}

/* d's jobs' info lines: a pure function of d's view (fs/job_lines.h keeps them). */
static void info_lines(struct fs_text *t, const struct accel_device *d)
{
	for (size_t j = 0; j < d->n_jobs; j++) {
		fs_put_str(t, gauges[G_INFO].name);
		fs_put_mem(t, "{", 1);
		job_labels(t, d, &d->jobs[j]);
		fs_put_mem(t, "} 1\n", 4);
	}
}

void fs_usage_info_metrics(struct fs_text *t, const struct accel_snapshot *s)
{
	fs_put(t, "# HELP %s %s\n# TYPE %s gauge\n", gauges[G_INFO].name, gauges[G_INFO].help, gauges[G_INFO].name);
	for (size_t i = 0; i < s->n_devices; i++)
		fs_job_lines(t, s->devices[i], FS_JOB_LINES_INFO, info_lines);
}

/*
 * A value series' labels: the job's key alone, `{job="...",device="..."}`;
 * what identifies it is accelfs_job_info's, joined on the key.  Written
 * once per job and copied into each family.
 */
static int key_labels(struct fs_text *t, const struct accel_snapshot *s, size_t n, size_t **at)
{
	size_t k = 0;

	*at = malloc((n + 1) * sizeof(**at));
	if (!*at)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_devices; i++)
		for (size_t j = 0; j < s->devices[i]->n_jobs; j++) {
			(*at)[k++] = t->len;
			fs_put_mem(t, "{", 1);
			fs_put_label(t, "job", s->devices[i]->jobs[j].name, true);
			fs_put_label(t, "device", s->devices[i]->name, false);
			fs_put_mem(t, "} ", 2);
		}
	(*at)[k] = t->len;
	return t->oom ? -ENOMEM : 0;
}

void fs_usage_metrics(struct fs_text *t, const struct fs_shown *shown, const struct accel_snapshot *s)
{
	struct fs_text keys = { 0 };
	size_t n = 0, *at = NULL;
	struct accel_usage *us;
	bool *known;

	if (!shown) /* rendered without a node (tests/service's render check): nothing to ask */
		return;
	for (size_t i = 0; i < s->n_devices; i++)
		n += s->devices[i]->n_jobs;
	us = malloc((n ? n : 1) * sizeof(*us)); /* what is known is filled in */
	known = malloc((n ? n : 1) * sizeof(*known));
	/*
	 * Each ready job's last reading, as shown (metrics is a snapshot row: a scrape asks no driver, and
	 * wakes the sampler once for all the jobs it shows), then every family written from the readings.
	 */
	if (!us || !known || fs_shown_usage_jobs(shown, s, fs_render_is_at_read(), us, known) ||
	    key_labels(&keys, s, n, &at)) {
		t->oom = true;
		goto out;
	}
	for (int g = G_INFO + 1; g < G_N; g++) {
		fs_put(t, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g].name, gauges[g].help, gauges[g].name);
		for (size_t k = 0; k < n; k++) {
			char num[32];
			double v;

			if (!known[k] || !value(g, &us[k], &v))
				continue;
			fs_put_str(t, gauges[g].name);
			fs_put_mem(t, keys.buf + at[k], at[k + 1] - at[k]);
			snprintf(num, sizeof(num), v == (double)(unsigned long long)v ? "%.0f\n" : "%.6g\n", v);
			fs_put_str(t, num);
		}
	}
out:
	fs_text_free(&keys);
	free(at);
	free(us);
	free(known);
}

static json_t *num_or_null(bool known, double v)
{
	return known ? json_real(v) : json_null();
}

json_t *fs_usage_json(const struct fs_shown *shown, const struct accel_snapshot *s, const struct accel_device *d,
                      const struct accel_job *j)
{
	struct accel_usage u;

	if ((j && j->state != ACCEL_JOB_READY) || fs_shown_usage(shown, s, d, j, fs_render_is_at_read(), &u))
		return json_null();
	/* No window_ms: it moves with every reading, and node.json's text holds still while the node does. */
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "sm_activity_percent",
	                 num_or_null(u.gpm, u.sm_activity), "sm_occupancy_percent", num_or_null(u.gpm, u.sm_occupancy),
	                 "dram_bandwidth_percent", num_or_null(u.gpm, u.dram_bandwidth), "sm_activity_mean_percent",
	                 num_or_null(u.observed_ms > 0, u.sm_activity_mean), "sm_activity_peak_percent",
	                 num_or_null(u.observed_ms > 0, u.sm_activity_peak), "memory_used_bytes",
	                 u.memory ? json_integer((json_int_t)u.memory_used) : json_null(), "memory_total_bytes",
	                 u.memory ? json_integer((json_int_t)u.memory_total) : json_null(), "memory_used_peak_bytes",
	                 u.memory ? json_integer((json_int_t)u.memory_used_peak) : json_null(),
	                 j ? "energy_estimate_joules" : "energy_joules", num_or_null(u.energy, u.energy_joules),
	                 "gpm_unknown", u.gpm ? json_null() : json_string(u.gpm_why), "energy_unknown",
	                 u.energy ? json_null() : json_string(u.energy_why));
}
