/* SPDX-License-Identifier: MIT */
/*
 * One file and one lock per card (docs/simulator.md, "Storage"): a change
 * writes its own card's file and nothing else; a card another process has
 * locked holds up no other card, in that process or in this one; another
 * process's change is what the next call on that card answers; a "*"
 * fault still counts calls in one order across cards and threads; and a
 * state directory of a format or layout we do not read is refused with a
 * message saying what to do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/state/record.h"
#include "tests/sim/sim_fixture.h"

#define ID_4G48GB 5 /* the built-in T-Head 4g profile: placements {0,4}:4 */
#define CARDS 16    /* the built-in node's PPUs */

static mig_gpu_instance_t carve(struct mig_lib *lib, mig_device_t dev, unsigned start)
{
	mig_gpu_instance_placement_t pl = { start, 4 };
	mig_gpu_instance_t gi = NULL;

	assert_int_equal(lib->DeviceCreateGpuInstanceWithPlacement(dev, ID_4G48GB, &pl, &gi), MIG_SUCCESS);
	return gi;
}

static void stat_rel(struct sim_fixture *fx, const char *rel, struct stat *st)
{
	char path[PATH_MAX];

	assert_int_equal(stat(fx_path(fx, path, rel), st), 0);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* A change writes its card's file alone: no other card's, not the node's. */
static void test_change_writes_one_card(void **state)
{
	struct sim_fixture *fx = *state;
	struct stat before[CARDS], hw[CARDS], node, now;
	char rel[64];

	for (unsigned c = 0; c < CARDS; c++) {
		snprintf(rel, sizeof(rel), "cards/%u.json", c);
		stat_rel(fx, rel, &before[c]);
		snprintf(rel, sizeof(rel), "cards/%u.hw.json", c);
		stat_rel(fx, rel, &hw[c]);
	}
	stat_rel(fx, "node.json", &node);
	assert_int_equal(fx->lib.GpuInstanceDestroy(carve(&fx->lib, fx_device(fx, 5), 4)), MIG_SUCCESS);
	for (unsigned c = 0; c < CARDS; c++) {
		snprintf(rel, sizeof(rel), "cards/%u.json", c);
		stat_rel(fx, rel, &now);
		if (c == 5)
			assert_false(same_file(&before[c], &now));
		else
			assert_true(same_file(&before[c], &now));
		snprintf(rel, sizeof(rel), "cards/%u.hw.json", c);
		stat_rel(fx, rel, &now);
		assert_true(same_file(&hw[c], &now));
	}
	stat_rel(fx, "node.json", &now);
	assert_true(same_file(&node, &now));
	/* Arming a fault is the node's business: node.json, and no card. */
	stat_rel(fx, "cards/5.json", &before[5]);
	assert_int_equal(FX_CONTROL(fx, SimArmFault)("GpuInstanceDestroy", MIG_ERROR_UNKNOWN, 0, 1), MIG_SUCCESS);
	stat_rel(fx, "node.json", &now);
	assert_false(same_file(&node, &now));
	stat_rel(fx, "cards/5.json", &now);
	assert_true(same_file(&before[5], &now));
}

/* A child holding card `ordinal`'s byte lock until its pipe closes; returns its pid. */
struct blocked {
	struct sim_fixture *fx;
	mig_device_t dev;
	mig_return_t r;
	int done;
};

static void *change_blocked_card(void *arg)
{
	struct blocked *b = arg;
	mig_gpu_instance_t gi = NULL;
	mig_gpu_instance_placement_t pl = { 0, 4 };

	b->r = b->fx->lib.DeviceCreateGpuInstanceWithPlacement(b->dev, ID_4G48GB, &pl, &gi);
	if (!b->r)
		b->r = b->fx->lib.GpuInstanceDestroy(gi);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Valgrind runs one thread at a time, and version 3.19 does not let the
 * others run while one waits in fcntl(F_OFD_SETLKW): a thread of ours
 * waiting for a card held by a process that waits for us would stop the
 * whole test.  (In the daemon such a wait only stalls it until accel-smi's
 * call ends.)
 */
static bool under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

/*
 * Another process holds card 1.  Our reads of card 1's current copy need
 * no lock and answer.  A thread of ours changing card 1 waits for it (and
 * so does any other call of ours on card 1, behind that thread); meanwhile
 * card 0 carves and card 2 reads, in this process (with one lock for the
 * whole node, the alarm would end the test).
 */
static void test_locked_card_holds_up_no_other(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev0 = fx_device(fx, 0), dev1 = fx_device(fx, 1), dev2 = fx_device(fx, 2);
	struct blocked b = { .fx = fx, .dev = dev1 };
	bool waiter = !under_valgrind();
	unsigned cur, pend;
	pthread_t th;
	int release, status;
	pid_t holder;

	holder = fx_hold_lock(fx, 1 + 1, 1, &release); /* card 1's byte */
	alarm(30);
	assert_int_equal(fx->lib.DeviceGetMigMode(dev1, &cur, &pend), MIG_SUCCESS);
	if (waiter)
		assert_int_equal(pthread_create(&th, NULL, change_blocked_card, &b), 0);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(fx->lib.GpuInstanceDestroy(carve(&fx->lib, dev0, (unsigned)(i % 2) * 4)), MIG_SUCCESS);
		assert_int_equal(fx->lib.DeviceGetMigMode(dev2, &cur, &pend), MIG_SUCCESS);
	}
	/* Card 1 is still held: the thread cannot have got through. */
	assert_int_equal(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE), 0);
	close(release);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	if (waiter) {
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(b.r, MIG_SUCCESS);
	}
	alarm(0);
}

