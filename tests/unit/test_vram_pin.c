/* SPDX-License-Identifier: MIT */
/*
 * fs/vram_pin.c: which mappings a vram read may be replied from directly.
 * Ordinary memory can be taken by the kernel; a mapping it cannot take (here
 * one without access, which get_user_pages refuses as it refuses a
 * VM_PFNMAP window) must be answered "no", or a reader would get EIO.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/vram_pin.h"

static void ordinary_memory_is_pinnable(void **state)
{
	size_t len = 4 * (size_t)getpagesize();
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	(void)state;
	assert_true(m != MAP_FAILED);
	m[0] = 1;
	assert_true(fs_vram_pinnable(m));
	assert_true(fs_vram_pinnable(m + 3 * getpagesize()));
	/* Asked each time: access taken away, the answer changes. */
	assert_int_equal(mprotect(m, len, PROT_NONE), 0);
	assert_false(fs_vram_pinnable(m));
	munmap(m, len);
}

static void inaccessible_mapping_is_not(void **state)
{
	size_t len = 4 * (size_t)getpagesize();
	char *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)state;
	assert_true(m != MAP_FAILED);
	assert_false(fs_vram_pinnable(m));
	munmap(m, len);
}

static void many_mappings_each_answered(void **state)
{
	size_t len = (size_t)getpagesize();
	char *ok[12], *no[12];

	(void)state;
	/* Mappings come and go at addresses used before: each gets its own answer. */
	for (int i = 0; i < 12; i++) {
		ok[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		no[i] = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(ok[i] != MAP_FAILED && no[i] != MAP_FAILED);
		ok[i][0] = 1;
	}
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 12; i++) {
			assert_true(fs_vram_pinnable(ok[i]));
			assert_false(fs_vram_pinnable(no[i]));
		}
	for (int i = 0; i < 12; i++) {
		munmap(ok[i], len);
		munmap(no[i], len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ordinary_memory_is_pinnable),
		cmocka_unit_test(inaccessible_mapping_is_not),
		cmocka_unit_test(many_mappings_each_answered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
