/* SPDX-License-Identifier: MIT */
/* The profile-name normalizer, both directions, every shape the runbook names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/model/names.h"

static void normalize_takes_last_field_lowercased(void **state)
{
	char out[ACCEL_NAME_MAX];

	(void)state;
	assert_int_equal(accel_name_normalize("MIG 4g48gb", out, sizeof(out)), ACCEL_NAME_OK);
	assert_string_equal(out, "4g48gb");
	assert_int_equal(accel_name_normalize("MIG 1g.18gb", out, sizeof(out)), ACCEL_NAME_OK);
	assert_string_equal(out, "1g.18gb");
	assert_int_equal(accel_name_normalize("  MIG\t8G96GB \n", out, sizeof(out)), ACCEL_NAME_OK);
	assert_string_equal(out, "8g96gb");
	assert_int_equal(accel_name_normalize("4g48gb", out, sizeof(out)), ACCEL_NAME_OK);
	assert_string_equal(out, "4g48gb");
}

static void normalize_refuses_nameless_variants_and_junk(void **state)
{
	char out[ACCEL_NAME_MAX];

	(void)state;
	assert_int_equal(accel_name_normalize("", out, sizeof(out)), ACCEL_NAME_EMPTY);
	assert_int_equal(accel_name_normalize("   \t", out, sizeof(out)), ACCEL_NAME_EMPTY);
	assert_int_equal(accel_name_normalize("MIG 1g.18gb+me", out, sizeof(out)), ACCEL_NAME_VARIANT);
	assert_int_equal(accel_name_normalize("MIG 4g48gb+gfx", out, sizeof(out)), ACCEL_NAME_VARIANT);
	assert_int_equal(accel_name_normalize("MIG 1g.10gb+me.all", out, sizeof(out)), ACCEL_NAME_VARIANT);
	assert_int_equal(accel_name_normalize("MIG 4g/48gb", out, sizeof(out)), ACCEL_NAME_INVALID);
	assert_int_equal(accel_name_normalize("MIG -4g48gb", out, sizeof(out)), ACCEL_NAME_INVALID);
	assert_int_equal(accel_name_normalize("MIG 4g48gb.", out, sizeof(out)), ACCEL_NAME_INVALID);
	/* characters are never rewritten into something valid */
	assert_int_equal(accel_name_normalize("MIG 4g_48gb\xc3\xa9", out, sizeof(out)), ACCEL_NAME_INVALID);
}

static void publish_and_back(void **state)
{
	char out[ACCEL_NAME_MAX];

	(void)state;
	accel_name_publish("4g48gb", true, out, sizeof(out));
	assert_string_equal(out, "4g.48gb");
	accel_name_publish("8g96gb", true, out, sizeof(out));
	assert_string_equal(out, "8g.96gb");
	accel_name_publish("4g24gb", true, out, sizeof(out));
	assert_string_equal(out, "4g.24gb");
	accel_name_vendor("4g.48gb", true, out, sizeof(out));
	assert_string_equal(out, "4g48gb");
	accel_name_vendor("8g.96gb", true, out, sizeof(out));
	assert_string_equal(out, "8g96gb");
	/* Idempotent: already published names pass through publishing. */
	accel_name_publish("4g.48gb", true, out, sizeof(out));
	assert_string_equal(out, "4g.48gb");
	/* Other shapes are published as the driver reports them. */
	accel_name_publish("3u4g24gb", true, out, sizeof(out));
	assert_string_equal(out, "3u4g24gb");
	accel_name_vendor("3u4g24gb", true, out, sizeof(out));
	assert_string_equal(out, "3u4g24gb");
	accel_name_publish("max", true, out, sizeof(out));
	assert_string_equal(out, "max");
	/* NVIDIA does not publish geometry: names are kept as they are. */
	accel_name_publish("1g.18gb", false, out, sizeof(out));
	assert_string_equal(out, "1g.18gb");
	accel_name_vendor("1g.18gb", false, out, sizeof(out));
	assert_string_equal(out, "1g.18gb");
}