/* What another process makes or destroys on a card is what our next call on that card answers. */
static void test_next_call_sees_other_process(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 3);
	mig_gpu_instance_t gi;
	mig_gpu_instance_info_t info;
	unsigned remaining;
	int status;
	pid_t pid;

	assert_int_equal(fx->lib.DeviceGetGpuInstanceById(dev, 0, &gi), MIG_ERROR_NOT_FOUND);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mig_lib lib;
		mig_device_t d;
		mig_gpu_instance_placement_t pl = { 4, 4 };
		mig_gpu_instance_t g;
		char err[256];

		if (accel_family_open_lib(fx->family, fx->lib_path, &lib, err, sizeof(err)) ||
		    lib.DeviceGetHandleByIndex_v2(3, &d) ||
		    lib.DeviceCreateGpuInstanceWithPlacement(d, ID_4G48GB, &pl, &g))
			_exit(1);
		mig_lib_close(&lib);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceById(dev, 0, &gi), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceGetInfo(gi, &info), MIG_SUCCESS);
	assert_int_equal(info.placement.start, 4);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_4G48GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 1);
	/* And the other way round: our destroy is what another process sees. */
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_SUCCESS);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mig_lib lib;
		mig_device_t d;
		mig_gpu_instance_t g;
		char err[256];

		if (accel_family_open_lib(fx->family, fx->lib_path, &lib, err, sizeof(err)) ||
		    lib.DeviceGetHandleByIndex_v2(3, &d))
			_exit(1);
		_exit(lib.DeviceGetGpuInstanceById(d, 0, &g) == MIG_ERROR_NOT_FOUND ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
}

struct reader {
	struct sim_fixture *fx;
	mig_device_t dev;
	int failures;
	mig_return_t seen;
};

static void *read_many(void *arg)
{
	struct reader *rd = arg;
	unsigned cur, pend;

	for (int i = 0; i < 200; i++) {
		mig_return_t r = rd->fx->lib.DeviceGetMigMode(rd->dev, &cur, &pend);

		if (r) {
			rd->failures++;
			rd->seen = r;
		}
	}
	return NULL;
}

/*
 * "*" with --skip K is still the K-th call from now, whichever card and
 * thread makes it: two threads on two cards make 400 calls, exactly one
 * of them (the 151st) fails.  Then across processes: the calls of another
 * process on another card run the same skip down.
 */
