/* SPDX-License-Identifier: MIT */
/*
 * The simulated slot (sim/barswap): the module's semantics and errnos, with
 * handles in threads of this process and in forked children.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "barswap/bs_guard.h"
#include "sim/barswap/bs_sim.h"
#include "tests/unit/bs_fixture.h"

#define MIB BS_FX_MIB
static const struct bs_sim_geometry geo = { .num_dies = 4, .vram_size = 1 * MIB };

struct fixture {
	char dir[128];
};

static struct bs_slot *open_slot(struct fixture *f)
{
	return bs_fx_open_slot(f->dir, &geo);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || bs_fx_make_dir(f->dir, sizeof(f->dir), "bs-sim-test"))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int ret = bs_fx_remove_dir(f->dir);

	free(f);
	return ret;
}

/* ---- basics --------------------------------------------------------------------- */

static void query_and_die_info(void **state)
{
	struct bs_slot *s = open_slot(*state);
	bs_status st;
	bs_die_info d;

	assert_string_equal(s->ops->backend, "simulated");
	assert_int_equal(bs_slot_query(s, &st), 0);
	assert_int_equal(st.num_dies, 4);
	assert_int_equal(st.num_slots, 1);
	assert_int_equal(st.active_die, -1);
	assert_int_equal(st.open_files, 1);
	assert_int_equal(st.slot_size, MIB);
	assert_false(st.owner);
	assert_int_equal(bs_slot_die_info(s, 2, &d), 0);
	assert_int_equal(d.flags, BS_DIE_PRESENT | BS_DIE_ENABLED | BS_DIE_SIM);
	assert_string_equal(d.bus_id, "sim:2");
	assert_int_equal(d.vram_size, MIB);
	assert_int_equal(bs_slot_die_info(s, 4, &d), -EINVAL);
	bs_slot_close(s);
}

static void acquire_release_and_errnos(void **state)
{
	struct bs_slot *s = open_slot(*state);
	uint64_t size = 0;
	bs_status st;
	bs_die_info d;

	assert_int_equal(bs_slot_acquire(s, 4, 0, 0, &size), -EINVAL);
	assert_int_equal(bs_slot_release(s), -EPERM);
	assert_int_equal(bs_slot_acquire(s, 1, 0, 0, &size), 0);
	assert_int_equal(size, MIB);
	assert_int_equal(bs_slot_query(s, &st), 0);
	assert_true(st.owner);
	assert_int_equal(st.active_die, 1);
	assert_int_equal(st.owner_pid, getpid());
	assert_int_equal(st.swaps, 1);
	assert_int_equal(bs_slot_die_info(s, 1, &d), 0);
	assert_true(d.flags & BS_DIE_ACTIVE);
	assert_int_equal(d.acquires, 1);
	/* the owner moves the slot at will; the same die again is no swap */
	assert_int_equal(bs_slot_acquire(s, 2, BS_NONBLOCK, 0, NULL), 0);
	assert_int_equal(bs_slot_acquire(s, 2, BS_NONBLOCK, 0, NULL), 0);
	assert_int_equal(bs_slot_query(s, &st), 0);
	assert_int_equal(st.active_die, 2);
	assert_int_equal(st.swaps, 2);
	assert_int_equal(bs_slot_release(s), 0);
	assert_int_equal(bs_slot_release(s), -EPERM);
	assert_int_equal(bs_slot_query(s, &st), 0);
	assert_int_equal(st.active_die, -1);
	assert_false(st.owner);
	bs_slot_close(s);
}

