/* SPDX-License-Identifier: MIT */
/*
 * The service's renderings of a snapshot built by hand, with every case the
 * simulated node does not make on its own: a refused card, a lost and a
 * removing job, a foreign instance, overlapping instances, a label that
 * needs escaping, counters and histograms away from zero.  /accel/metrics
 * goes through promtool (PROMTOOL), node.json back through jansson.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/driver/catalog.h"
#include "core/driver/family.h"
#include "core/engine/metrics.h"
#include "fs/metrics_text.h"
#include "fs/mig_map.h"
#include "fs/node_json.h"
#include "fs/render.h"
#include "fs/tree.h"
#include "core/model/tree_names.h"

static struct accel_span four[] = { { 0, 4 }, { 4, 4 } };
static struct accel_span two[] = { { 0, 2 }, { 2, 2 }, { 4, 2 }, { 6, 2 } };

static struct accel_profile profiles[] = {
	{ .id = 5,
	  .name = "4g.48gb",
	  .vendor_name = "4g48gb",
	  .driver_name = "MIG 4g48gb",
	  .span = 4,
	  .placements = four,
	  .n_placements = 2,
	  .available = 0,
	  .memory_mib = 49152 },
	{ .id = 14,
	  .name = "2g.24gb",
	  .vendor_name = "2g24gb",
	  .driver_name = "MIG 2g24gb",
	  .span = 2,
	  .placements = two,
	  .n_placements = 4,
	  .available = 1,
	  .memory_mib = 24576 },
};

static struct accel_devnode nodes[] = { { .path = "/dev/alixpu", .major = 505, .minor = 0 } };

static struct accel_job jobs[] = {
	{ .name = "job1",
	  .profile = "4g.48gb",
	  .state = ACCEL_JOB_READY,
	  .profile_id = 5,
	  .gi = 0,
	  .placement = { 0, 4 },
	  .uuid = "MIG-1",
	  .nodes = nodes,
	  .n_nodes = 1,
	  .created = 0 },
	{ .name = "gone",
	  .profile = "2g.24gb",
	  .state = ACCEL_JOB_LOST,
	  .state_reason = "its instance is gone",
	  .profile_id = 14,
	  .gi = 7,
	  .placement = { 6, 2 },
	  .uuid = "MIG-2" },
	{ .name = "leaving",
	  .profile = "2g.24gb",
	  .state = ACCEL_JOB_REMOVING,
	  .state_reason = "busy",
	  .profile_id = 14,
	  .gi = 2,
	  .placement = { 6, 2 },
	  .uuid = "MIG-3" },
};

static struct accel_instance instances[] = {
	/* Out of placement order on purpose: the map sorts them. */
	{ .gi = 1,
	  .profile_id = 14,
	  .placement = { 4, 2 },
	  .n_ci = 1,
	  .profile_name = "2g.24gb",
	  .note = "foreign: reclaimed in 8 s if still unused",
	  .foreign = true },
	{ .gi = 0,
	  .profile_id = 5,
	  .placement = { 0, 4 },
	  .n_ci = 1,
	  .uuid = "MIG-1",
	  .profile_name = "4g.48gb",
	  .job = "job1" },
	{ .gi = 2,
	  .profile_id = 14,
	  .placement = { 6, 2 },
	  .n_ci = 0,
	  .uuid = "MIG-3",
	  .profile_name = "2g.24gb",
	  .job = "leaving" },
};

static struct accel_device ppu = {
	.family = &accel_family_thead,
	.name = "ppu3",
	.ordinal = 3,
	.minor = 4,
	.uuid = "GPU-3",
	.product = "PPU \"ZW\\810\"", /* a quote and a backslash: label escaping */
	.bus_id = "0000:28:00.0",
	.mig_enabled = true,
	.mig_pending_enabled = true,
	.profiles = profiles,
	.n_profiles = 2,
	.jobs = jobs,
	.n_jobs = 3,
	.instances = instances,
	.n_instances = 3,
	.card_nodes = nodes,
	.n_card_nodes = 1,
};