static void test_any_fault_one_order(void **state)
{
	struct sim_fixture *fx = *state;
	/* The handles are looked up before the arming: from then on, only the reads count. */
	struct reader rd[2] = { { .fx = fx, .dev = fx_device(fx, 7) }, { .fx = fx, .dev = fx_device(fx, 8) } };
	accelsim_fault_t f;
	unsigned n = 1, count;
	pthread_t th[2];
	int status;
	pid_t pid;

	assert_int_equal(FX_CONTROL(fx, SimArmFault)("*", MIG_ERROR_IN_USE, 150, 1), MIG_SUCCESS);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, read_many, &rd[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(rd[0].failures + rd[1].failures, 1);
	assert_int_equal(rd[0].failures ? rd[0].seen : rd[1].seen, MIG_ERROR_IN_USE);
	assert_int_equal(FX_CONTROL(fx, SimGetFaults)(&f, &n), MIG_SUCCESS);
	assert_int_equal(f.fired, 1);
	assert_int_equal(f.skip, 0);

	assert_int_equal(FX_CONTROL(fx, SimArmFault)("*", MIG_ERROR_NOT_FOUND, 2, 1), MIG_SUCCESS);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mig_lib lib;
		mig_device_t d;
		unsigned c, p;
		char err[256];

		/* Init_v2 is spared; a handle and a read on card 9: the two calls the skip lets through. */
		if (accel_family_open_lib(fx->family, fx->lib_path, &lib, err, sizeof(err)) ||
		    lib.DeviceGetHandleByIndex_v2(9, &d) || lib.DeviceGetMigMode(d, &c, &p))
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
}

/* A node of 64 cards (a topology in sim/topologies' format): the last card carves like the first. */
static void test_many_cards(void **state)
{
	char topo[] = "/tmp/accelfs-sim-64.XXXXXX";
	struct sim_fixture fx;
	unsigned count;
	int fd = mkstemp(topo);

	(void)state;
	assert_true(fd >= 0);
	assert_true(dprintf(fd, "{ \"thead\": { \"count\": 64 }, \"nvidia\": null }\n") > 0);
	close(fd);
	fx_prepare(&fx, &accel_family_thead, topo);
	fx_open(&fx);
	assert_int_equal(fx.lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 64);
	assert_int_equal(fx.lib.GpuInstanceDestroy(carve(&fx.lib, fx_device(&fx, 63), 0)), MIG_SUCCESS);
	assert_true(fx_exists(&fx, "cards/63.json"));
	assert_true(fx_exists(&fx, "proc/driver/alixpu/capabilities/ppu63/mig"));
	fx_destroy(&fx);
	unlink(topo);
}

/* How many GPU instances of profile 0 another process sees on card 0. */
static unsigned gis_seen_elsewhere(struct sim_fixture *fx)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		mig_gpu_instance_t gis[16];
		struct mig_lib lib;
		mig_device_t d;
		unsigned n = 16;
		char err[256];

		if (accel_family_open_lib(fx->family, fx->lib_path, &lib, err, sizeof(err)) ||
		    lib.DeviceGetHandleByIndex_v2(0, &d) || lib.DeviceGetGpuInstances(d, 0, gis, &n))
			_exit(100);
		_exit((int)n);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return (unsigned)WEXITSTATUS(status);
}

/*
 * A card whose state outgrows a page is written by tmp + rename, one that
 * fits by one write over its page (sim_store.c): either way another process
 * reads what was written, on the way up and back down.
 */
