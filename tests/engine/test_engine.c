/* SPDX-License-Identifier: MIT */
/*
 * The partition engine (core/driver/catalog.c, carve.c, inventory.c, devnodes.c)
 * against the simulated drivers, through the product's own seam: discovery
 * as the runbook prescribes, the compute-instance profile choice, and
 * rollback at every step of a carve.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/driver/carve.h"
#include "core/driver/catalog.h"
#include "core/driver/devnodes.h"
#include "core/driver/inventory.h"
#include "tests/sim/sim_fixture.h"

struct env {
	struct sim_fixture fx;
	struct accel_card card;
	char dev_root[PATH_MAX];
	char proc_root[PATH_MAX];
};

static void card_at(struct env *e, unsigned index)
{
	memset(&e->card, 0, sizeof(e->card));
	e->card.family = e->fx.family;
	e->card.lib = &e->fx.lib;
	e->card.handle = fx_device(&e->fx, index);
	e->card.ordinal = index;
	assert_int_equal(e->fx.lib.DeviceGetMinorNumber(e->card.handle, &e->card.minor), MIG_SUCCESS);
	snprintf(e->card.name, sizeof(e->card.name), "%s%u", e->fx.family->tree_prefix, index);
	snprintf(e->dev_root, sizeof(e->dev_root), "%s/dev", e->fx.vendor_root);
	snprintf(e->proc_root, sizeof(e->proc_root), "%s/proc", e->fx.vendor_root);
	e->card.dev_root = e->dev_root;
	e->card.proc_root = e->proc_root;
	e->card.busy_retries = 1;
	e->card.busy_delay_ms = 1;
}

static struct env *setup(const struct accel_family *f, const char *topology, unsigned index)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	fx_prepare(&e->fx, f, topology);
	fx_open(&e->fx);
	card_at(e, index);
	return e;
}

static void teardown(struct env *e)
{
	fx_destroy(&e->fx);
	free(e);
}

static const struct accel_profile *by_name(const struct accel_catalog *c, const char *name)
{
	for (size_t i = 0; i < c->n_profiles; i++)
		if (!strcmp(c->profiles[i].name, name))
			return &c->profiles[i];
	return NULL;
}

static const struct accel_catalog_drop *drop_of(const struct accel_catalog *c, unsigned id)
{
	for (size_t i = 0; i < c->n_drops; i++)
		if (c->drops[i].id == id)
			return &c->drops[i];
	return NULL;
}

static size_t live_gis(struct env *e, const struct accel_catalog *c)
{
	struct accel_inventory inv;
	char err[256];
	size_t n;

	assert_int_equal(accel_inventory_read(&e->card, c->all_ids, c->n_ids, &inv, err, sizeof(err)), 0);
	n = inv.n_gis;
	accel_inventory_clear(&inv);
	return n;
}

/* ---- discovery ---------------------------------------------------------- */