static struct accel_device gpu = {
	.family = &accel_family_nvidia,
	.name = "gpu0",
	.ordinal = 0,
	.minor = 0,
	.uuid = "GPU-0",
	.product = "NVIDIA H200",
	.bus_id = "0000:99:00.0",
	.mig_enabled = false,
	.refused = true,
	.refusal = "driver error: Unknown Error",
};

static struct accel_device *devices[] = { &ppu, &gpu };
static struct accel_snapshot snap = { .refs = 1,
	                              .generation = 42,
	                              .published_ms = 1764921600123LL,
	                              .devices = devices,
	                              .n_devices = 2 };

/*
 * The text of a renderer of the whole node, with no dies/ and no quotas (NULL).
 * Not inlined: inlined at -O3, GCC 12 takes a pointer into the returned text
 * for one to this function's local (a false -Wdangling-pointer, an error in
 * a release build).
 */
static __attribute__((noinline)) char *finish(struct fs_text *t)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(fs_text_finish(t, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

static char *render_metrics(void)
{
	struct fs_text t = { 0 };

	fs_metrics_text(&t, &snap, NULL, NULL);
	return finish(&t);
}

static char *render_node_json(void)
{
	struct fs_text t = { 0 };

	assert_int_equal(fs_node_json_text(&t, &snap, NULL, NULL, NULL), 0);
	return finish(&t);
}

static void assert_line(const char *text, const char *line)
{
	char *want = NULL;

	assert_true(asprintf(&want, "\n%s\n", line) > 0);
	if (!strstr(text, want))
		fail_msg("no line \"%s\" in:\n%s", line, text);
	free(want);
}

static void promtool_accepts(const char *text)
{
	const char *promtool = getenv("PROMTOOL");
	char cmd[512];
	FILE *p;

	assert_non_null(promtool);
	snprintf(cmd, sizeof(cmd), "%s check metrics 2>&1", promtool);
	p = popen(cmd, "w");
	assert_non_null(p);
	fputs(text, p);
	assert_int_equal(pclose(p), 0);
}

static void test_metrics_gauges(void **state)
{
	char *text;

	(void)state;
	accel_metrics_reset();
	text = render_metrics();
	assert_line(text, "accelfs_device_info{device=\"ppu3\",vendor=\"T-Head\",product=\"PPU \\\"ZW\\\\810\\\"\","
	                  "uuid=\"GPU-3\",bus_id=\"0000:28:00.0\"} 1");
	assert_line(text, "accelfs_device_refused{device=\"gpu0\"} 1");
	assert_line(text, "accelfs_devices_refused 1");
	/* When the snapshot shown was published: how old the state is, in the exposition's unit. */
	assert_line(text, "accelfs_snapshot_timestamp_seconds 1764921600.123");
	assert_line(text, "accelfs_device_mig_enabled{device=\"gpu0\"} 0");
	assert_line(text, "accelfs_profile_capacity{device=\"ppu3\",profile=\"2g.24gb\"} 4");
	assert_line(text, "accelfs_profile_available{device=\"ppu3\",profile=\"2g.24gb\"} 1");
	assert_line(text, "accelfs_profile_jobs{device=\"ppu3\",profile=\"2g.24gb\"} 2");
	assert_line(text, "accelfs_jobs{device=\"ppu3\",state=\"lost\"} 1");
	assert_line(text, "accelfs_jobs{device=\"ppu3\",state=\"removing\"} 1");
	assert_line(text, "accelfs_jobs{device=\"gpu0\",state=\"ready\"} 0");
	assert_line(text, "accelfs_instances{device=\"ppu3\",owner=\"foreign\"} 1");
	assert_line(text, "accelfs_instances{device=\"ppu3\",owner=\"orphan\"} 0");
	assert_line(text, "accelfs_instances{device=\"ppu3\",owner=\"job\"} 2");
	/* A device with the mode off has no profile directories, and no profile series. */
	assert_null(strstr(text, "accelfs_profile_capacity{device=\"gpu0\""));
	/* Every counter from the start, at zero, every reason listed. */
	assert_line(text, "accelfs_carves_total 0");
	assert_line(text, "accelfs_carve_failures_total{reason=\"other\"} 0");
	assert_line(text, "accelfs_reclaim_duration_seconds_count 0");
	promtool_accepts(text);
	free(text);
}

static void test_metrics_counters(void **state)
{
	uint64_t now = accel_metrics_now();
	char *text;

	(void)state;
	accel_metrics_reset();
	accel_metrics_carve(0, now - 30000000);  /* 30 ms */
	accel_metrics_carve(0, now - 700000000); /* 0.7 s */
	accel_metrics_carve(-ENOSPC, now);
	accel_metrics_reclaim(-EIO, now);
	accel_metrics_orphan(0);
	accel_metrics_card_refused();
	text = render_metrics();
	assert_line(text, "accelfs_carves_total 2");
	assert_line(text, "accelfs_carve_failures_total{reason=\"no_space\"} 1");
	assert_line(text, "accelfs_reclaim_failures_total{reason=\"driver_error\"} 1");
	assert_line(text, "accelfs_orphans_reclaimed_total 1");
	assert_line(text, "accelfs_device_refusals_total 1");
	/* Cumulative buckets: nothing up to 25 ms, one by 50 ms, both by 1 s, and +Inf equals the count. */
	assert_line(text, "accelfs_carve_duration_seconds_bucket{le=\"0.025\"} 0");
	assert_line(text, "accelfs_carve_duration_seconds_bucket{le=\"0.05\"} 1");
	assert_line(text, "accelfs_carve_duration_seconds_bucket{le=\"0.5\"} 1");
	assert_line(text, "accelfs_carve_duration_seconds_bucket{le=\"1\"} 2");
	assert_line(text, "accelfs_carve_duration_seconds_bucket{le=\"+Inf\"} 2");
	assert_line(text, "accelfs_carve_duration_seconds_count 2");
	/* The sum is 0.73 s plus the time the two calls themselves took (long under valgrind). */
	{
		uint64_t spent = accel_metrics_now() - now;
		const char *at = strstr(text, "\naccelfs_carve_duration_seconds_sum ");
		double sum;

		assert_non_null(at);
		assert_int_equal(sscanf(at, "\naccelfs_carve_duration_seconds_sum %lf", &sum), 1);
		assert_true(sum >= 0.73 - 1e-9);
		assert_true(sum <= 0.73 + 2.0 * (double)spent / 1e9 + 1e-9);
	}
	promtool_accepts(text);
	free(text);
}

/* The same node renders the same text: what lets the textfile writer skip unchanged text. */
static void test_metrics_stable(void **state)
{
	char *a, *b;

	(void)state;
	a = render_metrics();
	b = render_metrics();
	assert_string_equal(a, b);
	free(a);
	free(b);
}

static char *render_map(const struct accel_device *d)
{
	struct fs_text t = { 0 };

	assert_int_equal(fs_mig_map_text(&t, d), 0);
	return finish(&t);
}

static void test_map(void **state)
{
	char *text = render_map(&ppu);

	(void)state;
	assert_string_equal(text,
	                    "slice 0 1 2 3 4 5 6 7\n"
	                    "      A A A A B B C C\n"
	                    "A job=job1 profile=4g.48gb gi=0 placement=0:4 state=ready\n"
	                    "B job=- profile=2g.24gb gi=1 placement=4:2 foreign note=\"foreign: reclaimed in 8 s if "
	                    "still unused\"\n"
	                    "C job=leaving profile=2g.24gb gi=2 placement=6:2 state=removing\n"
	                    ". free=- slices=0/8\n"
	                    "- job=gone profile=2g.24gb state=lost holds no slices\n");
	free(text);
}

static void test_map_free_runs_and_overlap(void **state)
{
	struct accel_instance two_on_one[] = {
		{ .gi = 0, .placement = { 2, 2 }, .profile_name = "2g.24gb", .job = "a" },
		{ .gi = 1, .placement = { 2, 2 }, .profile_name = "2g.24gb" },
	};
	struct accel_device d = ppu;
	char *text;

	(void)state;
	d.instances = two_on_one;
	d.n_instances = 2;
	d.n_jobs = 0;
	text = render_map(&d);
	assert_non_null(strstr(text, "\n      . . * * . . . .\n"));
	assert_non_null(strstr(text, "\n. free=0:2,4:4 slices=6/8\n"));
	free(text);
}

static void test_map_refused_and_disabled(void **state)
{
	char *text = render_map(&gpu);

	(void)state;
	assert_string_equal(text, "refused: driver error: Unknown Error (the last known state follows)\n"
	                          "MIG mode is disabled: no slices to draw\n");
	free(text);
}

static void test_node_json(void **state)
{
	json_error_t e;
	json_t *root, *d, *j;
	char *text;

	(void)state;
	text = render_node_json();
	assert_int_equal(text[strlen(text) - 1], '\n');
	root = json_loads(text, 0, &e);
	if (!root)
		fail_msg("node.json does not parse: %s at line %d", e.text, e.line);
	assert_int_equal(json_integer_value(json_object_get(root, "format")), FS_NODE_JSON_FORMAT);
	assert_int_equal(json_integer_value(json_object_get(root, "generation")), 42);
	assert_string_equal(json_string_value(json_object_get(root, "published")), "2025-12-05T08:00:00.123Z");
	assert_true(json_is_null(json_object_get(root, "dies"))); /* no dies/ in this process */
	d = json_array_get(json_object_get(root, "devices"), 0);
	assert_string_equal(json_string_value(json_object_get(d, "product")), "PPU \"ZW\\810\"");
	assert_int_equal(json_integer_value(json_object_get(d, "ordinal")), 3);
	assert_null(json_object_get(d, "index"));
	assert_true(json_is_null(json_object_get(d, "refusal")));
	assert_int_equal(json_array_size(json_object_get(d, "profiles")), 2);
	j = json_array_get(json_object_get(d, "jobs"), 1);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "lost");
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "its instance is gone");
	assert_true(json_is_null(json_object_get(j, "devices"))); /* fails closed, as devices does */
	j = json_array_get(json_object_get(d, "jobs"), 0);
	assert_string_equal(json_string_value(json_object_get(j, "created")), "1970-01-01T00:00:00Z");
	assert_int_equal(json_array_size(json_object_get(j, "devices")), 1);
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(d, "instances"), 0), "job")));
	d = json_array_get(json_object_get(root, "devices"), 1);
	assert_int_equal(json_integer_value(json_object_get(d, "index")), 0);
	assert_string_equal(json_string_value(json_object_get(d, "state")), "refused");
	assert_int_equal(json_array_size(json_object_get(d, "profiles")), 0); /* mode off: no profiles */
	/* Node-level: each profile of a device with the mode on, once. */
	assert_int_equal(json_array_size(json_object_get(json_object_get(root, "mig"), "profiles")), 2);
	json_decref(root);
	free(text);
}