static void test_card_file_outgrows_a_page(void **state)
{
	char topo[] = "/tmp/accelfs-sim-wide.XXXXXX", rel[] = "cards/0.json", path[PATH_MAX];
	mig_gpu_instance_t gis[16];
	mig_compute_instance_t ci;
	struct sim_fixture fx;
	struct stat st;
	int fd = mkstemp(topo);

	(void)state;
	assert_true(fd >= 0);
	assert_true(dprintf(fd, "{ \"nvidia\": null, \"thead\": { \"count\": 1, \"memory_slices\": 16, "
	                        "\"compute_slices\": 16, \"gi_profiles\": [ { \"index\": 0, \"id\": 0, "
	                        "\"name\": \"MIG 1g6gb\", \"slices\": 1, \"instances\": 16, \"memory_mib\": 6144, "
	                        "\"placements\": \"{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}:1\" } ], "
	                        "\"ci_profiles\": [ { \"index\": 0, \"id\": 0, \"slices\": 1 } ] } }\n") > 0);
	close(fd);
	fx_prepare(&fx, &accel_family_thead, topo);
	fx_open(&fx);
	for (unsigned i = 0; i < 16; i++) {
		mig_gpu_instance_placement_t pl = { i, 1 };

		assert_int_equal(fx.lib.DeviceCreateGpuInstanceWithPlacement(fx_device(&fx, 0), 0, &pl, &gis[i]),
		                 MIG_SUCCESS);
		assert_int_equal(fx.lib.GpuInstanceCreateComputeInstance(gis[i], 0, &ci), MIG_SUCCESS);
	}
	assert_int_equal(stat(fx_path(&fx, path, rel), &st), 0);
	assert_true(st.st_size > 4096);
	assert_int_equal(gis_seen_elsewhere(&fx), 16);
	for (unsigned i = 0; i < 16; i++) {
		mig_compute_instance_t cis[1];
		unsigned n = 1;

		assert_int_equal(fx.lib.GpuInstanceGetComputeInstances(gis[i], 0, cis, &n), MIG_SUCCESS);
		assert_int_equal(fx.lib.ComputeInstanceDestroy(cis[0]), MIG_SUCCESS);
		assert_int_equal(fx.lib.GpuInstanceDestroy(gis[i]), MIG_SUCCESS);
	}
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 4096);
	assert_int_equal(gis_seen_elsewhere(&fx), 0);
	fx_destroy(&fx);
	unlink(topo);
}

/* Open the library with stderr in a file; returns what accel_family_open_lib returned, and what was said. */
static int open_capturing(struct sim_fixture *fx, char *said, size_t len)
{
	char path[] = "/tmp/accelfs-sim-stderr.XXXXXX", err[512];
	int fd = mkstemp(path), saved = dup(2), ret;
	ssize_t got;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	ret = accel_family_open_lib(fx->family, fx->lib_path, &fx->lib, err, sizeof(err));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	got = pread(fd, said, len - 1, 0);
	said[got > 0 ? got : 0] = '\0';
	close(fd);
	unlink(path);
	if (!ret)
		fx->open = true;
	return ret;
}

/* A state directory of a format this simulator does not know is refused, and the message says what to do. */
static void test_refuse_unknown_format(void **state)
{
	struct sim_fixture fx;
	char said[2048], cmd[2 * PATH_MAX];

	(void)state;
	fx_prepare(&fx, &accel_family_thead, NULL);
	fx_open(&fx);
	fx_close(&fx);
	snprintf(cmd, sizeof(cmd), "sed -i 's/\"format\": 2/\"format\": 3/' '%s/node.json'", fx.vendor_root);
	assert_int_equal(system(cmd), 0);
	assert_int_not_equal(open_capturing(&fx, said, sizeof(said)), 0);
	assert_non_null(strstr(said, "node.json"));
	assert_non_null(strstr(said, "format 3"));
	assert_non_null(strstr(said, "remove"));
	fx_destroy(&fx);

	/* A state.json (an older simulator's layout) is not read, and nothing is made in its place. */
	fx_prepare(&fx, &accel_family_thead, NULL);
	assert_int_equal(accel_mkdirs(fx.vendor_root, 0755), 0);
	snprintf(cmd, sizeof(cmd), "echo '{\"format\": 7, \"vendor\": \"thead\"}' > '%s/state.json'", fx.vendor_root);
	assert_int_equal(system(cmd), 0);
	assert_int_not_equal(open_capturing(&fx, said, sizeof(said)), 0);
	assert_non_null(strstr(said, "state.json"));
	assert_non_null(strstr(said, "older layout"));
	assert_non_null(strstr(said, "remove"));
	assert_false(fx_exists(&fx, "node.json"));
	assert_true(fx_exists(&fx, "state.json"));
	fx_destroy(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_change_writes_one_card, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_locked_card_holds_up_no_other, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_next_call_sees_other_process, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_any_fault_one_order, fx_setup_thead, fx_teardown),
		cmocka_unit_test(test_many_cards),
		cmocka_unit_test(test_card_file_outgrows_a_page),
		cmocka_unit_test(test_refuse_unknown_format),
	};

	return cmocka_run_group_tests_name("sim_cards", tests, NULL, NULL);
}
