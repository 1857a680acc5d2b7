/* SPDX-License-Identifier: MIT */
/*
 * Lending and the lease on the simulated slot (sim/barswap/bs_sim_lend*.c)
 * and in the arbiter (barswap/bs_arb_lend.c): the module's errnos in the
 * module's order, a return that waits for the driver's user, the resident
 * policy, a lease that revokes a holder and hands the slot on, and one that
 * cannot take a die from a driver that holds on.  Separate handles on one
 * slot play separate processes.
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
#include "barswap/bs_guard.h"
#include "sim/barswap/bs_sim.h"
#include "tests/unit/bs_fixture.h"

#define MIB BS_FX_MIB

struct fixture {
	char dir[128];
	struct bs_sim_geometry geo;
	/* the arbiter's answers and notes */
	pthread_mutex_t lock;
	int answered, answer_err, revoked, revoke_err, expired_lent, returned;
	enum bs_waiter_kind answer_kind;
};

static struct bs_slot *open_slot(struct fixture *f)
{
	return bs_fx_open_slot(f->dir, &f->geo);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || bs_fx_make_dir(f->dir, sizeof(f->dir), "bs-lend-test"))
		return -1;
	f->geo = (struct bs_sim_geometry){ .num_dies = 4, .vram_size = 1 * MIB, .n_drivers = 3, .n_lend_drivers = 3 };
	strcpy(f->geo.drivers[0], "nvidia");
	strcpy(f->geo.drivers[1], "uio_pci_generic");
	strcpy(f->geo.drivers[2], "pci-stub");
	strcpy(f->geo.lend_drivers[0], "nvidia");
	strcpy(f->geo.lend_drivers[1], "uio_pci_generic");
	strcpy(f->geo.lend_drivers[2], "vfio-pci");
	pthread_mutex_init(&f->lock, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int ret = bs_fx_remove_dir(f->dir);

	pthread_mutex_destroy(&f->lock);
	free(f);
	return ret;
}

static uint32_t lend_state(struct bs_slot *s, uint32_t die)
{
	bs_die_lend l;

	assert_int_equal(bs_slot_die_lend(s, die, &l), 0);
	return l.state;
}

/* Can this handle touch die's memory now?  0, or -EFAULT (the mapping is closed off). */
static int touch(struct bs_slot *s, uint32_t die)
{
	void *vram;
	char c = 1;

	assert_int_equal(bs_slot_window(s, die, &vram), 0);
	return bs_guarded_copy(vram, &c, 1);
}

/* A thread that acquires die on its own handle, waiting. */
struct acquirer {
	pthread_t t;
	struct bs_slot *s;
	uint32_t die;
	int done; /* set (release) after ret: a reader that sees it (acquire) sees ret */
	int ret;
};

