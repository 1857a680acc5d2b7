/* SPDX-License-Identifier: MIT */
/*
 * The arbiter (barswap/bs_arbiter.c) over a simulated slot: the queue of holds
 * the filesystem parks its opens in.  A second handle on the same slot
 * plays "another process".
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "barswap/bs_arbiter.h"
#include "sim/barswap/bs_sim.h"
#include "tests/unit/bs_fixture.h"

#define MIB BS_FX_MIB
static const struct bs_sim_geometry geo = { .num_dies = 4, .vram_size = 1 * MIB };

/* Answers, in the order the arbiter gave them. */
struct record {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bs_waiter *who[16];
	int err[16];
	int n;
};

struct fixture {
	char dir[128];
	struct bs_arbiter *arb;
	struct record rec;
};

static void on_done(void *ctx, struct bs_waiter *w, int err)
{
	struct record *r = ctx;

	pthread_mutex_lock(&r->lock);
	if (r->n < 16) {
		r->who[r->n] = w;
		r->err[r->n] = err;
		r->n++;
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/*
 * Wait until n answers have come: up to 3 s when n are expected, and 200 ms
 * when checking that no more come (the caller expects fewer than n).
 */
static int answers_within(struct fixture *f, int n, long ms)
{
	struct timespec until;
	int got;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&f->rec.lock);
	while (f->rec.n < n && pthread_cond_timedwait(&f->rec.cond, &f->rec.lock, &until) == 0)
		;
	got = f->rec.n;
	pthread_mutex_unlock(&f->rec.lock);
	return got;
}

static int answers(struct fixture *f, int n)
{
	return answers_within(f, n, 3000);
}

static int no_more_than(struct fixture *f, int n)
{
	return answers_within(f, n + 1, 200);
}

static struct bs_slot *open_slot(struct fixture *f)
{
	return bs_fx_open_slot(f->dir, &geo);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int err;

	if (!f || bs_fx_make_dir(f->dir, sizeof(f->dir), "bs-arb-test"))
		return -1;
	pthread_mutex_init(&f->rec.lock, NULL);
	pthread_cond_init(&f->rec.cond, NULL);
	f->arb = bs_arb_new(open_slot(f), on_done, NULL, &f->rec, &err);
	if (!f->arb)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int ret;

	bs_arb_free(f->arb);
	ret = bs_fx_remove_dir(f->dir);
	free(f);
	return ret;
}

static struct bs_arb_stats stats(struct fixture *f)
{
	struct bs_arb_stats st;

	bs_arb_stats(f->arb, &st);
	return st;
}

static void free_slot_is_granted_at_once(void **state)
{
	struct fixture *f = *state;
	struct bs_waiter w;
	bs_status st;
	void *vram;

	bs_waiter_init(&w);
	assert_int_equal(bs_arb_hold(f->arb, &w, 2, false), 0);
	assert_int_equal(stats(f).active, 2);
	assert_int_equal(stats(f).holders, 1);
	assert_int_equal(bs_slot_query(bs_arb_slot(f->arb), &st), 0);
	assert_true(st.owner);
	assert_int_equal(st.active_die, 2);
	/* I/O goes through the window while the hold stands */
	assert_int_equal(bs_arb_io_begin(f->arb, 2, w.epoch, &vram), 0);
	memcpy(vram, "two", 4);
	bs_arb_io_end(f->arb);
	assert_int_equal(bs_arb_io_begin(f->arb, 1, w.epoch, &vram), -ENODEV); /* not that die */
	bs_arb_drop(f->arb, 2, w.epoch);
	assert_int_equal(stats(f).active, -1);
	/* the slot itself is released: another handle gets it without waiting */
	{
		struct bs_slot *other = open_slot(f);
		assert_int_equal(bs_slot_acquire(other, 2, BS_NONBLOCK, 0, NULL), 0);
		assert_int_equal(bs_slot_window(other, 2, &vram), 0);
		assert_string_equal(vram, "two");
		bs_slot_close(other);
	}
	assert_int_equal(no_more_than(f, 0), 0); /* nothing was parked, nothing answered */
}

static void errors_of_hold(void **state)
{
	struct fixture *f = *state;
	struct bs_waiter w;

	bs_waiter_init(&w);
	assert_int_equal(bs_arb_hold(f->arb, &w, 4, false), -EINVAL);
	/* cancelled before it could park: the hold is refused with EINTR */
	bs_waiter_init(&w);
	assert_false(bs_arb_cancel(f->arb, &w));
	assert_int_equal(bs_arb_hold(f->arb, &w, 1, false), -EINTR);
	assert_int_equal(stats(f).active, -1);
}

static void openers_of_one_die_share(void **state)
{
	struct fixture *f = *state;
	struct bs_waiter a, b, c;

	bs_waiter_init(&a);
	bs_waiter_init(&b);
	bs_waiter_init(&c);
	assert_int_equal(bs_arb_hold(f->arb, &a, 0, false), 0);
	assert_int_equal(bs_arb_hold(f->arb, &b, 0, true), 0); /* even non-blocking */
	assert_int_equal(a.epoch, b.epoch);
	assert_int_equal(stats(f).holders, 2);
	assert_int_equal(bs_arb_hold(f->arb, &c, 1, true), -EAGAIN);
	bs_arb_drop(f->arb, 0, a.epoch);
	assert_int_equal(stats(f).active, 0);
	assert_int_equal(stats(f).holders, 1);
	bs_arb_drop(f->arb, 0, b.epoch);
	assert_int_equal(stats(f).active, -1);
	/* a second drop of the same epoch is not a hold to give back */
	bs_arb_drop(f->arb, 0, b.epoch);
	assert_int_equal(stats(f).holders, 0);
}

static void fifo_of_three_waiters(void **state)
{
	struct fixture *f = *state;
	struct bs_waiter first, w[3];

	bs_waiter_init(&first);
	assert_int_equal(bs_arb_hold(f->arb, &first, 0, false), 0);
	for (int i = 0; i < 3; i++) {
		bs_waiter_init(&w[i]);
		assert_int_equal(bs_arb_hold(f->arb, &w[i], (uint32_t)i + 1, false), 1);
	}
	assert_int_equal(stats(f).waiters, 3);
	bs_arb_drop(f->arb, 0, first.epoch);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(answers(f, i + 1), i + 1);
		assert_ptr_equal(f->rec.who[i], &w[i]);
		assert_int_equal(f->rec.err[i], 0);
		assert_int_equal(stats(f).active, i + 1);
		assert_int_equal(stats(f).holders, 1);
		assert_int_equal(stats(f).waiters, 2 - i);
		/* nobody else is answered while this one holds */
		assert_int_equal(no_more_than(f, i + 1), i + 1);
		bs_arb_drop(f->arb, (uint32_t)i + 1, w[i].epoch);
	}
	assert_int_equal(stats(f).active, -1);
}

