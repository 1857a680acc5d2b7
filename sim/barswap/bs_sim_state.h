/* SPDX-License-Identifier: MIT */
/*
 * The simulated slot's shared state (slot.state, mapped MAP_SHARED by every
 * process that opens the slot) and the liveness of handles.
 *
 * Everything here runs under the state's robust process-shared mutex: a
 * process killed while holding it costs nothing but EOWNERDEAD for the next
 * locker, and every update below is ordered so that a half-done one is
 * harmless.
 */
#ifndef ACCEL_SIM_BS_SIM_STATE_H
#define ACCEL_SIM_BS_SIM_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/barswap/bs_sim.h"

#define SIM_MAGIC 0x42535331u /* "BSS1" */
#define SIM_VERSION 2         /* 2: lending and the lease */
#define SIM_MAX_HANDLES 256

struct sim_die {
	uint64_t vram_size;
	uint64_t acquires;
	uint32_t enabled;
	uint32_t policy; /* BS_POLICY_* */
	uint32_t lend;   /* BS_LEND_* (never LENDING: a simulated bind is instant) */
	int32_t lender_pid;
	char driver[BS_DRIVER_LEN]; /* the borrower, while lent */
};

struct sim_handle {
	uint64_t id;    /* 0: a free entry */
	uint64_t nonce; /* the registering process image (see sim_handle_alive) */
	int32_t pid;
	int32_t revoked; /* lost the slot: ENODEV (quarantine) or ETIME (lease), said once by release */
	uint32_t queued; /* waiting in the FIFO (at most one waiter per handle) */
	int32_t result;  /* set when a wait ends: 1 granted, or -errno */
};

struct sim_wait {
	uint64_t handle;
	uint32_t die;
	int32_t pid;
	uint64_t since_ms;
};

struct sim_shared {
	uint32_t magic;
	uint32_t version;
	uint32_t size; /* sizeof(struct sim_shared), against a layout from another build */
	uint32_t num_dies;
	pthread_mutex_t lock;
	/* Bumped, then woken, on every change a waiter may be waiting for. */
	uint32_t futex;
	int32_t active; /* the die in the slot, -1: empty */
	uint64_t owner; /* handle id, 0: none */
	int32_t owner_pid;
	uint32_t nqueue;
	uint64_t swaps;
	uint64_t next_id;
	/* the lease (times in CLOCK_MONOTONIC ms, the same clock for every process) */
	uint32_t lease_ms;
	uint32_t expired;         /* the owner's lease ran out while its die was lent */
	uint64_t contended_since; /* 0: the lease does not run */
	/* lending: at most one die, the active one, is on its way back */
	uint32_t leaving;  /* the owner let go of a pinned lent die */
	int32_t returning; /* that die, -1: none */
	uint64_t return_start;
	uint32_t n_drivers, n_lend_drivers;
	char drivers[BS_SIM_MAX_DRIVERS][BS_DRIVER_LEN];
	char lend_drivers[BS_SIM_MAX_DRIVERS][BS_DRIVER_LEN];
	struct sim_die dies[BS_SIM_MAX_DIES];
	struct sim_handle handles[SIM_MAX_HANDLES];
	struct sim_wait queue[SIM_MAX_HANDLES]; /* FIFO: queue[0] is the head */
};

struct sim_state {
	char dir[PATH_MAX];
	int fd;
	struct sim_shared *sh;
};

/* Map <dir>/slot.state, creating or re-shaping it (see bs_slot_sim_open). */
int sim_state_open(struct sim_state *st, const char *dir, const struct bs_sim_geometry *g, char *err, size_t errlen);
void sim_state_close(struct sim_state *st);

void sim_lock(struct sim_state *st);
void sim_unlock(struct sim_state *st);

/* Register a new handle of this process: its id, with its lock file held through *lock_fd. */
int sim_handle_register(struct sim_state *st, uint64_t *id, int *lock_fd);
/* Forget a handle (its own close): lock file removed, record freed, the slot vacated if it owned it. */
void sim_handle_unregister(struct sim_state *st, uint64_t id, int lock_fd);
struct sim_handle *sim_handle_rec(struct sim_state *st, uint64_t id);
/* This process image's nonce: with the pid, what tells a live record of ours from a recycled pid's. */
uint64_t sim_process_nonce(void);
/* A handle's lock file, <dir>/handles/<id>. */
void sim_handle_path(const struct sim_state *st, uint64_t id, char *buf, size_t len);
/* Is the handle's lock file still held by someone (its opener, or a forked child)? */
bool sim_handle_alive(struct sim_state *st, const struct sim_handle *h);
/* Forget a handle: its record and its lock file. */
void sim_handle_drop(struct sim_state *st, struct sim_handle *h);

/* Under the lock: take the slot back from a dead owner, drop dead waiters. */
void sim_reap(struct sim_state *st);
/* Under the lock: live handles (dead ones are dropped on the way). */
uint32_t sim_count_handles(struct sim_state *st);

/* Under the lock: put die into the slot for handle (grant or switch). */
void sim_switch(struct sim_state *st, uint64_t handle, uint32_t die);
/* Under the lock: the slot goes to the first live waiter with a usable die, or is emptied. */
void sim_vacate(struct sim_state *st);
/*
 * Under the lock: the owner leaves (release, close, death, lease).  A die
 * lent under the pinned policy comes back first; the slot moves once it is.
 */
void sim_leave(struct sim_state *st);
/* Under the lock: nobody owns the slot and no lent die is on its way back. */
bool sim_slot_free(const struct sim_shared *sh);
/* Under the lock: does the active die keep the slot where it is (lent, pinned)? */
bool sim_die_pins(const struct sim_shared *sh, int32_t die);
/* Under the lock: quarantine die: fail its waiters, revoke it from its owner. */
void sim_revoke_die(struct sim_state *st, uint32_t die);
/* Under the lock: remove a handle's entry from the FIFO. */
void sim_dequeue(struct sim_state *st, uint64_t handle);

/* ---- bs_sim_rules.c: returns and the lease, advanced by whoever looks ---- */

uint64_t sim_now_ms(void);
/* Under the lock: start taking the LENT active die back; it comes back once its driver lets go. */
void sim_start_return(struct sim_state *st, uint32_t die);
/* Under the lock: finish a return whose driver has let go, expire a lease whose time is up. */
void sim_advance(struct sim_state *st);
/* Under the lock, after every change of owner or queue: start or stop the lease's clock. */
void sim_lease_update(struct sim_state *st);
/* The lease left to the owner, -1 if it does not run. */
int32_t sim_lease_left(const struct sim_shared *sh);
/* <dir>/users/die<N>: held (flock) by a user of die N's simulated driver. */
void sim_user_path(const char *dir, uint32_t die, char *buf, size_t len);
/* Is a process using die through its simulated driver (bs_sim_driver_use)? */
bool sim_driver_in_use(const struct sim_state *st, uint32_t die);

/* Wake every waiter (call after changing anything they wait for). */
void sim_wake(struct sim_state *st);
/*
 * Sleep until woken, seen changes, timeout_ms passes (0: 100 ms, to look for
 * dead owners) or a signal arrives: 0, -ETIMEDOUT or -EINTR.  Call unlocked.
 */
int sim_wait(struct sim_state *st, uint32_t seen, uint32_t timeout_ms);

#endif