/* The files a directory's rows name, in order: what core/model/tree_names.h must list. */
static void assert_rows_are(enum fs_kind dir, const char *const *names)
{
	const struct fs_entry *rows = fs_tree_files(dir);
	size_t n = 0;

	assert_non_null(rows);
	for (; rows[n].name; n++) {
		assert_non_null(names[n]);
		assert_string_equal(rows[n].name, names[n]);
	}
	assert_null(names[n]);
}

/* Core refuses names from core/model/tree_names.h: it must be exactly the tree's files, or names collide. */
static void test_reserved_names_are_the_tree_files(void **state)
{
	static const char *const mig[] = { ACCEL_MIG_FILE_NAMES, NULL };
	static const char *const profile[] = { ACCEL_PROFILE_FILE_NAMES, NULL };
	static const char *const node_profile[] = { ACCEL_NODE_PROFILE_FILE_NAMES, NULL };
	static const char *const placement[] = { ACCEL_PLACEMENT_FILE_NAMES, NULL };

	(void)state;
	assert_rows_are(FS_MIG, mig);
	assert_rows_are(FS_PROFILE, profile);
	assert_rows_are(FS_NODE_PROFILE, node_profile);
	assert_rows_are(FS_PLACEMENT, placement);
}

/* A profile called like a file of mig/ (map was once missing) would hide it: the catalog refuses it. */
static void test_catalog_refuses_mig_file_names(void **state)
{
	const struct fs_entry *rows = fs_tree_files(FS_MIG);

	(void)state;
	for (size_t i = 0; rows[i].name; i++)
		assert_true(accel_catalog_name_reserved(rows[i].name));
	assert_true(accel_catalog_name_reserved("map"));
	assert_false(accel_catalog_name_reserved("4g.48gb"));
}

