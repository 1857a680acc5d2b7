/* SPDX-License-Identifier: MIT */
/*
 * The quota text and arithmetic (core/policy/quota_parse.c, core/policy/quota_use.c):
 * every bad line refused with its reason and nothing taken, the stored
 * form read back as written, use per principal from the jobs, the check
 * naming principal, limit and use, and the file's text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy/quota.h"
#include "fs/quota_text.h"

static void good_text_parses_and_round_trips(void **state)
{
	struct accel_quota_table t, back;
	char why[512] = "";
	char *stored;

	(void)state;
	assert_int_equal(accel_quota_parse("# a shared node\n\nuser:1000 slices=8 4g.48gb=1 jobs=4\n"
	                                   "  group:0 slices=16\n"
	                                   "default\tslices=2 jobs=1\n"
	                                   "user:root jobs=0",
	                                   false, &t, why, sizeof(why)),
	                 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.entries[0].kind, ACCEL_QUOTA_USER);
	assert_int_equal(t.entries[0].id, 1000);
	assert_true(t.entries[0].has_slices && t.entries[0].has_jobs);
	assert_int_equal(t.entries[0].slices, 8);
	assert_int_equal(t.entries[0].jobs, 4);
	assert_int_equal(t.entries[0].n_profiles, 1);
	assert_string_equal(t.entries[0].profiles[0].profile, "4g.48gb");
	assert_int_equal(t.entries[1].kind, ACCEL_QUOTA_GROUP);
	assert_false(t.entries[1].has_jobs);
	assert_int_equal(t.entries[2].kind, ACCEL_QUOTA_DEFAULT);
	/* A name is looked up once, kept as written. */
	assert_int_equal(t.entries[3].id, 0);
	assert_string_equal(t.entries[3].label, "root");
	assert_int_equal(t.entries[3].jobs, 0);

	stored = accel_quota_format(&t);
	assert_non_null(stored);
	assert_string_equal(stored, "user:1000=1000 slices=8 4g.48gb=1 jobs=4\ngroup:0=0 slices=16\n"
	                            "default slices=2 jobs=1\nuser:0=root jobs=0\n");
	assert_int_equal(accel_quota_parse(stored, true, &back, why, sizeof(why)), 0);
	assert_int_equal(back.n, t.n);
	assert_memory_equal(back.entries, t.entries, t.n * sizeof(*t.entries));
	accel_quota_table_free(&back);
	/* The stored form is no user's syntax: a name after '=' is not looked up there. */
	assert_int_equal(accel_quota_parse("user:alice=x jobs=1", true, &back, why, sizeof(why)), -EINVAL);
	free(stored);
	accel_quota_table_free(&t);
	accel_quota_table_free(&back);

	/* Empty: nothing limited. */
	assert_int_equal(accel_quota_parse("\n# none\n", false, &t, why, sizeof(why)), 0);
	assert_int_equal(t.n, 0);
}