static void mapping_is_accessible_only_while_owned(void **state)
{
	struct bs_slot *s = open_slot(*state);
	char buf[8] = "die-one";
	void *vram;

	assert_int_equal(bs_slot_window(s, 1, &vram), 0);
	assert_int_equal(bs_guarded_copy(vram, buf, sizeof(buf)), -EFAULT);
	assert_int_equal(bs_slot_acquire(s, 1, 0, 0, NULL), 0);
	assert_int_equal(bs_guarded_copy((char *)vram + MIB - sizeof(buf), buf, sizeof(buf)), 0);
	assert_int_equal(bs_slot_release(s), 0);
	/* a stale pointer faults: the guard turns that into EFAULT */
	assert_int_equal(bs_guarded_copy(buf, vram, sizeof(buf)), -EFAULT);
	assert_int_equal(bs_slot_acquire(s, 1, 0, 0, NULL), 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(bs_guarded_copy(buf, (char *)vram + MIB - sizeof(buf), sizeof(buf)), 0);
	assert_string_equal(buf, "die-one");
	bs_slot_close(s);
}

static void data_survives_other_dies_and_handles(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b;
	void *v0, *v1;

	assert_int_equal(bs_slot_window(a, 0, &v0), 0);
	assert_int_equal(bs_slot_window(a, 1, &v1), 0);
	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	memcpy(v0, "zero", 5);
	assert_int_equal(bs_slot_acquire(a, 1, 0, 0, NULL), 0);
	memcpy(v1, "one", 4);
	assert_int_equal(bs_slot_release(a), 0);
	bs_slot_close(a);
	/* another handle, opened afterwards, sees what the first one wrote to each die */
	b = open_slot(f);
	assert_int_equal(bs_slot_window(b, 0, &v0), 0);
	assert_int_equal(bs_slot_window(b, 1, &v1), 0);
	assert_int_equal(bs_slot_acquire(b, 0, 0, 0, NULL), 0);
	assert_string_equal(v0, "zero");
	assert_int_equal(bs_slot_acquire(b, 1, 0, 0, NULL), 0);
	assert_string_equal(v1, "one");
	bs_slot_close(b);
}

/* ---- waiting ---------------------------------------------------------------------- */

struct waiter {
	struct bs_slot *s;
	uint32_t die;
	unsigned flags;
	uint32_t timeout_ms;
	int ret;
	int order;      /* 1-based position among the grants */
	int saw_active; /* the active die the waiter saw once granted */
	unsigned hold_ms;
	pthread_t thread;
};

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static int order_next;

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	bs_status st;

	w->ret = bs_slot_acquire(w->s, w->die, w->flags, w->timeout_ms, NULL);
	if (!w->ret) {
		pthread_mutex_lock(&order_lock);
		w->order = ++order_next;
		pthread_mutex_unlock(&order_lock);
		bs_slot_query(w->s, &st);
		w->saw_active = st.owner ? st.active_die : -1;
		bs_fx_sleep_ms(w->hold_ms);
		bs_slot_release(w->s);
	}
	return NULL;
}

static void start_waiter(struct waiter *w)
{
	assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

static void fifo_three_waiters(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *owner = open_slot(f);
	struct waiter w[3];

	order_next = 0;
	assert_int_equal(bs_slot_acquire(owner, 0, 0, 0, NULL), 0);
	for (int i = 0; i < 3; i++) {
		w[i] = (struct waiter){ .s = open_slot(f), .die = (uint32_t)i + 1, .hold_ms = 20 };
		start_waiter(&w[i]);
		bs_fx_wait_for_waiters(owner, (uint32_t)i + 1); /* queued in this order */
	}
	/* A free slot with waiters queued is not up for grabs, even without blocking. */
	assert_int_equal(bs_slot_release(owner), 0);
	for (int i = 0; i < 3; i++) {
		pthread_join(w[i].thread, NULL);
		assert_int_equal(w[i].ret, 0);
		assert_int_equal(w[i].order, i + 1);
		assert_int_equal(w[i].saw_active, i + 1);
		bs_slot_close(w[i].s);
	}
	bs_slot_close(owner);
}

static void nonblock_and_busy_rules(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f), *c = open_slot(f);
	struct waiter w = { .die = 2, .hold_ms = 0 }, w2 = { .die = 3 };

	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	assert_int_equal(bs_slot_acquire(b, 1, BS_NONBLOCK, 0, NULL), -EAGAIN);
	/* one waiter per handle: a second thread waiting on the same handle gets EBUSY */
	w.s = b;
	start_waiter(&w);
	bs_fx_wait_for_waiters(a, 1);
	w2.s = b;
	waiter_main(&w2);
	assert_int_equal(w2.ret, -EBUSY);
	/* the slot freed while someone waits goes to the waiter, not to a non-blocking newcomer */
	assert_int_equal(bs_slot_release(a), 0);
	pthread_join(w.thread, NULL);
	assert_int_equal(w.ret, 0);
	assert_int_equal(bs_slot_acquire(c, 1, BS_NONBLOCK, 0, NULL), 0);
	bs_slot_close(a);
	bs_slot_close(b);
	bs_slot_close(c);
}

