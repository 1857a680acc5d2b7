/* SPDX-License-Identifier: MIT */
/*
 * The slot seam: one handle on the barswap slot, whatever provides it.
 *
 * A handle is the unit of ownership, exactly as an open file of
 * /dev/bar_swap is for the module (docs/kmod.md): it owns the slot or it
 * does not, it waits in one FIFO with every other handle of every process,
 * and closing it (or its process dying, even by SIGKILL) releases the slot.
 *
 * Two implementations answer to this table:
 *   barswap/bs_slot_kmod.c     /dev/bar_swap: the ioctls of kmod/bar_swap_uapi.h
 *   sim/barswap/            simulated dies in files under a state directory
 * The barswap API (barswap.c), the filesystem (fs/dies.c through
 * barswap/bs_arbiter.c) and the CLI call only this table, so none of them can
 * tell which one answers.  Which one is opened is decided once, explicitly:
 * the simulated slot only ever by --sim.
 *
 * Every operation returns 0 or -errno, with the module's errno (the table in
 * docs/kmod.md); the simulated slot reproduces them.
 */
#ifndef ACCEL_BS_SLOT_H
#define ACCEL_BS_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "barswap/barswap.h"

struct bs_slot;

struct bs_slot_ops {
	const char *backend; /* "bar_swap" or "simulated" */
	int (*query)(struct bs_slot *s, bs_status *out);
	/* -EINVAL for die >= num_dies; a removed die answers without BS_DIE_PRESENT. */
	int (*die_info)(struct bs_slot *s, uint32_t die, bs_die_info *out);
	/*
	 * Put die into the slot, owned by this handle.  The owner switches die
	 * at once; otherwise a free slot with nobody queued is granted at once,
	 * else the caller waits in FIFO order (-EAGAIN with BS_NONBLOCK,
	 * -ETIMEDOUT after timeout_ms if non-zero, -EINTR on a signal, -ENODEV
	 * if the die is or becomes unusable, -EBUSY if another thread waits on
	 * this handle already).
	 */
	int (*acquire)(struct bs_slot *s, uint32_t die, unsigned flags, uint32_t timeout_ms, uint64_t *vram_size);
	/* -EPERM: not the owner; -ENODEV: the slot was revoked (reported once). */
	int (*release)(struct bs_slot *s);
	int (*set_enabled)(struct bs_slot *s, uint32_t die, bool enabled);
	/*
	 * Where die's VRAM appears in this process while this handle owns the
	 * slot with die in it.  Stable for the life of the handle; touching it
	 * at any other time faults.
	 */
	int (*window)(struct bs_slot *s, uint32_t die, void **addr);
	void (*close)(struct bs_slot *s);
	/*
	 * Lending (version 2 of the module's API).  lend: the owner hands the
	 * die in the slot to driver (-EPERM not the owner or not allowed,
	 * -ENOENT no such driver, -ENXIO refused, -EBUSY lent elsewhere,
	 * -EOPNOTSUPP a RAM die).  return_die: take it back, waiting unless
	 * BS_NONBLOCK (-EINPROGRESS), -EINTR on a signal.
	 */
	int (*lend)(struct bs_slot *s, uint32_t die, const char *driver);
	int (*return_die)(struct bs_slot *s, uint32_t die, unsigned flags);
	int (*die_lend)(struct bs_slot *s, uint32_t die, bs_die_lend *out);
	int (*set_policy)(struct bs_slot *s, uint32_t die, uint32_t policy);
	int (*set_lease)(struct bs_slot *s, uint32_t lease_ms);
	int (*lease)(struct bs_slot *s, bs_lease_info *out);
	/* Waiters head first: how many were written (at most max), or -errno. */
	int (*queue)(struct bs_slot *s, bs_queue_entry *out, uint32_t max, uint32_t *total);
};

struct bs_slot {
	const struct bs_slot_ops *ops;
};

/* /dev/bar_swap (or another node of the module).  NULL with *err = -errno. */
struct bs_slot *bs_slot_kmod_open(const char *path, int *err);

static inline int bs_slot_query(struct bs_slot *s, bs_status *out)
{
	return s->ops->query(s, out);
}

static inline int bs_slot_die_info(struct bs_slot *s, uint32_t die, bs_die_info *out)
{
	return s->ops->die_info(s, die, out);
}

static inline int bs_slot_acquire(struct bs_slot *s, uint32_t die, unsigned flags, uint32_t timeout_ms,
                                  uint64_t *vram_size)
{
	return s->ops->acquire(s, die, flags, timeout_ms, vram_size);
}

static inline int bs_slot_release(struct bs_slot *s)
{
	return s->ops->release(s);
}

static inline int bs_slot_set_enabled(struct bs_slot *s, uint32_t die, bool enabled)
{
	return s->ops->set_enabled(s, die, enabled);
}

static inline int bs_slot_window(struct bs_slot *s, uint32_t die, void **addr)
{
	return s->ops->window(s, die, addr);
}

static inline int bs_slot_lend(struct bs_slot *s, uint32_t die, const char *driver)
{
	return s->ops->lend(s, die, driver);
}

static inline int bs_slot_return(struct bs_slot *s, uint32_t die, unsigned flags)
{
	return s->ops->return_die(s, die, flags);
}

static inline int bs_slot_die_lend(struct bs_slot *s, uint32_t die, bs_die_lend *out)
{
	return s->ops->die_lend(s, die, out);
}

static inline int bs_slot_set_policy(struct bs_slot *s, uint32_t die, uint32_t policy)
{
	return s->ops->set_policy(s, die, policy);
}

static inline int bs_slot_set_lease(struct bs_slot *s, uint32_t lease_ms)
{
	return s->ops->set_lease(s, lease_ms);
}

static inline int bs_slot_lease(struct bs_slot *s, bs_lease_info *out)
{
	return s->ops->lease(s, out);
}

static inline int bs_slot_queue(struct bs_slot *s, bs_queue_entry *out, uint32_t max, uint32_t *total)
{
	return s->ops->queue(s, out, max, total);
}

static inline void bs_slot_close(struct bs_slot *s)
{
	if (s)
		s->ops->close(s);
}

/* The barswap API over any slot: the context takes ownership of s. */
bs_context *bs_init_slot(struct bs_slot *s);

#endif