/* Every file's row says how it is read, written or opened: nothing else in fs/ asks its kind. */
static void test_rows_are_whole(void **state)
{
	static const enum fs_kind dirs[] = { FS_ROOT,         FS_DEVICE, FS_MIG,  FS_PROFILE, FS_PLACEMENT,
		                             FS_NODE_PROFILE, FS_JOB,    FS_DIES, FS_DIE };
	size_t files = 0, writable = 0;

	(void)state;
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		const struct fs_entry *rows = fs_tree_files(dirs[d]);

		assert_non_null(rows);
		for (const struct fs_entry *r = rows; r->name; r++) {
			bool w = r->flags & FS_ENTRY_WRITABLE;

			/* Every row chose its freshness class (fs/tree.h); a live one is a file, never page-cached. */
			assert_true(r->fresh == FS_FRESH_SNAPSHOT || r->fresh == FS_FRESH_LIVE);
			if (r->fresh == FS_FRESH_LIVE) {
				assert_int_equal(r->kind, FS_FILE);
				assert_false(r->flags & FS_ENTRY_CACHED);
			}

			if (r->kind != FS_FILE) {
				assert_null(r->render);
				assert_null(r->write);
				assert_null(r->open);
				assert_false(w);
				continue;
			}
			files++;
			writable += w;
			assert_true(r->render || r->write || r->open);
			/* Writable exactly when something takes the bytes: a write function, or handles of its own. */
			assert_int_equal(w, r->write || r->open);
			if (r->open) {
				assert_non_null(r->size);
				assert_null(r->render);
			}
			if (r->flags & (FS_ENTRY_CACHED | FS_ENTRY_JOB_READY))
				assert_non_null(r->render);
		}
	}
	/*
	 * quota; dies/: slot and lease_ms; a die: enabled, driver, policy, vram; a job: containers, reclaim;
	 * <dev>/mig/: mode, layout, cordon, foreign, adopt; <dev>/health (an operator's acknowledgement).
	 */
	assert_true(files >= 20);
	assert_int_equal(writable, 14);
}

