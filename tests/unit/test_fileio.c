/* SPDX-License-Identifier: MIT */
/*
 * core/state/fileio.c: two threads replacing one file at once each leave their
 * whole text or the other's, never a blend (issue 34, observation 3: the
 * temporary file was named by the process alone, so both wrote into it).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/state/fileio.h"

#define ROUNDS 300

static char path[256];
static char texts[2][4096];

static void *writer(void *arg)
{
	const char *text = arg;

	for (int i = 0; i < ROUNDS; i++)
		assert_int_equal(accel_durable_write(path, text, strlen(text), 0600), 0);
	return NULL;
}

static void test_concurrent_replacements_never_blend(void **state)
{
	char dir[] = "/tmp/accelfs-fileio-XXXXXX";
	pthread_t t[2];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/gpu0.layout", dir);
	/* Two texts of different lengths: a blend is the long one's tail after the short one. */
	memset(texts[0], 'a', 3000);
	memset(texts[1], 'b', 100);
	for (int round = 0; round < 5; round++) {
		char got[8192];
		size_t n;
		FILE *f;

		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&t[i], NULL, writer, texts[i]), 0);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		f = fopen(path, "r");
		assert_non_null(f);
		n = fread(got, 1, sizeof(got) - 1, f);
		fclose(f);
		got[n] = '\0';
		assert_true(!strcmp(got, texts[0]) || !strcmp(got, texts[1]));
	}
	unlink(path);
	assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_replacements_never_blend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
