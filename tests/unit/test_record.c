/* SPDX-License-Identifier: MIT */
/* Ownership records: round trip, durable write, and parsing that fails closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/state/record.h"

static struct accel_record sample(void)
{
	struct accel_record r;

	memset(&r, 0, sizeof(r));
	snprintf(r.family, sizeof(r.family), "ppu");
	snprintf(r.card_uuid, sizeof(r.card_uuid), "PPU-1111");
	r.ordinal = 3;
	snprintf(r.job, sizeof(r.job), "job1");
	snprintf(r.profile, sizeof(r.profile), "4g48gb");
	r.profile_id = 5;
	r.gi = 1;
	r.ci = 0;
	r.ci_profile_id = 2;
	r.placement = (struct accel_span){ 4, 4 };
	snprintf(r.uuid, sizeof(r.uuid), "MIG-aaaa");
	r.uid = 1000;
	r.gid = 100;
	r.created = 1764500000;
	return r;
}

static void roundtrip(void **state)
{
	struct accel_record r = sample(), back;
	char why[256];
	char *json = accel_record_to_json(&r);

	(void)state;
	assert_non_null(json);
	assert_int_equal(accel_record_parse(json, "ppu", "PPU-1111", "job1", &back, why, sizeof(why)), 0);
	assert_string_equal(back.profile, "4g48gb");
	assert_int_equal(back.profile_id, 5);
	assert_int_equal(back.gi, 1);
	assert_int_equal(back.placement.start, 4);
	assert_int_equal(back.placement.size, 4);
	assert_string_equal(back.uuid, "MIG-aaaa");
	assert_int_equal(back.uid, 1000);
	assert_int_equal(back.phase, ACCEL_RECORD_ACTIVE);
	free(json);
}

static void expect_bad(const char *text, const char *card, const char *job, const char *reason_part)
{
	struct accel_record back;
	char why[256];

	assert_int_equal(accel_record_parse(text, "ppu", card, job, &back, why, sizeof(why)), -EINVAL);
	if (!strstr(why, reason_part))
		fail_msg("reason '%s' does not mention '%s'", why, reason_part);
}

/* A copy of text with the first `from` replaced by `to`. */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out;

	assert_non_null(at);
	out = malloc(strlen(text) + strlen(to) + 1);
	assert_non_null(out);
	sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

static void corrupt_and_partial(void **state)
{
	struct accel_record r = sample();
	char *json = accel_record_to_json(&r);
	char *cut;

	(void)state;
	expect_bad("", "PPU-1111", "job1", "not JSON");
	expect_bad("{\"version\": 1", "PPU-1111", "job1", "not JSON");
	expect_bad("[1,2]", "PPU-1111", "job1", "not a JSON object");
	expect_bad("{\"version\": 99}", "PPU-1111", "job1", "unknown record version");
	/* a record cut short by a crash mid-write (without the rename it never appears; with it, refuse) */
	cut = strdup(json);
	cut[strlen(cut) / 2] = '\0';
	expect_bad(cut, "PPU-1111", "job1", "not JSON");
	free(cut);
	/* a field missing */
	cut = replaced(json, "\"gi\"", "\"xx\"");
	expect_bad(cut, "PPU-1111", "job1", "missing gi");
	free(cut);
	/* a field of the wrong type, or out of range */
	cut = replaced(json, "\"profile_id\": 5", "\"profile_id\": \"5\"");
	expect_bad(cut, "PPU-1111", "job1", "profile_id");
	free(cut);
	cut = replaced(json, "\"gi\": 1", "\"gi\": -1");
	expect_bad(cut, "PPU-1111", "job1", "missing gi");
	free(cut);
	/* an empty placement is no placement */
	cut = replaced(json, "\"size\": 4", "\"size\": 0");
	expect_bad(cut, "PPU-1111", "job1", "placement");
	free(cut);
	/* an unknown phase */
	cut = replaced(json, "\"active\"", "\"paused\"");
	expect_bad(cut, "PPU-1111", "job1", "phase");
	free(cut);
	/* duplicate keys are ambiguous */
	expect_bad("{\"version\": 1, \"version\": 1}", "PPU-1111", "job1", "not JSON");
	free(json);
}

static void wrong_card_or_job(void **state)
{
	struct accel_record r = sample();
	char *json = accel_record_to_json(&r);

	(void)state;
	expect_bad(json, "PPU-2222", "job1", "card does not match");
	expect_bad(json, "PPU-1111", "job2", "job does not match");
	free(json);
}

static void durable_write_load_remove(void **state)
{
	char dir[] = "/tmp/accel-record-XXXXXX", path[512], why[256];
	struct accel_record r = sample(), *list;
	struct accel_record_bad *bad;
	size_t n, n_bad;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(accel_record_write(dir, &r, why, sizeof(why)), 0);
	snprintf(path, sizeof(path), "%s/records/ppu/PPU-1111/job1.json", dir);
	assert_int_equal(access(path, R_OK), 0);

	/* a leftover temporary and a corrupt record beside the good one */
	snprintf(path, sizeof(path), "%s/records/ppu/PPU-1111/job2.json.tmp.123", dir);
	f = fopen(path, "w");
	fputs("{", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/records/ppu/PPU-1111/job3.json", dir);
	f = fopen(path, "w");
	fputs("{\"version\":1}", f);
	fclose(f);

	assert_int_equal(accel_record_load_card(dir, "ppu", "PPU-1111", &list, &n, &bad, &n_bad), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].job, "job1");
	assert_int_equal(n_bad, 1);
	assert_non_null(strstr(bad[0].path, "job3.json"));
	free(list);
	free(bad);
	snprintf(path, sizeof(path), "%s/records/ppu/PPU-1111/job2.json.tmp.123", dir);
	assert_int_equal(access(path, F_OK), -1); /* temporaries are cleaned up */

	/* the removing phase survives a reload */
	r.phase = ACCEL_RECORD_REMOVING;
	assert_int_equal(accel_record_write(dir, &r, why, sizeof(why)), 0);
	assert_int_equal(accel_record_load_card(dir, "ppu", "PPU-1111", &list, &n, &bad, &n_bad), 0);
	assert_int_equal(n, 1);
	assert_int_equal(list[0].phase, ACCEL_RECORD_REMOVING);
	free(list);
	free(bad);

	assert_int_equal(accel_record_remove(dir, &r, why, sizeof(why)), 0);
	snprintf(path, sizeof(path), "%s/records/ppu/PPU-1111/job1.json", dir);
	assert_int_equal(access(path, F_OK), -1);
	/* removing twice is not an error */
	assert_int_equal(accel_record_remove(dir, &r, why, sizeof(why)), 0);

	/* a card with no directory has no records */
	assert_int_equal(accel_record_load_card(dir, "ppu", "PPU-9999", &list, &n, &bad, &n_bad), 0);
	assert_int_equal(n, 0);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void write_fails_cleanly(void **state)
{
	char dir[] = "/tmp/accel-record-XXXXXX", path[512], why[256];
	struct accel_record r = sample();
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* a file where the records directory should be */
	snprintf(path, sizeof(path), "%s/records", dir);
	f = fopen(path, "w");
	fclose(f);
	assert_true(accel_record_write(dir, &r, why, sizeof(why)) < 0);
	assert_non_null(strstr(why, "cannot create"));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip),           cmocka_unit_test(corrupt_and_partial),
		cmocka_unit_test(wrong_card_or_job),   cmocka_unit_test(durable_write_load_remove),
		cmocka_unit_test(write_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