static void *acquirer_main(void *arg)
{
	struct acquirer *a = arg;

	a->ret = bs_slot_acquire(a->s, a->die, 0, 0, NULL);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void start_acquirer(struct acquirer *a, struct bs_slot *s, uint32_t die)
{
	a->s = s;
	a->die = die;
	a->done = 0;
	assert_int_equal(pthread_create(&a->t, NULL, acquirer_main, a), 0);
}

static bool done_within(int *flag, unsigned ms)
{
	for (unsigned i = 0; i < ms / 10 && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++)
		bs_fx_sleep_ms(10);
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/* ---- the simulated slot ---------------------------------------------------------- */

static void lend_checks_in_the_module_s_order(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f);
	bs_die_lend l;

	assert_int_equal(bs_slot_lend(a, 1, "nvidia"), -EPERM); /* not the owner */
	assert_int_equal(bs_slot_acquire(a, 1, 0, 0, NULL), 0);
	assert_int_equal(bs_slot_lend(a, 1, "pci-stub"), -EPERM); /* loaded, not allowed */
	assert_int_equal(bs_slot_lend(a, 9, "pci-stub"), -EPERM); /* the allowlist comes first */
	assert_int_equal(bs_slot_lend(a, 9, "nvidia"), -EINVAL);
	assert_int_equal(bs_slot_lend(a, 1, "vfio-pci"), -ENOENT); /* allowed, not loaded */
	assert_int_equal(bs_slot_lend(a, 2, "nvidia"), -EPERM);    /* not the die in the slot */
	assert_int_equal(bs_slot_lend(b, 1, "nvidia"), -EPERM);    /* not the owner */
	assert_int_equal(bs_slot_lend(a, 1, "bar_swap"), -EINVAL);
	assert_int_equal(bs_slot_lend(a, 1, ""), -EINVAL);
	assert_int_equal(touch(a, 1), 0);
	assert_int_equal(bs_slot_lend(a, 1, "nvidia"), 0);
	assert_int_equal(bs_slot_die_lend(a, 1, &l), 0);
	assert_int_equal(l.state, BS_LEND_LENT);
	assert_string_equal(l.driver, "nvidia");
	assert_int_equal(l.lender_pid, getpid());
	assert_int_equal(touch(a, 1), -EFAULT); /* the memory is the driver's */
	assert_int_equal(bs_slot_acquire(a, 2, 0, 0, NULL), -EBUSY);
	assert_int_equal(bs_slot_set_enabled(a, 1, false), -EBUSY);
	assert_int_equal(bs_slot_set_policy(a, 1, BS_POLICY_RESIDENT), -EBUSY);
	assert_int_equal(bs_slot_lend(a, 1, "nvidia"), 0);
	assert_int_equal(bs_slot_lend(a, 1, "uio_pci_generic"), -EBUSY);
	assert_int_equal(bs_slot_return(b, 1, 0), -EPERM);
	assert_int_equal(bs_slot_return(a, 1, 0), 0);
	assert_int_equal(lend_state(a, 1), BS_LEND_NONE);
	assert_int_equal(bs_slot_die_lend(a, 1, &l), 0);
	assert_string_equal(l.driver, "bar_swap");
	assert_int_equal(touch(a, 1), 0);
	assert_int_equal(bs_slot_return(a, 1, 0), 0); /* not lent: nothing to do */
	bs_slot_close(b);
	bs_slot_close(a);
}

static void release_waits_for_the_driver_s_user(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f);
	struct acquirer w;
	bs_lease_info li;
	char driver[BS_DRIVER_LEN];
	int user;

	assert_int_equal(bs_slot_acquire(a, 1, 0, 0, NULL), 0);
	assert_int_equal(bs_sim_driver_use(a, 1, driver, sizeof(driver), &user), -ENODEV); /* not lent */
	assert_int_equal(bs_slot_lend(a, 1, "uio_pci_generic"), 0);
	assert_int_equal(bs_sim_driver_use(a, 1, driver, sizeof(driver), &user), 0);
	assert_string_equal(driver, "uio_pci_generic");
	start_acquirer(&w, b, 2);
	bs_fx_wait_for_waiters(a, 1);
	assert_int_equal(bs_slot_return(a, 1, BS_NONBLOCK), -EINPROGRESS);
	assert_int_equal(bs_slot_release(a), 0); /* the owner leaves; the die is on its way back */
	assert_int_equal(bs_slot_lease(a, &li), 0);
	assert_int_equal(li.lent_die, 1);
	assert_int_equal(li.lend_state, BS_LEND_RETURNING);
	assert_true(li.slot_flags & BS_SLOT_LEAVING);
	assert_false(done_within(&w.done, 300)); /* the slot waits for the driver */
	close(user);
	assert_true(done_within(&w.done, 2000));
	assert_int_equal(w.ret, 0);
	pthread_join(w.t, NULL);
	assert_int_equal(lend_state(a, 1), BS_LEND_NONE);
	bs_slot_close(b);
	bs_slot_close(a);
}

static void resident_stays_lent_when_the_slot_moves_on(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f);
	bs_status st;

	assert_int_equal(bs_slot_set_policy(a, 3, BS_POLICY_RESIDENT), 0);
	assert_int_equal(bs_slot_acquire(a, 3, 0, 0, NULL), 0);
	assert_int_equal(bs_slot_lend(a, 3, "nvidia"), 0);
	assert_int_equal(bs_slot_release(a), 0);
	assert_int_equal(bs_slot_query(a, &st), 0);
	assert_int_equal(st.active_die, -1);
	assert_int_equal(lend_state(a, 3), BS_LEND_LENT);
	assert_int_equal(bs_slot_acquire(a, 3, 0, 0, NULL), 0);
	assert_int_equal(touch(a, 3), -EFAULT);
	assert_int_equal(bs_slot_return(a, 3, 0), 0);
	assert_int_equal(touch(a, 3), 0);
	assert_int_equal(bs_slot_release(a), 0);
	bs_slot_close(a);
}

static void lease_revokes_the_owner_and_hands_on(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f);
	struct timespec t0, t1;
	struct acquirer w;
	bs_queue_entry q[4];
	bs_lease_info li;
	uint32_t total = 0;

	assert_int_equal(bs_slot_set_lease(a, 200), 0);
	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	assert_int_equal(bs_slot_lease(a, &li), 0);
	assert_int_equal(li.lease_ms, 200);
	assert_int_equal(li.lease_left_ms, -1); /* nobody waits */
	bs_fx_sleep_ms(300);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	start_acquirer(&w, b, 1);
	bs_fx_wait_for_waiters(a, 1);
	assert_int_equal(bs_slot_queue(a, q, 4, &total), 1);
	assert_int_equal(total, 1);
	assert_int_equal(q[0].pid, getpid());
	assert_int_equal(q[0].die, 1);
	assert_true(done_within(&w.done, 2000));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(w.ret, 0);
	pthread_join(w.t, NULL);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 150);
	assert_int_equal(bs_slot_lease(a, &li), 0);
	assert_true(li.revoked_by_lease);
	assert_int_equal(touch(a, 0), -EFAULT);
	assert_int_equal(bs_slot_release(a), -ETIME);
	assert_int_equal(bs_slot_release(a), -EPERM); /* said once */
	bs_slot_close(b);
	bs_slot_close(a);
}