static void thead_discovery_follows_the_runbook(void **state)
{
	struct env *e = setup(&accel_family_thead, "thead-quirks.json", 0);
	struct accel_catalog c;
	char err[256];
	const struct accel_profile *p;
	const struct accel_catalog_drop *d;

	(void)state;
	assert_int_equal(accel_catalog_probe(&e->card, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_profiles, 2);
	p = by_name(&c, "4g.48gb");
	assert_non_null(p);
	assert_int_equal(p->id, 5); /* the id the driver returned, not the probe index */
	assert_int_not_equal(p->index, p->id);
	assert_string_equal(p->vendor_name, "4g48gb");
	assert_string_equal(p->driver_name, "MIG 4g48gb");
	assert_int_equal(p->span, 4); /* from the placement records */
	assert_int_equal(p->n_placements, 2);
	p = by_name(&c, "8g.96gb");
	assert_non_null(p);
	assert_int_equal(p->id, 3);
	assert_int_equal(p->span, 8);

	/* the variants go quietly, the rest with a warning naming the id */
	assert_non_null(d = drop_of(&c, 20)); /* +me by name */
	assert_false(d->warn);
	assert_non_null(d = drop_of(&c, 11)); /* GFX capability bit */
	assert_false(d->warn);
	assert_non_null(d = drop_of(&c, 30)); /* nameless */
	assert_true(d->warn);
	assert_non_null(strstr(d->why, "no name"));
	assert_non_null(d = drop_of(&c, 31)); /* no legal placement */
	assert_true(d->warn);
	assert_non_null(strstr(d->why, "no legal placement"));
	assert_non_null(d = drop_of(&c, 32)); /* not a resource-name segment */
	assert_true(d->warn);
	/* every id the driver answered is known, offered or not: hand-carved instances of them still count */
	assert_int_equal(c.n_ids, 7);
	accel_catalog_clear(&c);

	/* MIG mode off reads as an empty catalogue */
	card_at(e, 2);
	assert_int_equal(accel_catalog_probe(&e->card, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_profiles, 0);
	accel_catalog_clear(&c);
	teardown(e);
}

static void nvidia_discovery_matches_the_h200(void **state)
{
	static const struct {
		const char *name;
		unsigned id, span, count;
	} want[] = {
		{ "1g.18gb", 19, 1, 7 }, { "2g.35gb", 14, 2, 3 }, { "3g.71gb", 9, 4, 2 },
		{ "4g.71gb", 5, 4, 1 },  { "7g.141gb", 0, 8, 1 }, { "1g.35gb", 15, 2, 4 },
	};
	struct env *e = setup(&accel_family_nvidia, NULL, 0);
	struct accel_catalog c;
	char err[256];

	(void)state;
	assert_int_equal(accel_catalog_probe(&e->card, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_profiles, 6);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct accel_profile *p = by_name(&c, want[i].name);
		assert_non_null(p);
		assert_int_equal(p->id, want[i].id);
		assert_int_equal(p->span, want[i].span);
		assert_int_equal(p->n_placements, want[i].count);
	}
	assert_null(by_name(&c, "1g.18gb+me"));
	assert_non_null(drop_of(&c, 20));
	accel_catalog_clear(&c);
	teardown(e);
}

/* ---- the compute instance covering the GI --------------------------------- */

static void ci_profile_covers_the_whole_gi(void **state)
{
	struct env *e = setup(&accel_family_nvidia, NULL, 0);
	struct accel_catalog c;
	char err[512];

	(void)state;
	assert_int_equal(accel_catalog_probe(&e->card, &c, err, sizeof(err)), 0);
	for (size_t i = 0; i < c.n_profiles; i++) {
		const struct accel_profile *p = &c.profiles[i];
		mig_compute_instance_profile_info_v2_t *cis;
		struct accel_carve_result res;
		mig_gpu_instance_t gi;
		size_t n;

		assert_int_equal(accel_carve(&e->card, p, -1, NULL, 0, NULL, NULL, &res, err, sizeof(err)), 0);
		/* the chosen CI profile is the one whose slices equal the GI's, among distinct ids */
		assert_int_equal(e->fx.lib.DeviceGetGpuInstanceById(e->card.handle, res.gi, &gi), MIG_SUCCESS);
		assert_int_equal(accel_ci_profiles(&e->card, gi, p->id, &cis, &n, err, sizeof(err)), 0);
		for (size_t k = 0; k < n; k++)
			if (cis[k].id == res.ci_profile_id)
				assert_int_equal(cis[k].sliceCount, p->slice_count);
		free(cis);
		free(res.nodes);
		assert_int_equal(accel_reclaim(&e->card, res.gi, NULL, NULL, err, sizeof(err)), 0);
	}
	assert_int_equal(live_gis(e, &c), 0);
	accel_catalog_clear(&c);
	teardown(e);
}

static void thead_ci_aliases_are_deduplicated(void **state)
{
	struct env *e = setup(&accel_family_thead, NULL, 3);
	struct accel_catalog c;
	struct accel_carve_result res;
	char err[512];

	(void)state;
	assert_int_equal(accel_catalog_probe(&e->card, &c, err, sizeof(err)), 0);
	assert_int_equal(accel_carve(&e->card, by_name(&c, "4g.48gb"), -1, NULL, 0, NULL, NULL, &res, err, sizeof(err)),
	                 0);
	/* the job's nodes: control, card, and two capability nodes whose minors came from procfs */
	assert_int_equal(res.n_nodes, 5);
	assert_string_equal(res.nodes[2].path, "/dev/alixpu_ppu3");
	assert_int_equal(res.nodes[2].minor, 4);
	assert_true(res.nodes[3].minor > 1000 && res.nodes[3].minor != res.gi);
	assert_true(strncmp(res.uuid, "MIG-", 4) == 0);
	free(res.nodes);
	accel_catalog_clear(&c);
	teardown(e);
}

/* ---- rollback ------------------------------------------------------------- */

static int failing_commit(void *ctx, const struct accel_carve_result *res, char *why, size_t whylen)
{
	(void)ctx;
	(void)res;
	snprintf(why, whylen, "the record could not be written");
	return -EIO;
}

static void rollback_at_every_step(void **state)
{
	static const char *const steps[] = {
		"DeviceCreateGpuInstanceWithPlacement",
		"GpuInstanceGetInfo",
		"GpuInstanceGetComputeInstanceProfileInfoV",
		"GpuInstanceCreateComputeInstance",
		"ComputeInstanceGetInfo_v2",
		"DeviceGetMaxMigDeviceCount",
		"DeviceGetMigDeviceHandleByIndex",
		"DeviceGetUUID",
	};
	struct env *e = setup(&accel_family_thead, NULL, 3);
	struct accel_catalog c;
	struct accel_carve_result res;
	const struct accel_profile *p;
	char err[512];

	(void)state;
	assert_int_equal(accel_catalog_probe(&e->card, &c, err, sizeof(err)), 0);
	p = by_name(&c, "4g.48gb");
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		/* DeviceGetUUID is also asked for the card: fail the MIG device's call, the first one */
		assert_int_equal(FX_CONTROL(&e->fx, SimArmFault)(steps[i], MIG_ERROR_UNKNOWN, 0, 1), MIG_SUCCESS);
		int ret = accel_carve(&e->card, p, -1, NULL, 0, NULL, NULL, &res, err, sizeof(err));
		if (ret == 0)
			fail_msg("carve succeeded although %s failed", steps[i]);
		if (!strstr(err, "UNKNOWN") && !strstr(err, "Unknown"))
			fail_msg("%s: the reason does not carry the driver's message: %s", steps[i], err);
		assert_int_equal(live_gis(e, &c), 0);
		assert_int_equal(FX_CONTROL(&e->fx, SimClearFaults)(), MIG_SUCCESS);
	}

	/* a capability node that is not what procfs says */
	{
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "%s/dev/alixpu_ppu3", e->fx.vendor_root);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(unlink(path), 0);
		assert_int_equal(mknod(path, S_IFCHR | 0600, makedev(major(st.st_rdev), 99)), 0);
		assert_int_not_equal(accel_carve(&e->card, p, -1, NULL, 0, NULL, NULL, &res, err, sizeof(err)), 0);
		assert_non_null(strstr(err, "minor 99"));
		assert_int_equal(live_gis(e, &c), 0);
		unlink(path);
		assert_int_equal(mknod(path, S_IFREG | 0600, 0), 0);
		assert_int_equal(accel_carve(&e->card, p, -1, NULL, 0, NULL, NULL, &res, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "not a character device"));
		assert_int_equal(live_gis(e, &c), 0);
		unlink(path);
		assert_int_equal(accel_carve(&e->card, p, -1, NULL, 0, NULL, NULL, &res, err, sizeof(err)), -ENOENT);
		assert_int_equal(live_gis(e, &c), 0);
		assert_int_equal(mknod(path, S_IFCHR | 0600, st.st_rdev), 0);
	}

	/* the record cannot be written */
	assert_int_equal(accel_carve(&e->card, p, -1, NULL, 0, failing_commit, NULL, &res, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "record"));
	assert_int_equal(live_gis(e, &c), 0);

	/* and with nothing in the way, the same carve works */
	assert_int_equal(accel_carve(&e->card, p, -1, NULL, 0, NULL, NULL, &res, err, sizeof(err)), 0);
	free(res.nodes);
	assert_int_equal(live_gis(e, &c), 1);
	accel_catalog_clear(&c);
	teardown(e);
}

