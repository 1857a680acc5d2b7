/* SPDX-License-Identifier: MIT */
/*
 * The simulated slot's returns and lease.  The module has a work item that
 * waits for a driver to let go and a timer for the lease; user space has
 * neither, so both advance whenever some process looks: every operation
 * calls sim_advance() under the state lock, and waiters look every 100 ms
 * (sim_wait).  A lease therefore expires within 100 ms of its deadline
 * while anyone waits, which is when it matters.
 *
 * A simulated driver "lets go" of a die unless a process uses the die
 * through it: bs_sim_driver_use() holds an flock()ed file, as a CUDA
 * process holds nvidia's device, and nvidia's remove() waits for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "sim/barswap/bs_sim_state.h"

uint64_t sim_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sim_user_path(const char *dir, uint32_t die, char *buf, size_t len)
{
	snprintf(buf, len, "%s/users/die%u", dir, die);
}

bool sim_driver_in_use(const struct sim_state *st, uint32_t die)
{
	char path[PATH_MAX];
	bool used;
	int fd;

	sim_user_path(st->dir, die, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* A new open file description: it conflicts with any holder, this process included. */
	used = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return used;
}

static bool lease_runs(const struct sim_shared *sh)
{
	return sh->lease_ms && sh->owner && sh->nqueue && !sh->expired && !sh->leaving;
}

void sim_lease_update(struct sim_state *st)
{
	struct sim_shared *sh = st->sh;

	if (!lease_runs(sh))
		sh->contended_since = 0;
	else if (!sh->contended_since)
		sh->contended_since = sim_now_ms();
}

int32_t sim_lease_left(const struct sim_shared *sh)
{
	uint64_t deadline, now = sim_now_ms();

	if (!lease_runs(sh) || !sh->contended_since)
		return -1;
	deadline = sh->contended_since + sh->lease_ms;
	return deadline > now ? (int32_t)(deadline - now) : 0;
}

static void revoke_owner(struct sim_state *st, int err)
{
	struct sim_handle *h = sim_handle_rec(st, st->sh->owner);

	if (h)
		h->revoked = err;
}

/* The driver let go: the die is bar_swap's again; the slot moves if its owner is gone or out of lease. */
static void finish_return(struct sim_state *st, uint32_t die)
{
	struct sim_shared *sh = st->sh;
	struct sim_die *d = &sh->dies[die];

	d->lend = BS_LEND_NONE;
	d->lender_pid = 0;
	d->driver[0] = '\0';
	sh->returning = -1;
	if (sh->active == (int32_t)die) {
		if (sh->expired && sh->owner)
			revoke_owner(st, ETIME);
		if (sh->expired || sh->leaving || !sh->owner)
			sim_vacate(st);
	}
	sim_wake(st);
}

static void try_return(struct sim_state *st)
{
	if (st->sh->returning >= 0 && !sim_driver_in_use(st, (uint32_t)st->sh->returning))
		finish_return(st, (uint32_t)st->sh->returning);
}

void sim_start_return(struct sim_state *st, uint32_t die)
{
	struct sim_shared *sh = st->sh;

	sh->dies[die].lend = BS_LEND_RETURNING;
	sh->returning = (int32_t)die;
	sh->return_start = sim_now_ms();
	try_return(st);
}

/* The owner's lease ran out: a pinned lent die comes back first (a lease never takes it from its driver). */
static void expire(struct sim_state *st)
{
	struct sim_shared *sh = st->sh;

	sh->contended_since = 0;
	sh->expired = 1;
	if (sim_die_pins(sh, sh->active)) {
		if (sh->dies[sh->active].lend == BS_LEND_LENT)
			sim_start_return(st, (uint32_t)sh->active);
		return;
	}
	revoke_owner(st, ETIME);
	sim_vacate(st);
}

void sim_advance(struct sim_state *st)
{
	struct sim_shared *sh = st->sh;

	try_return(st);
	if (lease_runs(sh) && sh->contended_since && sim_now_ms() >= sh->contended_since + sh->lease_ms)
		expire(st);
}