static void lease_never_takes_a_die_its_driver_holds(void **state)
{
	struct fixture *f = *state;
	struct bs_slot *a = open_slot(f), *b = open_slot(f);
	char driver[BS_DRIVER_LEN];
	struct acquirer w;
	bs_lease_info li;
	int user;

	assert_int_equal(bs_slot_set_lease(a, 150), 0);
	assert_int_equal(bs_slot_acquire(a, 0, 0, 0, NULL), 0);
	assert_int_equal(bs_slot_lend(a, 0, "nvidia"), 0);
	assert_int_equal(bs_sim_driver_use(b, 0, driver, sizeof(driver), &user), 0);
	start_acquirer(&w, b, 2);
	assert_false(done_within(&w.done, 600));
	assert_int_equal(bs_slot_lease(a, &li), 0);
	assert_true(li.slot_flags & BS_SLOT_EXPIRED);
	assert_int_equal(li.lend_state, BS_LEND_RETURNING);
	assert_false(li.revoked_by_lease); /* not until the die is back */
	close(user);
	assert_true(done_within(&w.done, 2000));
	pthread_join(w.t, NULL);
	assert_int_equal(lend_state(a, 0), BS_LEND_NONE);
	assert_int_equal(bs_slot_release(a), -ETIME);
	bs_slot_close(b);
	bs_slot_close(a);
}

/* ---- the arbiter -------------------------------------------------------------------- */

static void on_done(void *ctx, struct bs_waiter *w, int err)
{
	struct fixture *f = ctx;

	pthread_mutex_lock(&f->lock);
	f->answered++;
	f->answer_err = err;
	f->answer_kind = w->kind;
	pthread_mutex_unlock(&f->lock);
}

static void on_note(void *ctx, const struct bs_arb_note *n)
{
	struct fixture *f = ctx;

	pthread_mutex_lock(&f->lock);
	if (n->what == BS_ARB_REVOKED) {
		f->revoked++;
		f->revoke_err = n->err;
	} else if (n->what == BS_ARB_EXPIRED_LENT) {
		f->expired_lent++;
	} else if (n->what == BS_ARB_RETURNED) {
		f->returned++;
	}
	pthread_mutex_unlock(&f->lock);
}

static bool seen_within(struct fixture *f, int *counter, int n, unsigned ms)
{
	bool ok = false;

	for (unsigned i = 0; i <= ms / 10 && !ok; i++) {
		pthread_mutex_lock(&f->lock);
		ok = *counter >= n;
		pthread_mutex_unlock(&f->lock);
		if (!ok)
			bs_fx_sleep_ms(10);
	}
	return ok;
}

static struct bs_arbiter *new_arbiter(struct fixture *f)
{
	int err;
	struct bs_arbiter *a = bs_arb_new(open_slot(f), on_done, on_note, f, &err);

	assert_non_null(a);
	return a;
}

static void arbiter_lease_among_its_waiters(void **state)
{
	struct fixture *f = *state;
	struct bs_arbiter *a = new_arbiter(f);
	struct bs_waiter w1, w2;
	struct bs_arb_stats st;
	void *vram;

	assert_int_equal(bs_arb_set_lease(a, 200), 0);
	bs_waiter_init(&w1);
	assert_int_equal(bs_arb_hold(a, &w1, 0, false), 0);
	bs_waiter_init(&w2);
	w2.pid = 4242;
	assert_int_equal(bs_arb_hold(a, &w2, 1, false), 1);
	bs_arb_stats(a, &st);
	assert_true(st.lease_left_ms >= 0 && st.lease_left_ms <= 200);
	{
		struct bs_arb_waiter_info wi[2];
		assert_int_equal(bs_arb_waiters(a, wi, 2), 1);
		assert_int_equal(wi[0].pid, 4242);
		assert_int_equal(wi[0].die, 1);
	}
	assert_true(seen_within(f, &f->answered, 1, 2000));
	assert_int_equal(f->answer_err, 0);
	assert_int_equal(f->revoked, 1);
	assert_int_equal(f->revoke_err, -ETIME);
	assert_int_equal(bs_arb_io_begin(a, 0, w1.epoch, &vram), -ENODEV); /* the old hold is void */
	assert_int_equal(bs_arb_io_begin(a, 1, w2.epoch, &vram), 0);
	bs_arb_io_end(a);
	bs_arb_stats(a, &st);
	assert_int_equal(st.revocations, 1);
	bs_arb_drop(a, 1, w2.epoch);
	bs_arb_free(a);
}