static void timeout_leaves_the_queue(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f);
	struct timespec t0, t1;
	bs_status st;
	double waited;

	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(bs_slot_acquire(b, 1, 0, 150, NULL), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(waited >= 0.14 && waited < 2.0);
	assert_int_equal(bs_slot_query(a, &st), 0);
	assert_int_equal(st.waiters, 0);
	bs_slot_close(a);
	bs_slot_close(b);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void signal_gives_eintr_even_with_sa_restart(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f);
	struct waiter w = { .s = open_slot(f), .die = 1 };
	struct sigaction sa;
	bs_status st;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART; /* the module never restarts ACQUIRE: the place in the queue would be lost */
	sigaction(SIGUSR1, &sa, NULL);
	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	start_waiter(&w);
	bs_fx_wait_for_waiters(a, 1);
	pthread_kill(w.thread, SIGUSR1);
	pthread_join(w.thread, NULL);
	assert_int_equal(w.ret, -EINTR);
	assert_int_equal(bs_slot_query(a, &st), 0);
	assert_int_equal(st.waiters, 0);
	/* the queue is clean: the slot, once free, is free */
	assert_int_equal(bs_slot_release(a), 0);
	assert_int_equal(bs_slot_acquire(a, 3, BS_NONBLOCK, 0, NULL), 0);
	bs_slot_close(a);
	bs_slot_close(w.s);
}

/* ---- death ------------------------------------------------------------------------- */

/* A child that opens its own handle, acquires die (or waits for it), says so on fd, and sleeps. */
static pid_t spawn_holder(struct fixture *f, uint32_t die, int *ready_fd)
{
	int p[2];
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char err[256];
		int ret;
		struct bs_slot *s = bs_slot_sim_open(f->dir, &geo, &ret, err, sizeof(err));
		char c = 'x';
		close(p[0]);
		if (!s)
			_exit(1);
		if (write(p[1], &c, 1) != 1) /* opened: about to acquire */
			_exit(1);
		if (bs_slot_acquire(s, die, 0, 0, NULL))
			_exit(1);
		if (write(p[1], &c, 1) != 1) /* acquired */
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	*ready_fd = p[0];
	return pid;
}

static void killed_owner_releases(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f);
	int fd, status;
	char c;
	pid_t pid = spawn_holder(f, 2, &fd);
	bs_status st;

	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(bs_slot_query(a, &st), 0);
	assert_int_equal(st.active_die, 2);
	assert_int_equal(st.owner_pid, pid);
	assert_int_equal(bs_slot_acquire(a, 0, BS_NONBLOCK, 0, NULL), -EAGAIN);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(fd);
	/* the dead owner's slot is taken back: a blocking acquire gets it, and at once */
	assert_int_equal(bs_slot_acquire(a, 0, 0, 2000, NULL), 0);
	assert_int_equal(bs_slot_query(a, &st), 0);
	assert_int_equal(st.active_die, 0);
	assert_int_equal(st.open_files, 1);
	bs_slot_close(a);
}

static void killed_waiter_leaves_the_queue(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f);
	int fd, status;
	char c;
	pid_t pid;
	bs_status st;

	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	pid = spawn_holder(f, 3, &fd);
	assert_int_equal(read(fd, &c, 1), 1);
	bs_fx_wait_for_waiters(a, 1);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(fd);
	/* the slot does not go to the dead waiter */
	assert_int_equal(bs_slot_release(a), 0);
	assert_int_equal(bs_slot_query(a, &st), 0);
	assert_int_equal(st.active_die, -1);
	assert_int_equal(st.waiters, 0);
	assert_int_equal(bs_slot_acquire(b, 1, BS_NONBLOCK, 0, NULL), 0);
	bs_slot_close(a);
	bs_slot_close(b);
}

static void closing_the_owner_hands_on(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f);
	struct waiter w = { .s = open_slot(f), .die = 1 };

	order_next = 0;
	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	start_waiter(&w);
	bs_fx_wait_for_waiters(a, 1);
	bs_slot_close(a); /* closing releases */
	pthread_join(w.thread, NULL);
	assert_int_equal(w.ret, 0);
	assert_int_equal(w.saw_active, 1);
	bs_slot_close(w.s);
}

/* ---- quarantine ---------------------------------------------------------------------- */