static void waiters_for_the_granted_die_come_together(void **state)
{
	struct fixture *f = *state;
	struct bs_waiter first, a, b, c;

	bs_waiter_init(&first);
	bs_waiter_init(&a);
	bs_waiter_init(&b);
	bs_waiter_init(&c);
	assert_int_equal(bs_arb_hold(f->arb, &first, 0, false), 0);
	assert_int_equal(bs_arb_hold(f->arb, &a, 1, false), 1);
	assert_int_equal(bs_arb_hold(f->arb, &b, 2, false), 1);
	assert_int_equal(bs_arb_hold(f->arb, &c, 1, false), 1);
	bs_arb_drop(f->arb, 0, first.epoch);
	assert_int_equal(answers(f, 2), 2);
	assert_ptr_equal(f->rec.who[0], &a);
	assert_ptr_equal(f->rec.who[1], &c);
	assert_int_equal(stats(f).holders, 2);
	assert_int_equal(stats(f).waiters, 1);
	bs_arb_drop(f->arb, 1, a.epoch);
	assert_int_equal(no_more_than(f, 2), 2);
	bs_arb_drop(f->arb, 1, c.epoch);
	assert_int_equal(answers(f, 3), 3);
	assert_ptr_equal(f->rec.who[2], &b);
	bs_arb_drop(f->arb, 2, b.epoch);
}

static void cancelled_waiter_leaves_the_queue(void **state)
{
	struct fixture *f = *state;
	struct bs_waiter first, a, b;

	bs_waiter_init(&first);
	bs_waiter_init(&a);
	bs_waiter_init(&b);
	assert_int_equal(bs_arb_hold(f->arb, &first, 0, false), 0);
	assert_int_equal(bs_arb_hold(f->arb, &a, 1, false), 1);
	assert_int_equal(bs_arb_hold(f->arb, &b, 2, false), 1);
	assert_true(bs_arb_cancel(f->arb, &a));
	assert_false(bs_arb_cancel(f->arb, &a)); /* once */
	assert_int_equal(stats(f).waiters, 1);
	bs_arb_drop(f->arb, 0, first.epoch);
	assert_int_equal(answers(f, 1), 1);
	assert_ptr_equal(f->rec.who[0], &b);
	assert_false(bs_arb_cancel(f->arb, &b)); /* answered already */
	assert_int_equal(no_more_than(f, 1), 1); /* and a never was */
	bs_arb_drop(f->arb, 2, b.epoch);
}

static void another_process_owns_the_slot(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *other = open_slot(f);
	struct bs_waiter w, nb;
	bs_status st;

	bs_waiter_init(&w);
	bs_waiter_init(&nb);
	assert_int_equal(bs_slot_acquire(other, 3, 0, 0, NULL), 0);
	assert_int_equal(bs_arb_hold(f->arb, &nb, 1, true), -EAGAIN);
	assert_int_equal(bs_arb_hold(f->arb, &w, 1, false), 1);
	assert_true(stats(f).acquiring);
	/* the arbiter's thread waits in the slot's own FIFO */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(bs_slot_query(other, &st), 0);
		if (st.waiters == 1)
			break;
		usleep(5000);
	}
	assert_int_equal(st.waiters, 1);
	assert_int_equal(no_more_than(f, 0), 0);
	assert_int_equal(bs_slot_release(other), 0);
	assert_int_equal(answers(f, 1), 1);
	assert_int_equal(f->rec.err[0], 0);
	assert_int_equal(stats(f).active, 1);
	assert_false(stats(f).acquiring);
	bs_arb_drop(f->arb, 1, w.epoch);
	bs_slot_close(other);
}

