/* SPDX-License-Identifier: MIT */
/* The placement ledger: overlap, lowest-free choice, capacity and availability from placements. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/model/ledger.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The T-Head PPU of the runbook and the real H200 table. */
static const struct accel_span p4g48[] = { { 0, 4 }, { 4, 4 } };
static const struct accel_span p8g96[] = { { 0, 8 } };
static const struct accel_span h1g18[] = { { 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 1 }, { 5, 1 }, { 6, 1 } };
static const struct accel_span h1g35[] = { { 0, 2 }, { 2, 2 }, { 4, 2 }, { 6, 2 } };
static const struct accel_span h3g71[] = { { 0, 4 }, { 4, 4 } };
static const struct accel_span h4g71[] = { { 0, 4 } };
static const struct accel_span h7g141[] = { { 0, 8 } };

static void overlap_is_half_open(void **state)
{
	(void)state;
	assert_true(accel_span_overlaps((struct accel_span){ 0, 4 }, (struct accel_span){ 3, 1 }));
	assert_true(accel_span_overlaps((struct accel_span){ 0, 8 }, (struct accel_span){ 4, 4 }));
	assert_false(accel_span_overlaps((struct accel_span){ 0, 4 }, (struct accel_span){ 4, 4 }));
	assert_false(accel_span_overlaps((struct accel_span){ 4, 4 }, (struct accel_span){ 0, 4 }));
	assert_false(accel_span_overlaps((struct accel_span){ 0, 1 }, (struct accel_span){ 1, 1 }));
}

static void pick_lowest_free(void **state)
{
	struct accel_span used1[] = { { 0, 4 } };
	struct accel_span used2[] = { { 0, 4 }, { 4, 4 } };
	struct accel_span unordered[] = { { 4, 4 }, { 0, 4 } };

	(void)state;
	assert_int_equal(accel_ledger_pick(p4g48, N(p4g48), NULL, 0), 0);
	assert_int_equal(accel_ledger_pick(p4g48, N(p4g48), used1, 1), 1);
	assert_int_equal(accel_ledger_pick(p4g48, N(p4g48), used2, 2), -1);
	/* lowest start wins, whatever order the driver listed them in */
	assert_int_equal(accel_ledger_pick(unordered, 2, NULL, 0), 1);
	/* 8g96gb only fits an empty PPU */
	assert_int_equal(accel_ledger_pick(p8g96, 1, used1, 1), -1);
	struct accel_span mid[] = { { 2, 1 } };
	assert_int_equal(accel_ledger_pick(h1g18, N(h1g18), mid, 1), 0);
	struct accel_span low[] = { { 0, 1 }, { 1, 1 } };
	assert_int_equal(accel_ledger_pick(h1g18, N(h1g18), low, 2), 2);
}

static void capacity_is_the_placement_count(void **state)
{
	(void)state;
	assert_int_equal(accel_ledger_capacity(N(p4g48)), 2);
	assert_int_equal(accel_ledger_capacity(N(p8g96)), 1);
	assert_int_equal(accel_ledger_capacity(N(h1g18)), 7);
}

static void available_counts_repeated_picks(void **state)
{
	struct accel_span one4g[] = { { 0, 4 } };
	struct accel_span one8g[] = { { 0, 8 } };
	struct accel_span slice1[] = { { 1, 1 } };
	struct accel_span seven[] = { { 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 1 }, { 5, 1 }, { 6, 1 } };

	(void)state;
	/* empty PPU: 2 x 4g48gb or 1 x 8g96gb */
	assert_int_equal(accel_ledger_available(p4g48, N(p4g48), NULL, 0), 2);
	assert_int_equal(accel_ledger_available(p8g96, N(p8g96), NULL, 0), 1);
	/* creating either takes the other to zero */
	assert_int_equal(accel_ledger_available(p8g96, N(p8g96), one4g, 1), 0);
	assert_int_equal(accel_ledger_available(p4g48, N(p4g48), one4g, 1), 1);
	assert_int_equal(accel_ledger_available(p4g48, N(p4g48), one8g, 1), 0);
	/* H200: a 1g in slice 1 leaves 1g.35gb placements 2,4,6 */
	assert_int_equal(accel_ledger_available(h1g35, N(h1g35), slice1, 1), 3);
	assert_int_equal(accel_ledger_available(h1g18, N(h1g18), slice1, 1), 6);
	/* 7 x 1g.18gb fill the 1g placements; nothing else fits but slice 7 */
	assert_int_equal(accel_ledger_available(h1g18, N(h1g18), seven, 7), 0);
	assert_int_equal(accel_ledger_available(h7g141, N(h7g141), seven, 7), 0);
	/* 4g.71gb then 3g.71gb both fit; a second 3g.71gb does not */
	assert_int_equal(accel_ledger_available(h3g71, N(h3g71), one4g, 1), 1);
	struct accel_span both[] = { { 0, 4 }, { 4, 4 } };
	assert_int_equal(accel_ledger_available(h3g71, N(h3g71), both, 2), 0);
	assert_int_equal(accel_ledger_available(h4g71, N(h4g71), NULL, 0), 1);
}

static void format_placements(void **state)
{
	char buf[64];
	struct accel_span mixed[] = { { 0, 8 }, { 2, 2 } };

	(void)state;
	accel_ledger_format(p4g48, N(p4g48), buf, sizeof(buf));
	assert_string_equal(buf, "{0,4}:4");
	accel_ledger_format(h1g18, N(h1g18), buf, sizeof(buf));
	assert_string_equal(buf, "{0,1,2,3,4,5,6}:1");
	accel_ledger_format(p8g96, 1, buf, sizeof(buf));
	assert_string_equal(buf, "{0}:8");
	accel_ledger_format(mixed, 2, buf, sizeof(buf));
	assert_string_equal(buf, "{0}:8,{2}:2");
	accel_ledger_format(NULL, 0, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(overlap_is_half_open),
		cmocka_unit_test(pick_lowest_free),
		cmocka_unit_test(capacity_is_the_placement_count),
		cmocka_unit_test(available_counts_repeated_picks),
		cmocka_unit_test(format_placements),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
