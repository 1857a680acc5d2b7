/* SPDX-License-Identifier: MIT */
/*
 * The CDI directory (core/state/cdi_dir.c): a file per job named for the daemon,
 * the sweep that removes only this daemon's stale files, and the claim that
 * keeps a second daemon out of the directory, naming the first.
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
#include <unistd.h>

#include "core/state/cdi_dir.h"

static char top[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/accelfs-cdi-dir-XXXXXX");
	return mkdtemp(top) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

static void touch(const char *dir, const char *name)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{}\n", f);
	fclose(f);
}

static void tag_names_the_state_directory(void **state)
{
	char a[ACCEL_CDI_TAG_LEN + 1], b[ACCEL_CDI_TAG_LEN + 1], again[ACCEL_CDI_TAG_LEN + 1];

	(void)state;
	accel_cdi_tag("/var/lib/accelfs", a);
	accel_cdi_tag("/var/lib/accelfs-sim", b);
	accel_cdi_tag("/var/lib/accelfs", again);
	assert_int_equal(strlen(a), ACCEL_CDI_TAG_LEN);
	assert_int_equal(strspn(a, "0123456789abcdef"), ACCEL_CDI_TAG_LEN);
	assert_string_equal(a, again); /* a restart finds its own files */
	assert_string_not_equal(a, b); /* another daemon's are not its own */
}

static void put_and_drop(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX * 2], text[64] = "";
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/put/cdi", top); /* not there yet: made by the first write */
	assert_int_equal(accel_cdi_put(dir, "0000abcd", "job1", "{\"kind\": 1}\n"), 0);
	assert_int_equal(accel_cdi_path(dir, "0000abcd", "job1", path, sizeof(path)), 0);
	assert_true(exists(dir, "accelfs-0000abcd-job1.json"));
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "{\"kind\": 1}\n");
	assert_int_equal(accel_cdi_put(dir, "0000abcd", "job1", "{}\n"), 0); /* replaced */
	assert_int_equal(accel_cdi_drop(dir, "0000abcd", "job1"), 0);
	assert_false(exists(dir, "accelfs-0000abcd-job1.json"));
	assert_int_equal(accel_cdi_drop(dir, "0000abcd", "job1"), 0); /* gone already: not an error */
	assert_int_equal(accel_cdi_path(dir, "0000abcd", "j", path, 20), -ENAMETOOLONG);
}

static bool keep_job1(void *ctx, const char *job)
{
	(*(unsigned *)ctx)++;
	return !strcmp(job, "job1") || !strcmp(job, "a-b.c");
}

static void sweep_takes_only_its_own(void **state)
{
	static const char *const kept[] = {
		"accelfs-0000abcd-job1.json",  "accelfs-0000abcd-a-b.c.json", /* published jobs */
		"accelfs-1234beef-job1.json",  "accelfs-1234beef-gone.json",  /* another daemon's */
		"accelfs-job-job1.json",       "vendor.json",                 /* a copied job spec, another vendor */
		ACCEL_CDI_CLAIM_FILE,          "accelfs-0000abcdjob9.json",   /* not a file of that tag */
		"accelfs-0000abc-x-gone.json", NULL,
	};
	static const char *const removed[] = { "accelfs-0000abcd-gone.json", "accelfs-0000abcd-job1.json.tmp.4242",
		                               "accelfs-0000abcd-a.yaml", ACCEL_CDI_LEGACY_FILE, NULL };
	struct accel_cdi_sweep sw;
	char dir[PATH_MAX];
	unsigned asked = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/sweep", top);
	assert_int_equal(mkdir(dir, 0755), 0);
	for (size_t i = 0; kept[i]; i++)
		touch(dir, kept[i]);
	for (size_t i = 0; removed[i]; i++)
		touch(dir, removed[i]);
	assert_int_equal(accel_cdi_sweep(dir, "0000abcd", keep_job1, &asked, &sw), 0);
	for (size_t i = 0; kept[i]; i++)
		assert_true(exists(dir, kept[i]));
	for (size_t i = 0; removed[i]; i++)
		assert_false(exists(dir, removed[i]));
	assert_int_equal(asked, 3);      /* job1, a-b.c, gone: the temporary file and the .yaml name no job */
	assert_int_equal(sw.removed, 3); /* the legacy spec is said apart */
	assert_int_equal(sw.failed, 0);
	assert_true(sw.legacy);
	assert_int_equal(sw.foreign, 2);
	assert_string_equal(sw.foreign_tag, "1234beef");
	/* a directory that is not there holds nothing */
	snprintf(dir, sizeof(dir), "%s/none", top);
	assert_int_equal(accel_cdi_sweep(dir, "0000abcd", keep_job1, &asked, &sw), 0);
	assert_int_equal(sw.removed + sw.foreign, 0);
}

static void one_daemon_per_directory(void **state)
{
	char dir[PATH_MAX], err[1024], want[64];
	int fd = -1, fd2 = -1;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/claimed/cdi", top);
	assert_int_equal(accel_cdi_claim(dir, "/var/lib/accelfs", "/accel", &fd, err, sizeof(err)), 0);
	assert_true(fd >= 0);
	assert_true(exists(dir, ACCEL_CDI_CLAIM_FILE));
	/* a second claim (another open file, as another process's) is refused, naming the holder */
	assert_int_equal(accel_cdi_claim(dir, "/tmp/other", "/mnt/other", &fd2, err, sizeof(err)), -EBUSY);
	assert_int_equal(fd2, -1);
	snprintf(want, sizeof(want), "accelfs pid %d (state directory /var/lib/accelfs, mounted on /accel)",
	         (int)getpid());
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "one daemon per CDI directory"));
	assert_non_null(strstr(err, "umount /accel"));
	assert_non_null(strstr(err, "--cdi-dir"));
	/* the holder renames itself after a fork; the refusal follows */
	accel_cdi_claim_note(fd, "/var/lib/accelfs", "/accel2");
	assert_int_equal(accel_cdi_claim(dir, "/tmp/other", "/mnt/other", &fd2, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "mounted on /accel2"));
	/* let go: the next daemon takes it */
	accel_cdi_claim_release(fd);
	assert_int_equal(accel_cdi_claim(dir, "/tmp/other", "/mnt/other", &fd2, err, sizeof(err)), 0);
	accel_cdi_claim_release(fd2);
	/* a directory that cannot be made: the errno and what to check */
	snprintf(dir, sizeof(dir), "%s/sweep/vendor.json/cdi", top);
	assert_int_equal(accel_cdi_claim(dir, "/s", "/m", &fd, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "check the CDI directory (--cdi-dir)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tag_names_the_state_directory),
		cmocka_unit_test(put_and_drop),
		cmocka_unit_test(sweep_takes_only_its_own),
		cmocka_unit_test(one_daemon_per_directory),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
