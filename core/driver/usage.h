/* SPDX-License-Identifier: MIT */
/*
 * What a job's GPU instance (or a card) uses, from the driver's own
 * counters: GPM (NVML's GPU Performance Monitoring, Hopper and later) for
 * SM activity, SM occupancy and DRAM bandwidth over a window between two
 * samples, the MIG device's memory, and the card's energy counter shared
 * out by SM count as an estimate.  Asked only while someone reads a
 * utilization file or scrapes /accel/metrics (core/engine/node_usage.c keeps one
 * sample pair per window per job, whatever the number of readers); never
 * under a card's lock.
 */
#ifndef ACCEL_USAGE_H
#define ACCEL_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "core/driver/mig_lib.h"
#include "core/model/model.h"

/* The window a read waits for when nothing was sampled lately (a scrape never waits). */
#define ACCEL_USAGE_WINDOW_MS 1000
/*
 * How long the sampler lets a scrape that woke it be answered before it asks
 * the driver (core/engine/node_usage.c): the scrape's text goes out alone.
 */
#define ACCEL_USAGE_SETTLE_MS 50
/* A reader's last sample older than this starts a fresh window (the long one still counts in the means). */
#define ACCEL_USAGE_STALE_MS 10000

struct accel_usage {
	/* GPM over the last window; gpm_why says why not when !gpm */
	bool gpm;
	int64_t window_ms;
	double sm_activity, sm_occupancy, dram_bandwidth; /* percent */
	/* Over every window since observed_since (unix seconds): time-weighted mean, highest window. */
	int64_t observed_since;
	int64_t observed_ms;
	double sm_activity_mean, sm_activity_peak;
	/* Memory of the MIG device (or the card) */
	bool memory;
	unsigned long long memory_used, memory_total, memory_used_peak; /* bytes */
	/* Energy: the card's counter since energy_since, times sms / card_sms (an estimate for a job) */
	bool energy;
	double energy_joules;
	int64_t energy_since; /* unix seconds */
	unsigned sms, card_sms;
	/*
	 * Why not, in words, last: a scrape copies the values above and not
	 * these (accel_node_usage_shown_jobs, ACCEL_USAGE_VALUES).
	 */
	char gpm_why[ACCEL_TEXT_MAX];
	char memory_why[ACCEL_TEXT_MAX];
	char energy_why[ACCEL_TEXT_MAX];
};

/* The bytes of struct accel_usage that hold its values, the sentences after them left out. */
#define ACCEL_USAGE_VALUES offsetof(struct accel_usage, gpm_why)

/* The SM counts of job j on device d (its profile's multiprocessors) and of the whole card (its largest profile's). */
void accel_usage_sms(const struct accel_device *d, const struct accel_job *j, unsigned *sms, unsigned *card_sms);

/* What one reading asks the driver about: a card, or one GPU instance of it (mig). */
struct accel_usage_target {
	const struct mig_lib *lib;
	mig_device_t card;
	const char *card_name; /* for messages */
	bool mig;
	unsigned gi;
	const char *uuid; /* the MIG device's (a job) or the card's */
	unsigned sms, card_sms;
};

/*
 * One target's sampling state across readings (a cache entry's,
 * core/engine/node_usage.c): its two sample buffers, the previous sample, the
 * energy baseline, the running mean and peaks.  Zeroed to start; its
 * samples go back to lib with accel_usage_probe_free.
 */
struct accel_usage_probe {
	const struct mig_lib *lib;
	mig_gpm_sample_t buf[2];
	int prev;        /* buf[prev] holds the previous sample; -1: none */
	int64_t prev_ms; /* CLOCK_MONOTONIC */
	bool support_asked, supported;
	char support_why[ACCEL_TEXT_MAX];
	unsigned mig_index; /* where the MIG device was last found; UINT_MAX: not known */
	bool have_energy0;
	unsigned long long energy0_mj;
	double sm_weighted; /* sum of SM activity times window ms */
	struct accel_usage last;
	int64_t last_ms; /* when last was read (CLOCK_MONOTONIC); 0: never */
};

void accel_usage_probe_init(struct accel_usage_probe *p);
void accel_usage_probe_free(struct accel_usage_probe *p);

/*
 * One reading at now_ms (CLOCK_MONOTONIC) and now_s (unix): a GPM sample
 * (and the window since the previous one, added to the means and peaks),
 * the memory and the energy, into p->last.  Returns true when a window was
 * measured (p->last.gpm).
 */
bool accel_usage_step(struct accel_usage_probe *p, const struct accel_usage_target *t, int64_t now_ms, int64_t now_s);

/* p->last says it cannot say: the card is away, or the job is gone (why). */
void accel_usage_unknown(struct accel_usage_probe *p, const char *why);

#endif