static void arbiter_lend_and_return(void **state)
{
	struct fixture *f = *state;
	struct bs_arbiter *a = new_arbiter(f);
	struct bs_slot *other = open_slot(f);
	char driver[BS_DRIVER_LEN];
	struct bs_waiter w, r;
	struct bs_arb_stats st;
	void *vram;
	int user;

	bs_waiter_init(&w);
	assert_int_equal(bs_arb_hold(a, &w, 2, false), 0);
	assert_int_equal(bs_arb_lend(a, 2, w.epoch + 1, "nvidia"), -EPERM); /* not a current hold */
	assert_int_equal(bs_arb_lend(a, 2, w.epoch, "pci-stub"), -EPERM);
	assert_int_equal(bs_arb_lend(a, 2, w.epoch, "nvidia"), 0);
	assert_int_equal(bs_arb_io_begin(a, 2, w.epoch, &vram), -EBUSY);
	bs_arb_stats(a, &st);
	assert_true(st.lent);
	assert_int_equal(bs_arb_return(a, 2, w.epoch, NULL), 0); /* the driver lets go at once */
	assert_int_equal(bs_arb_io_begin(a, 2, w.epoch, &vram), 0);
	bs_arb_io_end(a);
	/* a user of the driver holds on: the return parks until it lets go */
	assert_int_equal(bs_arb_lend(a, 2, w.epoch, "nvidia"), 0);
	assert_int_equal(bs_sim_driver_use(other, 2, driver, sizeof(driver), &user), 0);
	bs_waiter_init(&r);
	assert_int_equal(bs_arb_return(a, 2, w.epoch, &r), 1);
	bs_arb_stats(a, &st);
	assert_true(st.returning);
	bs_fx_sleep_ms(200);
	assert_int_equal(f->answered, 0);
	close(user);
	assert_true(seen_within(f, &f->answered, 1, 2000));
	assert_int_equal(f->answer_kind, BS_WAIT_RETURN);
	assert_int_equal(f->answer_err, 0);
	assert_true(seen_within(f, &f->returned, 1, 100));
	assert_int_equal(bs_arb_io_begin(a, 2, w.epoch, &vram), 0);
	bs_arb_io_end(a);
	bs_arb_drop(a, 2, w.epoch);
	bs_slot_close(other);
	bs_arb_free(a);
}

static void arbiter_lease_returns_a_lent_die_first(void **state)
{
	struct fixture *f = *state;
	struct bs_arbiter *a = new_arbiter(f);
	struct bs_slot *other = open_slot(f);
	char driver[BS_DRIVER_LEN];
	struct bs_waiter w1, w2;
	int user;

	assert_int_equal(bs_arb_set_lease(a, 150), 0);
	bs_waiter_init(&w1);
	assert_int_equal(bs_arb_hold(a, &w1, 0, false), 0);
	assert_int_equal(bs_arb_lend(a, 0, w1.epoch, "uio_pci_generic"), 0);
	assert_int_equal(bs_sim_driver_use(other, 0, driver, sizeof(driver), &user), 0);
	bs_waiter_init(&w2);
	assert_int_equal(bs_arb_hold(a, &w2, 3, false), 1);
	assert_true(seen_within(f, &f->expired_lent, 1, 2000));
	bs_fx_sleep_ms(300);
	assert_int_equal(f->revoked, 0); /* a lease never takes a die from its driver */
	assert_int_equal(f->answered, 0);
	close(user);
	assert_true(seen_within(f, &f->answered, 1, 2000));
	assert_int_equal(f->revoked, 1);
	assert_int_equal(f->revoke_err, -ETIME);
	assert_int_equal(f->answer_err, 0);
	bs_arb_drop(a, 3, w2.epoch);
	bs_slot_close(other);
	bs_arb_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lend_checks_in_the_module_s_order, setup, teardown),
		cmocka_unit_test_setup_teardown(release_waits_for_the_driver_s_user, setup, teardown),
		cmocka_unit_test_setup_teardown(resident_stays_lent_when_the_slot_moves_on, setup, teardown),
		cmocka_unit_test_setup_teardown(lease_revokes_the_owner_and_hands_on, setup, teardown),
		cmocka_unit_test_setup_teardown(lease_never_takes_a_die_its_driver_holds, setup, teardown),
		cmocka_unit_test_setup_teardown(arbiter_lease_among_its_waiters, setup, teardown),
		cmocka_unit_test_setup_teardown(arbiter_lend_and_return, setup, teardown),
		cmocka_unit_test_setup_teardown(arbiter_lease_returns_a_lent_die_first, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
