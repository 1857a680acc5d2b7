/* SPDX-License-Identifier: MIT */
/*
 * The accounting record a job's end leaves in its AdminComment
 * (slurm/usage_record.h, docs/slurm.md "Accounting"): its text, read from
 * utilization files written here by hand in docs/tree.md's format, and how
 * one node's record joins what the comment already says (other nodes'
 * entries, a requeue's sentence).  The slurm suite runs the same through a
 * real slurmctld, on one node.
 */
#include "usage_record.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

static char dir[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void made(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/usage-record-XXXXXX");
	assert_non_null(mkdtemp(dir));
	made("mig");
	made("mig/3g.71gb");
	made("mig/4g.48gb");
	made("mig/3g.71gb/slurm-42-0");
	made("mig/4g.48gb/slurm-42-1");
	made("mig/3g.71gb/slurm-43-0"); /* another job's: not in 42's record */
	put("mig/3g.71gb/slurm-42-0/utilization", "window_ms: 1000\n"
	                                          "sm_activity_percent: 80.0\n"
	                                          "sm_activity_mean_percent: 23.6\n"
	                                          "sm_activity_peak_percent: 80.0\n"
	                                          "memory_used_bytes: 1073741824\n"
	                                          "memory_used_peak_bytes: 3221225472\n"
	                                          "energy_estimate_joules: 600.000\n"
	                                          "energy_estimate_share: 60/132 SMs\n");
	/* T-Head's HGML: no GPM, no energy counter; memory still known. */
	put("mig/4g.48gb/slurm-42-1/utilization",
	    "sm_activity_percent: unknown: libhgml.so has no hgmlGpmSampleAlloc\n"
	    "sm_activity_mean_percent: unknown: libhgml.so has no hgmlGpmSampleAlloc\n"
	    "sm_activity_peak_percent: unknown: libhgml.so has no hgmlGpmSampleAlloc\n"
	    "memory_used_peak_bytes: 2048\n"
	    "energy_estimate_joules: unknown: libhgml.so has no hgmlDeviceGetTotalEnergyConsumption\n");
	put("mig/3g.71gb/slurm-43-0/utilization", "sm_activity_mean_percent: 99.0\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void the_record_names_each_partition_on_its_node_and_says_unknown(void **state)
{
	char out[1024];

	(void)state;
	assert_int_equal(am_usage_record(dir, 42, "n1", out, sizeof(out)), 2);
	assert_string_equal(out, "accelfs usage: n1/slurm-42-0 sm_mean=23.6% sm_peak=80.0% mem_peak=3221225472 "
	                         "energy_estimate=600.000J; n1/slurm-42-1 sm_mean=unknown sm_peak=unknown "
	                         "mem_peak=2048 energy_estimate=unknown");
	assert_int_equal(am_usage_record(dir, 44, "n1", out, sizeof(out)), 0); /* no partition: nothing to set */
	assert_string_equal(out, "");
}

static void a_record_too_long_keeps_whole_entries(void **state)
{
	char out[120];

	(void)state;
	assert_int_equal(am_usage_record(dir, 42, "n1", out, sizeof(out)), 1);
	assert_string_equal(out, "accelfs usage: n1/slurm-42-0 sm_mean=23.6% sm_peak=80.0% mem_peak=3221225472 "
	                         "energy_estimate=600.000J");
}

static void merged(const char *old, const char *node, const char *mine, const char *want)
{
	char out[1024];

	assert_int_equal(am_usage_merge(old, node, mine, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void a_node_replaces_its_own_entries_and_keeps_the_rest(void **state)
{
	(void)state;
	/* The first: the comment is the record. */
	merged(NULL, "n1", "accelfs usage: n1/slurm-42-0 sm_mean=1.0%", "accelfs usage: n1/slurm-42-0 sm_mean=1.0%");
	merged("", "n1", "accelfs usage: n1/slurm-42-0 a", "accelfs usage: n1/slurm-42-0 a");
	/* A later step's end on the same node: its entries replaced, not added. */
	merged("accelfs usage: n1/slurm-42-0 a; n1/slurm-42-1 b", "n1", "accelfs usage: n1/slurm-42-0 c",
	       "accelfs usage: n1/slurm-42-0 c");
	/* Another node's entries stay (slurm-42-0 is on both: its node tells them apart); n10 is not n1. */
	merged("accelfs usage: n2/slurm-42-0 a; n1/slurm-42-0 b; n10/slurm-42-0 c", "n1",
	       "accelfs usage: n1/slurm-42-0 d; n1/slurm-42-1 e",
	       "accelfs usage: n2/slurm-42-0 a; n10/slurm-42-0 c; n1/slurm-42-0 d; n1/slurm-42-1 e");
	/* What came before the record (a requeue's sentence, a site's note) is kept as it was. */
	merged("accelfs: mkdir /accel/mig/8g.96gb/slurm-42-0: No space left on device: no device has a free placement",
	       "n1", "accelfs usage: n1/slurm-42-0 a",
	       "accelfs: mkdir /accel/mig/8g.96gb/slurm-42-0: No space left on device: no device has a free "
	       "placement; accelfs usage: n1/slurm-42-0 a");
	merged("site note; accelfs usage: n2/slurm-42-0 a", "n1", "accelfs usage: n1/slurm-42-0 b",
	       "site note; accelfs usage: n2/slurm-42-0 a; n1/slurm-42-0 b");
}

static void a_comment_too_long_to_keep_gives_way_to_the_record(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(am_usage_merge("a site's note much longer than what fits in the comment here, by far", "n1",
	                                "accelfs usage: n1/slurm-42-0 a", out, sizeof(out)),
	                 -1);
	assert_string_equal(out, "accelfs usage: n1/slurm-42-0 a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_record_names_each_partition_on_its_node_and_says_unknown),
		cmocka_unit_test(a_record_too_long_keeps_whole_entries),
		cmocka_unit_test(a_node_replaces_its_own_entries_and_keeps_the_rest),
		cmocka_unit_test(a_comment_too_long_to_keep_gives_way_to_the_record),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
