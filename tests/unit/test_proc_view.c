/* SPDX-License-Identifier: MIT */
/*
 * core/driver/proc_view.c: /proc's hidepid read from its mount options, and who
 * then sees a process's details, by the kernel's rule (issue 34, item 8).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/driver/proc_view.h"

static void test_mount_options(void **state)
{
	struct accel_proc_hiding h;

	(void)state;
	accel_proc_hiding_parse("rw", &h);
	assert_false(h.hides);
	assert_false(h.has_gid);
	accel_proc_hiding_parse("rw,hidepid=off", &h);
	assert_false(h.hides);
	accel_proc_hiding_parse("rw,hidepid=0,gid=5", &h);
	assert_false(h.hides);
	for (const char *const *o =
	             (const char *const[]){ "rw,hidepid=2", "rw,gid=27,hidepid=invisible", "hidepid=noaccess",
	                                    "rw,hidepid=ptraceable", "hidepid=1", "hidepid=4,subset=pid", NULL };
	     *o; o++) {
		accel_proc_hiding_parse(*o, &h);
		assert_true(h.hides);
	}
	accel_proc_hiding_parse("rw,gid=27,hidepid=invisible", &h);
	assert_true(h.has_gid);
	assert_int_equal(h.gid, 27);
	accel_proc_hiding_parse("rw,gid=x,hidepid=invisible", &h);
	assert_false(h.has_gid);
}

static const struct accel_proc_owner owned_by_1000 = { .known = true,
	                                               .uid = { 1000, 1000, 1000 },
	                                               .gid = { 100, 100, 100 },
	                                               .dumpable = true };

static void test_who_sees(void **state)
{
	struct accel_proc_hiding hides = { .hides = true, .has_gid = true, .gid = 27 }, open = { 0 };
	struct accel_viewer owner = { .uid = 1000, .gid = 100 }, other = { .uid = 1001, .gid = 100 };
	struct accel_viewer tracer = { .uid = 1001, .gid = 1001, .ptrace = true };
	struct accel_viewer member = { .uid = 1001, .gid = 1001, .groups = { 4, 27 }, .n_groups = 2 };
	struct accel_proc_owner o = owned_by_1000;
	struct accel_proc_gate g;

	(void)state;
	accel_proc_gate_of(&open, &other, &g); /* no hidepid: everyone sees everything */
	assert_true(accel_proc_gate_lets(&g, &o));
	accel_proc_gate_of(&open, NULL, &g);
	assert_true(accel_proc_gate_lets(&g, &o));
	accel_proc_gate_of(&hides, NULL, &g); /* nobody in particular: nothing */
	assert_false(accel_proc_gate_lets(&g, &o));
	accel_proc_gate_of(&hides, &other, &g);
	assert_false(accel_proc_gate_lets(&g, &o));
	accel_proc_gate_of(&hides, &tracer, &g);
	assert_true(accel_proc_gate_lets(&g, &o));
	accel_proc_gate_of(&hides, &member, &g);
	assert_true(accel_proc_gate_lets(&g, &o));
	accel_proc_gate_of(&hides, &owner, &g);
	assert_true(accel_proc_gate_lets(&g, &o));
	/* the owner's, but set-uid to another saved uid, or another group, or not dumpable: as the kernel, hidden */
	o.uid[2] = 0;
	assert_false(accel_proc_gate_lets(&g, &o));
	o = owned_by_1000;
	o.gid[1] = 101;
	assert_false(accel_proc_gate_lets(&g, &o));
	o = owned_by_1000;
	o.dumpable = false;
	assert_false(accel_proc_gate_lets(&g, &o));
	o = owned_by_1000;
	o.known = false; /* gone: /proc cannot say whose */
	assert_false(accel_proc_gate_lets(&g, &o));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_options),
		cmocka_unit_test(test_who_sees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