static void quarantine_fails_waiters_and_revokes_the_owner(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f);
	struct waiter w = { .s = open_slot(f), .die = 2 };
	char buf[4] = "abc";
	void *vram;
	bs_status st;
	bs_die_info d;

	assert_int_equal(bs_slot_set_enabled(a, 9, false), -EINVAL);
	/* the owner holds die 1; a waiter waits for die 2 */
	assert_int_equal(bs_slot_window(b, 1, &vram), 0);
	assert_int_equal(bs_slot_acquire(b, 1, 0, 0, NULL), 0);
	start_waiter(&w);
	bs_fx_wait_for_waiters(a, 1);
	assert_int_equal(bs_slot_set_enabled(a, 2, false), 0);
	pthread_join(w.thread, NULL);
	assert_int_equal(w.ret, -ENODEV);
	assert_int_equal(bs_slot_acquire(a, 2, BS_NONBLOCK, 0, NULL), -ENODEV);
	assert_int_equal(bs_slot_die_info(a, 2, &d), 0);
	assert_false(d.flags & BS_DIE_ENABLED);
	/* quarantining the active die revokes it: mapping closed off, REVOKED, then ENODEV once */
	assert_int_equal(bs_guarded_copy(vram, buf, sizeof(buf)), 0);
	assert_int_equal(bs_slot_set_enabled(a, 1, false), 0);
	assert_int_equal(bs_guarded_copy(vram, buf, sizeof(buf)), -EFAULT);
	assert_int_equal(bs_slot_query(b, &st), 0);
	assert_true(st.revoked);
	assert_false(st.owner);
	assert_int_equal(st.active_die, -1);
	assert_int_equal(bs_slot_release(b), -ENODEV);
	assert_int_equal(bs_slot_release(b), -EPERM);
	/* re-enabled, it works again, with its data */
	assert_int_equal(bs_slot_set_enabled(a, 1, true), 0);
	assert_int_equal(bs_slot_acquire(b, 1, 0, 0, NULL), 0);
	assert_memory_equal(vram, "abc", 4);
	bs_slot_close(a);
	bs_slot_close(b);
	bs_slot_close(w.s);
}

/* ---- shape ---------------------------------------------------------------------------- */

static void geometry_reshape_only_when_unused(void **state)
{
	struct fixture *f = *state;
	struct bs_sim_geometry other = { .num_dies = 2, .vram_size = 2 * MIB };
	struct bs_slot *a = open_slot(f), *b;
	char err[256];
	int ret;
	bs_status st;

	b = bs_slot_sim_open(f->dir, &other, &ret, err, sizeof(err));
	assert_null(b);
	assert_int_equal(ret, -EBUSY);
	assert_non_null(strstr(err, "open"));
	/* without a geometry: whatever is there */
	b = bs_slot_sim_open(f->dir, NULL, &ret, err, sizeof(err));
	assert_non_null(b);
	assert_int_equal(bs_slot_query(b, &st), 0);
	assert_int_equal(st.num_dies, 4);
	bs_slot_close(b);
	bs_slot_close(a);
	b = bs_slot_sim_open(f->dir, &other, &ret, err, sizeof(err));
	assert_non_null(b);
	assert_int_equal(bs_slot_query(b, &st), 0);
	assert_int_equal(st.num_dies, 2);
	assert_int_equal(st.slot_size, 2 * MIB);
	bs_slot_close(b);
}

static void topology_section(void **state)
{
	struct fixture *f = *state;
	struct bs_sim_geometry g;
	char path[256], err[256];
	FILE *fp;

	assert_int_equal(bs_sim_geometry_load(NULL, &g, err, sizeof(err)), 0);
	assert_int_equal(g.num_dies, 16);
	assert_int_equal(g.vram_size, 64 * MIB);
	snprintf(path, sizeof(path), "%s/t.json", f->dir);
	fp = fopen(path, "w");
	fputs("{\"thead\": {\"count\": 1}, \"barswap\": {\"dies\": 3, \"vram_mib\": 8}}", fp);
	fclose(fp);
	assert_int_equal(bs_sim_geometry_load(path, &g, err, sizeof(err)), 0);
	assert_int_equal(g.num_dies, 3);
	assert_int_equal(g.vram_size, 8 * MIB);
	fp = fopen(path, "w");
	fputs("{\"barswap\": {\"dies\": 65}}", fp);
	fclose(fp);
	assert_int_equal(bs_sim_geometry_load(path, &g, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "barswap.dies"));
	fp = fopen(path, "w");
	fputs("{\"thead\": {\"count\": 1}}", fp);
	fclose(fp);
	assert_int_equal(bs_sim_geometry_load(path, &g, err, sizeof(err)), 0);
	assert_int_equal(g.num_dies, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(query_and_die_info, setup, teardown),
		cmocka_unit_test_setup_teardown(acquire_release_and_errnos, setup, teardown),
		cmocka_unit_test_setup_teardown(mapping_is_accessible_only_while_owned, setup, teardown),
		cmocka_unit_test_setup_teardown(data_survives_other_dies_and_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(fifo_three_waiters, setup, teardown),
		cmocka_unit_test_setup_teardown(nonblock_and_busy_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(timeout_leaves_the_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(signal_gives_eintr_even_with_sa_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(killed_owner_releases, setup, teardown),
		cmocka_unit_test_setup_teardown(killed_waiter_leaves_the_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(closing_the_owner_hands_on, setup, teardown),
		cmocka_unit_test_setup_teardown(quarantine_fails_waiters_and_revokes_the_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(geometry_reshape_only_when_unused, setup, teardown),
		cmocka_unit_test_setup_teardown(topology_section, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