static void every_bad_line_is_refused_with_its_reason(void **state)
{
	static const struct {
		const char *text, *reason;
	} cases[] = {
		{ "bob slices=1", "'bob' is not a principal" },
		{ "user: slices=1", "names no user" },
		{ "user:1000", "no limit after the principal" },
		{ "user:1000 slices", "'slices' is not a limit" },
		{ "user:1000 =3", "'=3' is not a limit" },
		{ "user:1000 slices=", "a limit is a number from 0 to 1000000" },
		{ "user:1000 slices=-1", "a limit is a number" },
		{ "user:1000 slices=+1", "a limit is a number" },
		{ "user:1000 slices=08", "a limit is a number" },
		{ "user:1000 slices=1000001", "a limit is a number" },
		{ "user:1000 slices=2x", "a limit is a number" },
		{ "user:1000 slices=1 slices=2", "slices is given twice" },
		{ "user:1000 jobs=1 jobs=2", "jobs is given twice" },
		{ "user:1000 4g.48gb=1 4g.48gb=2", "4g.48gb is given twice" },
		{ "user:1000 Bad/Name=1", "neither slices, jobs nor a profile name" },
		{ "user:1000 -x=1", "neither slices, jobs nor a profile name" },
		{ "user:1000 slices=1\nuser:1000 jobs=1", "line 2: user:1000 has a line already" },
		{ "default jobs=1\ndefault slices=1", "line 2: default has a line already" },
		{ "user:no-such-user-here jobs=1", "no user 'no-such-user-here' on this node" },
		{ "group:no-such-group-here jobs=1", "no group 'no-such-group-here' on this node" },
		{ "user:4294967295 jobs=1", "no user '4294967295'" },
		{ "user:1000 slices=1\r\n", "carriage return" },
		{ "user:1000 a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1 j=1 k=1 l=1 m=1 n=1 o=1 p=1 q=1",
		  "more than 16 profile limits" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct accel_quota_table t = { (void *)1, 99 };
		char why[512] = "";

		if (accel_quota_parse(cases[i].text, false, &t, why, sizeof(why)) != -EINVAL)
			fail_msg("'%s' was taken", cases[i].text);
		if (!strstr(why, cases[i].reason))
			fail_msg("'%s': '%s' does not say '%s'", cases[i].text, why, cases[i].reason);
		assert_non_null(strstr(why, "quota line") ? why : strstr(why, "quota text"));
		/* Nothing is taken from a text that fails: not even the lines before the bad one. */
		assert_null(t.entries);
		assert_int_equal(t.n, 0);
	}
}

static const struct accel_quota_charge jobs[] = {
	{ "a1", 1000, 100, "4g.48gb", 4 },
	{ "a2", 1000, 100, "1g.18gb", 1 },
	{ "b1", 1001, 100, "1g.18gb", 1 },
	{ "c1", 1002, 200, "8g.96gb", 8 },
};

static void use_is_per_principal(void **state)
{
	struct accel_quota_table t;
	struct accel_quota_use use;
	char why[512];

	(void)state;
	assert_int_equal(accel_quota_parse("user:1000 slices=8 1g.18gb=1\ngroup:100 slices=7\ndefault jobs=1", false,
	                                   &t, why, sizeof(why)),
	                 0);
	accel_quota_use_of(&t.entries[0], 1000, jobs, 4, &use);
	assert_int_equal(use.slices, 5);
	assert_int_equal(use.jobs, 2);
	assert_int_equal(use.profiles[0], 1);
	accel_quota_use_of(&t.entries[1], 0, jobs, 4, &use);
	assert_int_equal(use.slices, 6); /* the group's: both users of gid 100 */
	accel_quota_use_of(&t.entries[2], 1002, jobs, 4, &use);
	assert_int_equal(use.jobs, 1); /* the default's, for one user */

	/* The user's profile limit. */
	struct accel_quota_charge add = { "a3", 1000, 100, "1g.18gb", 1 };
	assert_int_equal(accel_quota_check(&t, jobs, 4, &add, why, sizeof(why)), -EDQUOT);
	assert_non_null(strstr(why, "user:1000 uses 1g.18gb=1 of 1"));
	/* The group's slices: 6 used, 7 allowed, a 4g.48gb needs 4. */
	add = (struct accel_quota_charge){ "b2", 1003, 100, "4g.48gb", 4 };
	assert_int_equal(accel_quota_check(&t, jobs, 4, &add, why, sizeof(why)), -EDQUOT);
	assert_non_null(strstr(why, "group:100 uses slices=6 of 7 and b2 (4g.48gb) needs 4 more"));
	add = (struct accel_quota_charge){ "b2", 1001, 100, "1g.18gb", 1 };
	assert_int_equal(accel_quota_check(&t, jobs, 4, &add, why, sizeof(why)), -EDQUOT); /* 1001: default jobs=1 */
	assert_non_null(strstr(why, "user 1001 (under the default quota) uses jobs=1 of 1"));
	/* A user with a line of its own is not under the default. */
	add = (struct accel_quota_charge){ "a3", 1000, 300, "4g.48gb", 3 };
	assert_int_equal(accel_quota_check(&t, jobs, 4, &add, why, sizeof(why)), 0);
	/* A limit of 0 forbids; a limit below use is kept, nothing is taken away, the next carve is refused. */
	accel_quota_table_free(&t);
	assert_int_equal(accel_quota_parse("user:1000 slices=2", false, &t, why, sizeof(why)), 0);
	add = (struct accel_quota_charge){ "a3", 1000, 300, "1g.18gb", 1 };
	assert_int_equal(accel_quota_check(&t, jobs, 4, &add, why, sizeof(why)), -EDQUOT);
	assert_non_null(strstr(why, "slices=5 of 2"));
	accel_quota_table_free(&t);
}

/* The file's text (fs/quota_text.c). */
static void the_file_shows_limits_and_use(void **state)
{
	struct accel_quota_table t;
	struct fs_text out = { 0 };
	char why[512];
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(accel_quota_parse("user:1000 slices=8 4g.48gb=1 jobs=4\ngroup:100 slices=16\n"
	                                   "default slices=8",
	                                   false, &t, why, sizeof(why)),
	                 0);
	assert_int_equal(fs_quota_text(&out, &t, jobs, 4), 0);
	assert_int_equal(fs_text_finish(&out, &text, &len), 0);
	assert_string_equal(text, "user:1000 slices=5/8 4g.48gb=1/1 jobs=2/4\n"
	                          "group:100 slices=6/16\n"
	                          "default slices=8\n"
	                          "user:1001 slices=1/8 (default)\n"
	                          "user:1002 slices=8/8 (default)\n");
	free(text);
	accel_quota_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_text_parses_and_round_trips),
		cmocka_unit_test(every_bad_line_is_refused_with_its_reason),
		cmocka_unit_test(use_is_per_principal),
		cmocka_unit_test(the_file_shows_limits_and_use),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
