/* SPDX-License-Identifier: MIT */
/*
 * core/state/intent.c and core/state/intent_slots.c: an intent is a slot of the card's
 * file, written in place; what a crash can leave (a slot torn mid-write, a
 * clear that never reached the disk, the file's first making cut short)
 * loads as what it is; a card with no slot free, and an intent an earlier
 * accelfs wrote as a file of its own, keep working; an intent of another
 * boot names nothing (the instance it was about died with that kernel).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/driver/boot_id.h"
#include "core/state/fileio.h"
#include "core/state/intent.h"
#include "core/state/intent_slots.h"

#define FAMILY "ppu"
#define CARD "GPU-0000-test"

static char state[64];
static char card_dir[PATH_MAX];
static char slots[PATH_MAX + 16];

static int setup(void **st)
{
	(void)st;
	snprintf(state, sizeof(state), "/tmp/accelfs-intent-XXXXXX");
	assert_non_null(mkdtemp(state));
	assert_int_equal(accel_record_dir(card_dir, sizeof(card_dir), state, FAMILY, CARD), 0);
	snprintf(slots, sizeof(slots), "%s/%s", card_dir, ACCEL_SLOTS_FILE);
	return 0;
}

static int teardown(void **st)
{
	char cmd[PATH_MAX];

	(void)st;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static struct accel_intent intent(const char *job, unsigned start)
{
	struct accel_intent in = { .profile_id = 5, .placement = { start, 4 }, .gi = UINT_MAX, .created = 1700000000 };

	snprintf(in.job, sizeof(in.job), "%s", job);
	return in;
}

static void write_ok(const char *job, unsigned start)
{
	struct accel_intent in = intent(job, start);
	char why[256];

	assert_int_equal(accel_intent_write(state, FAMILY, CARD, &in, why, sizeof(why)), 0);
}

static void remove_ok(const char *job, unsigned start, bool durable)
{
	char why[256];

	assert_int_equal(accel_intent_remove(state, FAMILY, CARD, job, start, durable, why, sizeof(why)), 0);
}

/* The card's intents, by "job@start" in load order, into got; the number of bad ones. */
static size_t load(char *got, size_t len)
{
	struct accel_intent *in = NULL;
	struct accel_record_bad *bad = NULL;
	size_t n = 0, n_bad = 0;

	assert_int_equal(accel_intent_load_card(state, FAMILY, CARD, &in, &n, &bad, &n_bad), 0);
	got[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t at = strlen(got);
		snprintf(got + at, len - at, "%s%s@%u", at ? " " : "", in[i].job, in[i].placement.start);
	}
	free(in);
	free(bad);
	return n_bad;
}

static size_t count_files(void)
{
	char cmd[PATH_MAX + 64], out[32] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", card_dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	return (size_t)atoi(out);
}

/* Written, loaded, removed: one file for the card, whatever the number of carves. */
static void test_round_trip_in_one_file(void **st)
{
	char got[1024];

	(void)st;
	write_ok("a", 0);
	write_ok("b", 4);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "a@0 b@4");
	assert_int_equal(count_files(), 1); /* the slots file, and nothing else */
	remove_ok("a", 0, false);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "b@4");
	/* a freed slot is taken again */
	write_ok("c", 0);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "c@0 b@4");
	remove_ok("b", 4, true);
	remove_ok("c", 0, false);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "");
	/* removing what is not there is no error: a spent intent may be dropped twice */
	remove_ok("c", 0, true);
	assert_int_equal(count_files(), 1);
}

static void overwrite(off_t at, const char *bytes, size_t n)
{
	int fd = open(slots, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, at), (ssize_t)n);
	close(fd);
}

/* A slot torn by a crash in its write never was (its carve had not asked the driver); the others stand. */
static void test_torn_slot_never_was(void **st)
{
	char got[1024];

	(void)st;
	write_ok("a", 0);
	write_ok("b", 4);
	/* half of b's slot as it was before (zeros), half written: a byte of its body lost */
	overwrite(ACCEL_SLOT_BYTES + 40, "\0", 1);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "a@0");
	/* its slot is free: the next intent takes it */
	write_ok("c", 8);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "a@0 c@8");
	/* a torn header as well */
	overwrite(3, "zz", 2);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "c@8");
}

/* A whole slot that does not parse is not a crash's: the card's own instances are then unknowable. */
static void test_whole_but_wrong_is_bad(void **st)
{
	char got[1024];
	int ret;

	(void)st;
	write_ok("a", 0);
	ret = accel_slots_put(slots, "b@4", "{ \"version\": 1 }");
	assert_int_equal(ret, 0);
	assert_int_equal(load(got, sizeof(got)), 1);
	assert_string_equal(got, "a@0");
}

/* Every slot taken: the next intent is a file of its own, as an earlier accelfs wrote them; both load, both go. */
static void test_full_card_and_files_of_their_own(void **st)
{
	char got[8192], job[32], path[PATH_MAX + 64];
	struct stat sb;

	(void)st;
	for (unsigned i = 0; i < ACCEL_SLOTS_MAX; i++) {
		snprintf(job, sizeof(job), "j%u", i);
		write_ok(job, i);
	}
	write_ok("over", 100);
	snprintf(path, sizeof(path), "%s/over@100.intent", card_dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_non_null(strstr(got, "j0@0 "));
	assert_non_null(strstr(got, "over@100"));
	remove_ok("over", 100, true);
	assert_int_equal(stat(path, &sb), -1);
	for (unsigned i = 0; i < ACCEL_SLOTS_MAX; i++) {
		snprintf(job, sizeof(job), "j%u", i);
		remove_ok(job, i, false);
	}
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "");
}