/*
 * The table checks itself at start (the daemon refuses to serve otherwise),
 * and the live rows are the few that ask the driver or /proc: holders and
 * processes, and vram's bytes; status and node.json are snapshot rows.
 */
static void test_rows_have_a_freshness_class(void **state)
{
	static const struct {
		enum fs_kind dir;
		const char *name;
		enum fs_freshness fresh;
	} want[] = {
		{ FS_ROOT, "node.json", FS_FRESH_SNAPSHOT }, { FS_ROOT, "metrics", FS_FRESH_SNAPSHOT },
		{ FS_JOB, "status", FS_FRESH_SNAPSHOT },     { FS_JOB, "processes", FS_FRESH_LIVE },
		{ FS_JOB, "holders", FS_FRESH_LIVE },        { FS_DEVICE, "holders", FS_FRESH_LIVE },
		{ FS_DIE, "vram", FS_FRESH_LIVE },           { FS_DEVICE, "utilization", FS_FRESH_LIVE },
		{ FS_JOB, "utilization", FS_FRESH_LIVE },
	};
	char why[256];
	size_t live = 0;

	(void)state;
	assert_int_equal(fs_tree_check(why, sizeof(why)), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct fs_entry *r = fs_tree_files(want[i].dir);
		while (r->name && strcmp(r->name, want[i].name))
			r++;
		assert_non_null(r->name);
		assert_int_equal(r->fresh, want[i].fresh);
	}
	for (int k = FS_ROOT; k <= FS_DIE; k++)
		for (const struct fs_entry *r = fs_tree_files((enum fs_kind)k); r && r->name; r++)
			live += r->fresh == FS_FRESH_LIVE;
	/*
	 * A card's holders and utilization, vram; a job's processes, holders and utilization, counted for
	 * its three views (FS_JOB, FS_NODE_JOB, FS_PLACEMENT_JOB: one table).
	 */
	assert_int_equal(live, 3 + 3 * 3);
	/* status is page-cached again: fs/notify.c drops it when the snapshot or the registry moves. */
	{
		const struct fs_entry *r = fs_tree_files(FS_JOB);
		while (strcmp(r->name, "status"))
			r++;
		assert_true(r->flags & FS_ENTRY_CACHED);
	}
}