static void from_driver_roundtrips(void **state)
{
	char out[ACCEL_NAME_MAX], vendor[ACCEL_NAME_MAX];

	(void)state;
	assert_int_equal(accel_name_from_driver("MIG 4g48gb", true, out, sizeof(out), vendor, sizeof(vendor)),
	                 ACCEL_NAME_OK);
	assert_string_equal(out, "4g.48gb");
	assert_string_equal(vendor, "4g48gb");
	assert_int_equal(accel_name_from_driver("MIG 7g.141gb", false, out, sizeof(out), vendor, sizeof(vendor)),
	                 ACCEL_NAME_OK);
	assert_string_equal(out, "7g.141gb");
	/* A leading zero does not survive publishing and coming back: not offered. */
	assert_int_equal(accel_name_from_driver("MIG 04g48gb", true, out, sizeof(out), NULL, 0),
	                 ACCEL_NAME_NO_ROUNDTRIP);
	/* A T-Head name that already carries NVIDIA's separator could not be requested back. */
	assert_int_equal(accel_name_from_driver("MIG 4g.48gb", true, out, sizeof(out), NULL, 0),
	                 ACCEL_NAME_NO_ROUNDTRIP);
	assert_int_equal(accel_name_from_driver("MIG 1g.18gb+me", false, out, sizeof(out), NULL, 0),
	                 ACCEL_NAME_VARIANT);
	assert_int_equal(accel_name_from_driver("", true, out, sizeof(out), NULL, 0), ACCEL_NAME_EMPTY);
	assert_string_equal(out, "");
}

static void nvml_names_from_geometry(void **state)
{
	/* the real H200 table: index, slices, memory MiB -> nvidia-smi's name */
	static const struct {
		unsigned index, slices;
		unsigned long long mib;
		const char *name;
	} h200[] = {
		{ 0, 1, 16384, "MIG 1g.18gb" },      { 1, 2, 33280, "MIG 2g.35gb" },
		{ 2, 3, 71424, "MIG 3g.71gb" },      { 3, 4, 71424, "MIG 4g.71gb" },
		{ 4, 7, 143360, "MIG 7g.141gb" },    { 7, 1, 16384, "MIG 1g.18gb+me" },
		{ 9, 1, 33280, "MIG 1g.35gb" },      { 0xA, 1, 16384, "MIG 1g.18gb+gfx" },
		{ 0xD, 1, 16384, "MIG 1g.18gb-me" }, { 0xF, 1, 16384, "MIG 1g.18gb+me.all" },
	};
	char out[ACCEL_NAME_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(h200) / sizeof(h200[0]); i++) {
		accel_name_nvml_geometry(h200[i].index, h200[i].slices, h200[i].mib, 143771, out, sizeof(out));
		assert_string_equal(out, h200[i].name);
	}
	/* an H100 80GB: 10240 MiB of 81559 is 1g.10gb */
	accel_name_nvml_geometry(0, 1, 9856, 81559, out, sizeof(out));
	assert_string_equal(out, "MIG 1g.10gb");
	/* without the card's size: plain rounding */
	accel_name_nvml_geometry(0, 1, 16384, 0, out, sizeof(out));
	assert_string_equal(out, "MIG 1g.16gb");
}

static void segments(void **state)
{
	(void)state;
	assert_true(accel_name_is_segment("4g.48gb"));
	assert_true(accel_name_is_segment("a"));
	assert_false(accel_name_is_segment(""));
	assert_false(accel_name_is_segment(".a"));
	assert_false(accel_name_is_segment("a-"));
	assert_false(accel_name_is_segment("a b"));
	char long_name[70];
	memset(long_name, 'a', 64);
	long_name[64] = '\0';
	assert_false(accel_name_is_segment(long_name));
	long_name[63] = '\0';
	assert_true(accel_name_is_segment(long_name));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(normalize_takes_last_field_lowercased),
		cmocka_unit_test(normalize_refuses_nameless_variants_and_junk),
		cmocka_unit_test(publish_and_back),
		cmocka_unit_test(from_driver_roundtrips),
		cmocka_unit_test(nvml_names_from_geometry),
		cmocka_unit_test(segments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
