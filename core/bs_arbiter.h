/* SPDX-License-Identifier: MIT */
/*
 * The arbiter: many holders share one slot handle.
 *
 * The filesystem serves every opener of dies/<n>/vram through one handle of
 * its own (one open file of /dev/bar_swap).  The arbiter decides, for that
 * handle, which die it holds and who is waiting:
 *
 *   - a hold on the die already in the slot is granted at once (openers of
 *     one die share it);
 *   - a hold when the arbiter holds nothing and nobody waits is tried at
 *     once, without blocking (another process may own the slot);
 *   - otherwise the hold waits in FIFO order (or fails with -EAGAIN when
 *     non-blocking), and is answered later through the done callback, from
 *     whichever thread moved the slot;
 *   - when the last hold on the die is dropped, the handle releases the slot
 *     (so other processes queued on the slot get their turn in the slot's
 *     own FIFO) and the head of this queue asks for it again, with every
 *     waiter for the same die granted together.
 *
 * Blocking for the slot (when another process owns it) happens on the
 * arbiter's own thread, never on a caller's: hold, cancel, drop and
 * set_enabled never wait for anything but short locks.
 *
 * A hold carries an epoch.  Every change of the slot starts a new one; a
 * hold of an older epoch was revoked (quarantine, removal): dropping it does
 * nothing and I/O under it fails with -ENODEV.
 *
 * No FUSE types here: a waiter is a plain record the caller embeds in its
 * own (fs/dies.c keeps the parked request beside it).
 */
#ifndef ACCEL_BS_ARBITER_H
#define ACCEL_BS_ARBITER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/bs_slot.h"

struct bs_waiter {
	struct bs_waiter *next, *prev; /* private: in the FIFO, then in the list of answers */
	uint32_t die;
	int state;                     /* private */
	int result;                    /* private */
	uint64_t epoch;                /* out: the hold's epoch, once granted */
};

static inline void bs_waiter_init(struct bs_waiter *w)
{
	*w = (struct bs_waiter){ 0 };
}

/*
 * A parked hold was answered: err 0 (granted, w->epoch set) or -errno.
 * Called without the arbiter's lock, on any thread.  It may call back into
 * the arbiter.
 */
typedef void (*bs_arb_done_fn)(void *ctx, struct bs_waiter *w, int err);

struct bs_arbiter;

/* The arbiter takes the slot handle (and closes it in bs_arb_free). */
struct bs_arbiter *bs_arb_new(struct bs_slot *slot, bs_arb_done_fn done, void *ctx, int *err);
/* Stops the thread; waiters still parked are answered -ESHUTDOWN. */
void bs_arb_free(struct bs_arbiter *a);

/*
 * Take a hold on die.  0: granted now (w->epoch set); 1: parked, the
 * answer comes through done (w must stay alive until then, or until
 * bs_arb_cancel() returns true); -EAGAIN (busy and non-blocking), -ENODEV
 * (die removed or quarantined), -EINVAL (no such die), -EINTR (the waiter
 * was cancelled before it could park), or the slot's errno.
 */
int bs_arb_hold(struct bs_arbiter *a, struct bs_waiter *w, uint32_t die, bool nonblock);
/*
 * Withdraw a waiter (its caller was interrupted).  True: it was parked and
 * is now out of the queue; done will not be called for it.  False: it was
 * answered already (or is being answered), or it had not parked yet, in
 * which case bs_arb_hold() returns -EINTR.
 */
bool bs_arb_cancel(struct bs_arbiter *a, struct bs_waiter *w);
/* Give back one hold.  A hold of an older epoch (revoked) is ignored. */
void bs_arb_drop(struct bs_arbiter *a, uint32_t die, uint64_t epoch);
/* Quarantine (false) or re-enable a die: its waiters get -ENODEV, its holds are revoked. */
int bs_arb_set_enabled(struct bs_arbiter *a, uint32_t die, bool enabled);

/*
 * I/O under a hold: the die's VRAM, pinned in the slot until bs_arb_io_end.
 * -ENODEV if the hold was revoked.
 */
int bs_arb_io_begin(struct bs_arbiter *a, uint32_t die, uint64_t epoch, void **vram);
void bs_arb_io_end(struct bs_arbiter *a);
/*
 * A copy from or to the VRAM faulted (the module revoked the mapping behind
 * our back: quarantine or unbind by someone else).  Returns -ENODEV and
 * revokes every hold if the slot is no longer ours, else -EIO.
 */
int bs_arb_io_fault(struct bs_arbiter *a, uint32_t die, uint64_t epoch);

struct bs_arb_stats {
	int active;        /* the die the arbiter holds the slot with, -1 */
	unsigned holders;  /* holds on it */
	unsigned waiters;  /* parked holds */
	bool acquiring;    /* its thread waits for the slot (another process owns it) */
	uint64_t grants;   /* times it got the slot */
};
void bs_arb_stats(struct bs_arbiter *a, struct bs_arb_stats *out);

struct bs_slot *bs_arb_slot(struct bs_arbiter *a);

#endif