static void waiter_gone_before_the_slot_came(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *other = open_slot(f);
	struct bs_waiter w;
	bs_status st;

	bs_waiter_init(&w);
	assert_int_equal(bs_slot_acquire(other, 3, 0, 0, NULL), 0);
	assert_int_equal(bs_arb_hold(f->arb, &w, 1, false), 1);
	assert_true(bs_arb_cancel(f->arb, &w));
	assert_int_equal(bs_slot_release(other), 0);
	/* the arbiter got the slot for nobody: it gives it back */
	for (int i = 0; i < 200 && (stats(f).acquiring || stats(f).active >= 0); i++)
		usleep(5000);
	assert_int_equal(stats(f).active, -1);
	assert_false(stats(f).acquiring);
	assert_int_equal(bs_slot_query(other, &st), 0);
	assert_int_equal(st.active_die, -1);
	assert_int_equal(no_more_than(f, 0), 0);
	bs_slot_close(other);
}

static void quarantine_fails_waiters_and_revokes_holds(void **state)
{
	struct fixture *f = *state;
	struct bs_waiter h, w, again;
	void *vram;

	bs_waiter_init(&h);
	bs_waiter_init(&w);
	bs_waiter_init(&again);
	assert_int_equal(bs_arb_hold(f->arb, &h, 0, false), 0);
	assert_int_equal(bs_arb_hold(f->arb, &w, 2, false), 1);
	assert_int_equal(bs_arb_set_enabled(f->arb, 2, false), 0);
	assert_int_equal(answers(f, 1), 1);
	assert_int_equal(f->rec.err[0], -ENODEV);
	assert_int_equal(bs_arb_hold(f->arb, &again, 2, true), -ENODEV);
	/* the die in use: every hold on it is void */
	assert_int_equal(bs_arb_set_enabled(f->arb, 0, false), 0);
	assert_int_equal(bs_arb_io_begin(f->arb, 0, h.epoch, &vram), -ENODEV);
	assert_int_equal(stats(f).active, -1);
	bs_arb_drop(f->arb, 0, h.epoch); /* a revoked hold: nothing to give back */
	assert_int_equal(stats(f).holders, 0);
	bs_waiter_init(&again);
	assert_int_equal(bs_arb_hold(f->arb, &again, 0, false), -ENODEV);
	assert_int_equal(bs_arb_set_enabled(f->arb, 0, true), 0);
	bs_waiter_init(&again);
	assert_int_equal(bs_arb_hold(f->arb, &again, 0, false), 0);
	assert_int_equal(bs_arb_io_begin(f->arb, 0, again.epoch, &vram), 0);
	bs_arb_io_end(f->arb);
	bs_arb_drop(f->arb, 0, again.epoch);
}

static void io_fault_after_revocation_elsewhere(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *other = open_slot(f);
	struct bs_waiter h;

	bs_waiter_init(&h);
	assert_int_equal(bs_arb_hold(f->arb, &h, 1, false), 0);
	/* someone else quarantines our die: we learn it when a copy faults */
	assert_int_equal(bs_slot_set_enabled(other, 1, false), 0);
	assert_int_equal(bs_arb_io_fault(f->arb, 1, h.epoch), -ENODEV);
	assert_int_equal(stats(f).active, -1);
	bs_slot_close(other);
}

static void shutdown_answers_the_parked(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *other = open_slot(f);
	struct bs_waiter w, x;

	bs_waiter_init(&w);
	bs_waiter_init(&x);
	assert_int_equal(bs_slot_acquire(other, 0, 0, 0, NULL), 0);
	assert_int_equal(bs_arb_hold(f->arb, &w, 1, false), 1); /* the thread waits in the slot */
	assert_int_equal(bs_arb_hold(f->arb, &x, 2, false), 1);
	usleep(20000);
	bs_arb_free(f->arb); /* must take its thread out of the wait */
	f->arb = NULL;
	assert_int_equal(answers(f, 2), 2);
	assert_int_equal(f->rec.err[0], -ESHUTDOWN);
	assert_int_equal(f->rec.err[1], -ESHUTDOWN);
	bs_slot_close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(free_slot_is_granted_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(errors_of_hold, setup, teardown),
		cmocka_unit_test_setup_teardown(openers_of_one_die_share, setup, teardown),
		cmocka_unit_test_setup_teardown(fifo_of_three_waiters, setup, teardown),
		cmocka_unit_test_setup_teardown(waiters_for_the_granted_die_come_together, setup, teardown),
		cmocka_unit_test_setup_teardown(cancelled_waiter_leaves_the_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(another_process_owns_the_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(waiter_gone_before_the_slot_came, setup, teardown),
		cmocka_unit_test_setup_teardown(quarantine_fails_waiters_and_revokes_holds, setup, teardown),
		cmocka_unit_test_setup_teardown(io_fault_after_revocation_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(shutdown_answers_the_parked, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