static void reclaim_checks_identity_and_retries_busy(void **state)
{
	struct env *e = setup(&accel_family_thead, NULL, 3);
	struct accel_catalog c;
	struct accel_carve_result res;
	const struct accel_profile *p;
	char err[512];

	(void)state;
	assert_int_equal(accel_catalog_probe(&e->card, &c, err, sizeof(err)), 0);
	p = by_name(&c, "4g.48gb");
	assert_int_equal(accel_carve(&e->card, p, -1, NULL, 0, NULL, NULL, &res, err, sizeof(err)), 0);
	free(res.nodes);

	/* wrong UUID: somebody else's instance under a reused id, nothing destroyed */
	struct accel_expect other = { p->id, res.placement, "MIG-not-this-one", res.ci, UINT_MAX, false };
	assert_int_equal(accel_reclaim(&e->card, res.gi, &other, NULL, err, sizeof(err)), -ESTALE);
	assert_int_equal(live_gis(e, &c), 1);
	/* wrong placement */
	struct accel_expect moved = { p->id, { 4, 4 }, NULL, 0, UINT_MAX, false };
	assert_int_equal(accel_reclaim(&e->card, res.gi, &moved, NULL, err, sizeof(err)), -ESTALE);

	/* busy: bounded retries, then EBUSY, the instance kept */
	assert_int_equal(FX_CONTROL(&e->fx, SimSetBusy)(e->card.handle, res.gi, res.ci, 1), MIG_SUCCESS);
	struct accel_expect mine = { p->id, res.placement, res.uuid, res.ci, UINT_MAX, false };
	assert_int_equal(accel_reclaim(&e->card, res.gi, &mine, NULL, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "retries"));
	assert_int_equal(live_gis(e, &c), 1);
	assert_int_equal(FX_CONTROL(&e->fx, SimSetBusy)(e->card.handle, res.gi, res.ci, 0), MIG_SUCCESS);
	assert_int_equal(accel_reclaim(&e->card, res.gi, &mine, NULL, err, sizeof(err)), 0);
	assert_int_equal(live_gis(e, &c), 0);
	/* gone already */
	assert_int_equal(accel_reclaim(&e->card, res.gi, &mine, NULL, err, sizeof(err)), -ENOENT);
	accel_catalog_clear(&c);
	teardown(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thead_discovery_follows_the_runbook),
		cmocka_unit_test(nvidia_discovery_matches_the_h200),
		cmocka_unit_test(ci_profile_covers_the_whole_gi),
		cmocka_unit_test(thead_ci_aliases_are_deduplicated),
		cmocka_unit_test(rollback_at_every_step),
		cmocka_unit_test(reclaim_checks_identity_and_retries_busy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
