/* SPDX-License-Identifier: MIT */
/*
 * The barswap CLI's lending and lease commands (docs/kmod.md, "Lend"):
 *
 *   lend DIE DRIVER [SECONDS|-]    run a compute job's driver on a die
 *   return DIE                     take a resident die back from its driver
 *   policy DIE [pinned|resident]
 *   lease [MS]
 *   use DIE [SECONDS|-]            (--sim) a user of the lent die's driver
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/barswap/bs_sim.h"
#include "tools/barswap_cli.h"

static const char *state_name(uint32_t state)
{
	static const char *const names[] = { "none", "lending", "lent", "returning" };

	return state < 4 ? names[state] : "?";
}

void print_lease(bs_context *ctx)
{
	bs_queue_entry q[64];
	bs_lease_info l;
	uint32_t total = 0;
	int n;

	if (bs_lease_get(ctx, &l))
		return; /* a module without leases */
	printf("lease_ms: %" PRIu32 "\n", l.lease_ms);
	if (l.lease_left_ms >= 0)
		printf("lease_left_ms: %" PRId32 "\n", l.lease_left_ms);
	else
		printf("lease_left_ms: none\n");
	if (l.lent_die >= 0)
		printf("lent: die %" PRId32 " to %s by pid %" PRId32 " (%s%s%s)\n", l.lent_die, l.lent_driver,
		       l.lender_pid, state_name(l.lend_state), l.slot_flags & BS_SLOT_EXPIRED ? ", lease expired" : "",
		       l.slot_flags & BS_SLOT_LEAVING ? ", owner gone" : "");
	else
		printf("lent: none\n");
	if (l.returning_ms)
		printf("returning_ms: %" PRIu32 " (waiting for %s to let go)\n", l.returning_ms, l.lent_driver);
	n = bs_queue(ctx, q, 64, &total);
	for (int i = 0; i < n; i++)
		printf("waiter: pid=%" PRId32 " die=%" PRIu32 " waited_ms=%" PRIu64 "\n", q[i].pid, q[i].die,
		       q[i].waited_ns / 1000000);
}

/* Take the held die back, saying why it cannot be done at once. */
static int take_back(bs_context *ctx, bs_gpu *g, const char *driver)
{
	bs_lease_info l;

	if (!bs_return_ex(ctx, g, BS_NONBLOCK))
		return 0;
	if (errno == EINPROGRESS) {
		printf("returning %d: waiting for %s to let go\n", g->die_id, driver);
		fflush(stdout);
		if (!bs_return(ctx, g))
			return 0;
	}
	if (errno == EPERM && !bs_lease_get(ctx, &l) && l.revoked_by_lease) {
		errno = ETIME; /* the lease took it back (after its driver let go) */
		return fail("return");
	}
	if (errno == EINTR) {
		fprintf(stderr,
		        "barswap: return: interrupted; the die still comes back, and the slot stays with it "
		        "until %s lets go\n",
		        driver);
		return 1;
	}
	return fail("return");
}

int cmd_lend(bs_context *ctx, int die, const char *driver, const char *hold, unsigned flags, uint32_t timeout_ms)
{
	uint64_t seconds = 0;
	bs_gpu *g;
	int ret;

	if (parse_hold(hold, &seconds))
		return 2;
	catch_stop();
	g = bs_acquire_ex(ctx, die, flags, timeout_ms);
	if (!g)
		return fail("acquire");
	if (bs_lend(ctx, g, driver)) {
		ret = fail("lend");
		if (errno == EPERM)
			fprintf(stderr,
			        "barswap: %s must be named in the module's lend_drivers= (see "
			        "/sys/module/bar_swap/parameters/lend_drivers)\n",
			        driver);
		bs_release(ctx, g);
		return ret;
	}
	printf("lent %d to %s\n", die, driver);
	fflush(stdout);
	hold_on(hold, seconds);
	ret = take_back(ctx, g, driver);
	if (!ret)
		printf("returned %d\n", die);
	if (bs_release_ex(ctx, g) && !ret)
		ret = fail("release");
	return ret;
}

int cmd_return(bs_context *ctx, int die, unsigned flags, uint32_t timeout_ms)
{
	bs_die_lend l;
	bs_gpu *g;
	int ret = 0;

	catch_stop();
	g = bs_acquire_ex(ctx, die, flags, timeout_ms);
	if (!g)
		return fail("acquire");
	if (bs_die_lend_get(ctx, die, &l))
		ret = fail("die info");
	else if (l.state == BS_LEND_NONE)
		printf("die %d is not lent (driver bar_swap)\n", die);
	else if (!(ret = take_back(ctx, g, l.driver)))
		printf("returned %d from %s\n", die, l.driver);
	if (bs_release_ex(ctx, g) && !ret)
		ret = fail("release");
	return ret;
}

int cmd_policy(bs_context *ctx, int die, const char *policy)
{
	int p;

	if (!policy) {
		bs_die_lend l;
		if (bs_die_lend_get(ctx, die, &l))
			return fail("policy");
		printf("%s\n", l.policy == BS_POLICY_RESIDENT ? "resident" : "pinned");
		return 0;
	}
	if (!strcmp(policy, "pinned")) {
		p = BS_POLICY_PINNED;
	} else if (!strcmp(policy, "resident")) {
		p = BS_POLICY_RESIDENT;
	} else {
		fprintf(stderr, "barswap: policy: pinned or resident, not %s\n", policy);
		return 2;
	}
	if (bs_set_policy(ctx, die, p)) {
		if (errno == EBUSY)
			fprintf(stderr, "barswap: policy: die %d is lent: return it first\n", die);
		return fail("policy");
	}
	return 0;
}

int cmd_lease(bs_context *ctx, const char *ms)
{
	bs_lease_info l;
	uint64_t v;

	if (!ms) {
		if (bs_lease_get(ctx, &l))
			return fail("lease");
		printf("%" PRIu32 "\n", l.lease_ms);
		return 0;
	}
	if (parse_u64(ms, &v) || v > UINT32_MAX) {
		fprintf(stderr, "barswap: lease: milliseconds expected, not %s\n", ms);
		return 2;
	}
	return bs_set_lease(ctx, (uint32_t)v) ? fail("lease") : 0;
}

int cmd_use(struct bs_slot *sim_slot, int die, const char *hold)
{
	char driver[BS_DRIVER_LEN];
	uint64_t seconds = 0;
	int fd, ret;

	if (!sim_slot) {
		fprintf(stderr,
		        "barswap: use: only with --sim (on real hardware, the driver's own users hold the die)\n");
		return 2;
	}
	if (parse_hold(hold, &seconds))
		return 2;
	catch_stop();
	ret = bs_sim_driver_use(sim_slot, (uint32_t)die, driver, sizeof(driver), &fd);
	if (ret) {
		errno = -ret;
		if (ret == -ENODEV)
			fprintf(stderr, "barswap: use: die %d is not lent to a driver\n", die);
		return fail("use");
	}
	printf("using %d through %s\n", die, driver);
	fflush(stdout);
	hold_on(hold, seconds);
	close(fd); /* the driver may let go now */
	printf("done with %d\n", die);
	return 0;
}