/* The slots file's first making cut short leaves a temporary file: removed at load, nothing else. */
static void test_cut_first_making(void **st)
{
	char got[64], path[PATH_MAX + 64];
	struct stat sb;

	(void)st;
	assert_int_equal(accel_mkdirs(card_dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s.tmp.1.2.3", card_dir, ACCEL_SLOTS_FILE);
	assert_int_equal(accel_durable_write(path, "\0\0\0", 3, 0600), 0);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "");
	assert_int_equal(stat(path, &sb), -1);
	write_ok("a", 0);
	assert_int_equal(load(got, sizeof(got)), 0);
	assert_string_equal(got, "a@0");
}

/* What does not fit a slot is refused by the slots, and kept in a file of its own by the intent. */
static void test_too_long_for_a_slot(void **st)
{
	char text[ACCEL_SLOT_BYTES];

	(void)st;
	assert_int_equal(accel_mkdirs(card_dir, 0700), 0);
	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	assert_int_equal(accel_slots_put(slots, "a@0", text), -ENOSPC);
	assert_int_equal(accel_slots_put(slots, "a\n@0", "{}"), -ENOSPC);
	assert_int_equal(accel_slots_clear(slots, "a@0", true), -ENOENT);
}

/* The one intent loaded, whatever its key; -1 when there is not exactly one. */
static int load_one_intent(struct accel_intent *out)
{
	struct accel_intent *in = NULL;
	struct accel_record_bad *bad = NULL;
	size_t n = 0, n_bad = 0;

	assert_int_equal(accel_intent_load_card(state, FAMILY, CARD, &in, &n, &bad, &n_bad), 0);
	if (n == 1 && !n_bad)
		*out = in[0];
	free(in);
	free(bad);
	return n == 1 && !n_bad ? 0 : -1;
}

/*
 * A carve cut between the driver's create and its record, then the node
 * rebooted: mig-parted makes an instance at the same placement at boot.
 * The intent, written in the other boot, names nothing, so that instance
 * is foreign (kept); one of this boot names its instance; one without a
 * boot (an accelfs before boot ids) matches as it did.
 */
static void test_an_intent_of_another_boot_names_nothing(void **st)
{
	struct accel_live_gi g = { .id = 3, .profile_id = 5, .placement = { 4, 4 }, .n_ci = 1 };
	struct accel_intent in = intent("cut", 4), got;
	const char *texts[] = {
		"{\"version\": 1, \"job\": \"cut\", \"profile_id\": 5, \"placement\": {\"start\": 4, \"size\": 4}, "
		"\"gi\": -1, \"uuid\": \"\", \"created\": 1700000000, \"boot\": \"00000000-0000-4000-8000-000000000000\"}",
		"{\"version\": 1, \"job\": \"cut\", \"profile_id\": 5, \"placement\": {\"start\": 4, \"size\": 4}, "
		"\"gi\": -1, \"uuid\": \"\", \"created\": 1700000000}",
	};
	char why[256];

	(void)st;
	if (!accel_boot_id()[0] || !strcmp(accel_boot_id(), "00000000-0000-4000-8000-000000000000"))
		skip();
	/* Written in this boot: it says so, and names the instance. */
	snprintf(in.boot, sizeof(in.boot), "%s", accel_boot_id());
	assert_int_equal(accel_intent_write(state, FAMILY, CARD, &in, why, sizeof(why)), 0);
	assert_int_equal(load_one_intent(&got), 0);
	assert_string_equal(got.boot, accel_boot_id());
	assert_true(accel_intent_of_this_boot(&got));
	assert_true(accel_intent_matches(&got, &g));
	remove_ok("cut", 4, true);

	/* Another boot's: loaded (so it is dropped as spent), matching nothing. */
	assert_int_equal(accel_mkdirs(card_dir, 0700), 0);
	assert_int_equal(accel_slots_put(slots, "cut@4", texts[0]), 0);
	assert_int_equal(load_one_intent(&got), 0);
	assert_false(accel_intent_of_this_boot(&got));
	assert_false(accel_intent_matches(&got, &g));
	remove_ok("cut", 4, true);

	/* No boot: as before boot ids. */
	assert_int_equal(accel_slots_put(slots, "cut@4", texts[1]), 0);
	assert_int_equal(load_one_intent(&got), 0);
	assert_true(accel_intent_of_this_boot(&got));
	assert_true(accel_intent_matches(&got, &g));
	remove_ok("cut", 4, true);

	/* A boot that is not a string is a bad intent, as any mistyped field is. */
	assert_int_not_equal(accel_intent_parse("{\"version\": 1, \"job\": \"cut\", \"profile_id\": 5, "
	                                        "\"placement\": {\"start\": 4, \"size\": 4}, \"gi\": -1, "
	                                        "\"uuid\": \"\", \"created\": 1, \"boot\": 7}",
	                                        "cut", 4, &got, why, sizeof(why)),
	                     0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip_in_one_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_slot_never_was, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whole_but_wrong_is_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_card_and_files_of_their_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_first_making, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_long_for_a_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_an_intent_of_another_boot_names_nothing, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
