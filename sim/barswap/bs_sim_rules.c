/* SPDX-License-Identifier: MIT */
/*
 * The simulated slot's rules, as the module keeps them: handles coming and
 * going (a dead one's queue entry and hold go with it), holding and
 * queueing, handing the slot on, revoking, and lending's returns and lease.
 * The shared state they act on, its lock and its wake-ups: bs_sim_state.c.
 *
 * Returns and lease.  The module has a work item that
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
#include <stdlib.h>
#include <string.h>
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

/* ---- handles, the hold and the queue ---------------------------------------- */

int sim_handle_register(struct sim_state *st, uint64_t *id, int *lock_fd)
{
	struct sim_handle *free_rec = NULL;
	char path[PATH_MAX];
	int fd, ret = 0;

	sim_lock(st);
	for (int pass = 0; pass < 2 && !free_rec; pass++) {
		if (pass)
			sim_count_handles(st); /* drops the dead, freeing entries */
		for (size_t i = 0; i < SIM_MAX_HANDLES && !free_rec; i++)
			if (!st->sh->handles[i].id)
				free_rec = &st->sh->handles[i];
	}
	if (!free_rec) {
		ret = -EMFILE;
		goto out;
	}
	*id = st->sh->next_id++;
	/* The lock file exists and is held before the record can be seen. */
	sim_handle_path(st, *id, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		close(fd);
		goto out;
	}
	memset(free_rec, 0, sizeof(*free_rec));
	free_rec->pid = getpid();
	free_rec->nonce = sim_process_nonce();
	free_rec->id = *id;
	*lock_fd = fd;
out:
	sim_unlock(st);
	return ret;
}

void sim_handle_unregister(struct sim_state *st, uint64_t id, int lock_fd)
{
	struct sim_handle *h;

	sim_lock(st);
	h = sim_handle_rec(st, id);
	if (h) {
		if (h->queued)
			sim_dequeue(st, id);
		if (st->sh->owner == id)
			sim_leave(st);
		sim_handle_drop(st, h);
	}
	sim_unlock(st);
	close(lock_fd);
}

uint32_t sim_count_handles(struct sim_state *st)
{
	uint32_t n = 0;

	for (size_t i = 0; i < SIM_MAX_HANDLES; i++) {
		struct sim_handle *h = &st->sh->handles[i];
		if (!h->id)
			continue;
		if (sim_handle_alive(st, h)) {
			n++;
			continue;
		}
		if (h->queued)
			sim_dequeue(st, h->id);
		if (st->sh->owner == h->id) {
			sim_handle_drop(st, h);
			sim_leave(st);
		} else {
			sim_handle_drop(st, h);
		}
	}
	return n;
}

void sim_reap(struct sim_state *st)
{
	struct sim_handle *h = sim_handle_rec(st, st->sh->owner);

	if (st->sh->owner && (!h || !sim_handle_alive(st, h))) {
		if (h)
			sim_handle_drop(st, h);
		sim_leave(st); /* a dead lender's die comes back, as with the module */
	}
	sim_advance(st);
}

/* ---- the slot --------------------------------------------------------------- */

void sim_switch(struct sim_state *st, uint64_t handle, uint32_t die)
{
	struct sim_shared *sh = st->sh;
	struct sim_handle *h = sim_handle_rec(st, handle);

	sh->active = (int32_t)die;
	sh->owner_pid = h ? h->pid : 0;
	sh->owner = handle;
	sh->dies[die].acquires++;
	sh->swaps++;
	/* A new tenure: a new lease, running at once if others wait already. */
	sh->leaving = 0;
	sh->expired = 0;
	sh->contended_since = 0;
	sim_lease_update(st);
}

bool sim_slot_free(const struct sim_shared *sh)
{
	return !sh->owner && !sh->leaving && sh->returning < 0;
}

bool sim_die_pins(const struct sim_shared *sh, int32_t die)
{
	const struct sim_die *d;

	if (die < 0)
		return false;
	d = &sh->dies[die];
	return d->lend != BS_LEND_NONE && !(d->lend == BS_LEND_LENT && d->policy == BS_POLICY_RESIDENT);
}

void sim_leave(struct sim_state *st)
{
	struct sim_shared *sh = st->sh;

	if (sim_die_pins(sh, sh->active)) {
		sh->owner = 0;
		sh->owner_pid = 0;
		sh->leaving = 1;
		if (sh->dies[sh->active].lend == BS_LEND_LENT)
			sim_start_return(st, (uint32_t)sh->active);
		sim_wake(st);
		return;
	}
	sim_vacate(st);
}

void sim_dequeue(struct sim_state *st, uint64_t handle)
{
	struct sim_shared *sh = st->sh;

	for (uint32_t i = 0; i < sh->nqueue; i++) {
		if (sh->queue[i].handle != handle)
			continue;
		memmove(&sh->queue[i], &sh->queue[i + 1], (sh->nqueue - i - 1) * sizeof(sh->queue[0]));
		sh->nqueue--;
		break;
	}
	struct sim_handle *h = sim_handle_rec(st, handle);
	if (h)
		h->queued = 0;
	sim_lease_update(st);
}

void sim_vacate(struct sim_state *st)
{
	struct sim_shared *sh = st->sh;

	while (sh->nqueue) {
		struct sim_wait w = sh->queue[0];
		struct sim_handle *h = sim_handle_rec(st, w.handle);

		memmove(&sh->queue[0], &sh->queue[1], (sh->nqueue - 1) * sizeof(sh->queue[0]));
		sh->nqueue--;
		if (!h)
			continue;
		h->queued = 0;
		if (!sim_handle_alive(st, h)) {
			sim_handle_drop(st, h);
			continue;
		}
		if (!sh->dies[w.die].enabled) {
			h->result = -ENODEV;
			continue;
		}
		sim_switch(st, w.handle, w.die);
		h->result = 1;
		sim_wake(st);
		return;
	}
	sh->owner = 0;
	sh->active = -1;
	sh->owner_pid = 0;
	sh->leaving = 0;
	sh->expired = 0;
	sh->contended_since = 0;
	sim_wake(st);
}

void sim_revoke_die(struct sim_state *st, uint32_t die)
{
	struct sim_shared *sh = st->sh;

	for (uint32_t i = 0; i < sh->nqueue;) {
		struct sim_handle *h = sim_handle_rec(st, sh->queue[i].handle);
		if (sh->queue[i].die != die) {
			i++;
			continue;
		}
		memmove(&sh->queue[i], &sh->queue[i + 1], (sh->nqueue - i - 1) * sizeof(sh->queue[0]));
		sh->nqueue--;
		if (h) {
			h->queued = 0;
			h->result = -ENODEV;
		}
	}
	if (sh->owner && sh->active == (int32_t)die) {
		struct sim_handle *h = sim_handle_rec(st, sh->owner);
		if (h)
			h->revoked = ENODEV;
		sim_vacate(st);
	}
	sim_lease_update(st);
	sim_wake(st);
}

/* ---- waiting ---------------------------------------------------------------- */