/* The job control files are rows like any other: resolved by name, rendered by their row. */
static void test_job_control_rows_render(void **state)
{
	struct fs_mount m = { 0 }; /* no registry, no dies */
	struct fs_node n;
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(fs_tree_resolve(&snap, &m, "ppu3/mig/4g.48gb/job1/reclaim", &n), 0);
	assert_int_equal(n.kind, FS_FILE);
	assert_true(fs_node_is_writable(&n));
	assert_int_equal(fs_render(NULL, &snap, &n, &text, &len), 0);
	assert_string_equal(text, "manual\n");
	free(text);
	assert_int_equal(fs_tree_resolve(&snap, &m, "ppu3/mig/4g.48gb/job1/containers", &n), 0);
	assert_int_equal(fs_render(NULL, &snap, &n, &text, &len), 0);
	assert_string_equal(text, ""); /* nothing attached, and an empty text is a string */
	assert_int_equal(len, 0);
	free(text);
	assert_int_equal(fs_tree_resolve(&snap, &m, "ppu3/mig/4g.48gb/job1/status", &n), 0);
	assert_false(fs_node_is_writable(&n));
	/* device links a job seen from a view; the device's own directory has none, and no dies/ here. */
	assert_int_equal(fs_tree_resolve(&snap, &m, "ppu3/mig/4g.48gb/job1/device", &n), -ENOENT);
	assert_int_equal(fs_tree_resolve(&snap, &m, "mig/4g.48gb/job1/device", &n), 0);
	assert_int_equal(n.kind, FS_JOB_LINK);
	assert_int_equal(fs_tree_resolve(&snap, &m, "dies", &n), -ENOENT);
	assert_int_equal(fs_tree_resolve(&snap, &m, "ppu3/mig/4g.48gb/job1", &n), 0);
	assert_int_equal(fs_render(NULL, &snap, &n, &text, &len), -EISDIR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_gauges),
		cmocka_unit_test(test_metrics_counters),
		cmocka_unit_test(test_metrics_stable),
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_map_free_runs_and_overlap),
		cmocka_unit_test(test_map_refused_and_disabled),
		cmocka_unit_test(test_node_json),
		cmocka_unit_test(test_reserved_names_are_the_tree_files),
		cmocka_unit_test(test_catalog_refuses_mig_file_names),
		cmocka_unit_test(test_rows_are_whole),
		cmocka_unit_test(test_rows_have_a_freshness_class),
		cmocka_unit_test(test_job_control_rows_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
