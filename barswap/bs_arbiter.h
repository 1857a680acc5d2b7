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
 * hold of an older epoch was revoked (quarantine, removal, the lease):
 * dropping it does nothing and I/O under it fails.  Revocations are told
 * through the note callback with their errno (-ENODEV, -ETIME), so the
 * caller can mark its handles.
 *
 * The lease (bs_arb_set_lease, the slot's own setting): while waiters of
 * this arbiter wait, the holds on the owned die last at most lease_ms from
 * the later of the grant and the first waiter's arrival; then they are
 * revoked with -ETIME and the head's die is taken.  A die lent to a driver
 * (bs_arb_lend) is returned first, and never revoked while its driver has
 * not let go.  Other processes waiting on the slot are the slot's business:
 * it revokes this arbiter's handle, which the arbiter notices within 100 ms
 * and passes on to its holds the same way.
 *
 * No FUSE types here: a waiter is a plain record the caller embeds in its
 * own (fs/dies.c keeps the parked request beside it).
 */
#ifndef ACCEL_BS_ARBITER_H
#define ACCEL_BS_ARBITER_H

#include <stdbool.h>
#include <stdint.h>

#include "barswap/bs_slot.h"

enum bs_waiter_kind {
	BS_WAIT_HOLD,   /* bs_arb_hold: waits for the slot */
	BS_WAIT_RETURN, /* bs_arb_return: waits for a lent die to come back */
};

struct bs_waiter {
	struct bs_waiter *next, *prev; /* private: in the FIFO, then in the list of answers */
	uint32_t die;
	int state;                /* private */
	int result;               /* private */
	enum bs_waiter_kind kind; /* set by hold or return */
	int32_t pid;              /* in: who waits (for bs_arb_waiters), 0 if unknown */
	uint64_t since_ms;        /* private: when it started waiting */
	uint64_t epoch;           /* out: the hold's epoch, once granted */
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
/* What happened to the holds, for the caller to act on and to log. */
enum bs_arb_event {
	/* Every hold on die of this epoch was revoked: I/O under them fails with err
	 * (-ENODEV: quarantined or lost elsewhere; -ETIME: the lease ran out). */
	BS_ARB_REVOKED,
	BS_ARB_EXPIRED_LENT, /* the lease ran out on a lent die: it is being returned first */
	BS_ARB_RETURN_SLOW,  /* a return has waited ms for its driver, which has not let go */
	BS_ARB_RETURNED,     /* the lent die is back after ms */
};

struct bs_arb_note {
	enum bs_arb_event what;
	uint32_t die;
	uint64_t epoch;
	int err;
	uint32_t ms;
};

/* Called without the arbiter's lock, on any thread; it must not call back into the arbiter. */
typedef void (*bs_arb_note_fn)(void *ctx, const struct bs_arb_note *n);

struct bs_arbiter;

/* The arbiter takes the slot handle (and closes it in bs_arb_free).  note may be NULL. */
struct bs_arbiter *bs_arb_new(struct bs_slot *slot, bs_arb_done_fn done, bs_arb_note_fn note, void *ctx, int *err);
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
 * -ENODEV if the hold was revoked, -EBUSY while the die is lent to a driver
 * (its memory is the driver's).
 */
int bs_arb_io_begin(struct bs_arbiter *a, uint32_t die, uint64_t epoch, void **vram);
void bs_arb_io_end(struct bs_arbiter *a);
/*
 * A copy from or to the VRAM faulted (the module revoked the mapping behind
 * our back: quarantine or unbind by someone else).  Returns -ENODEV and
 * revokes every hold if the slot is no longer ours, else -EIO.
 */
int bs_arb_io_fault(struct bs_arbiter *a, uint32_t die, uint64_t epoch);

/*
 * A holder (epoch current) lends the owned die to driver: the slot's lend,
 * with its errno (-EPERM not allowed, -ENOENT, -ENXIO, -EBUSY, ...).
 * -EPERM also when the hold is not the current one (revoked, or another die).
 */
int bs_arb_lend(struct bs_arbiter *a, uint32_t die, uint64_t epoch, const char *driver);
/*
 * Take a lent die back.  0: back (or was not lent); 1: parked in w until
 * the driver lets go (answered through done, kind BS_WAIT_RETURN; cancel
 * with bs_arb_cancel); without w, -EINPROGRESS (the return goes on).
 * -EPERM if the hold is not current.
 */
int bs_arb_return(struct bs_arbiter *a, uint32_t die, uint64_t epoch, struct bs_waiter *w);
/* The lease for the slot and this arbiter's waiters (0: none); the slot's errno (-EPERM without CAP_SYS_ADMIN). */
int bs_arb_set_lease(struct bs_arbiter *a, uint32_t lease_ms);

struct bs_arb_stats {
	int active;            /* the die the arbiter holds the slot with, -1 */
	unsigned holders;      /* holds on it */
	unsigned waiters;      /* parked holds */
	bool acquiring;        /* its thread waits for the slot (another process owns it) */
	uint64_t grants;       /* times it got the slot */
	bool lent;             /* the owned die is lent to a driver */
	bool returning;        /* ... and on its way back */
	bool expired;          /* the holds' lease ran out; they go once the die is back */
	uint32_t lease_ms;     /* the lease (the slot's) */
	int32_t lease_left_ms; /* what is left of the holds' lease among this arbiter's waiters, -1 */
	uint64_t revocations;  /* holds revoked by the lease so far */
	uint64_t epoch;        /* the epoch of the holds on `active` (a hold of another one was revoked) */
};
void bs_arb_stats(struct bs_arbiter *a, struct bs_arb_stats *out);

struct bs_arb_waiter_info {
	int32_t pid;
	uint32_t die;
	uint64_t waited_ms;
};
/* The parked holds, head first: how many were written (at most max). */
unsigned bs_arb_waiters(struct bs_arbiter *a, struct bs_arb_waiter_info *out, unsigned max);

#define BS_ARB_VIEW_MAX 64 /* dies, waiters and slot waiters a view holds (the module's BAR_SWAP_MAX_DIES) */

/*
 * The slot, every die and this arbiter at one instant, for documents that
 * say them together (dies/slot, node.json, metrics): read under the
 * arbiter's lock, which every move of the slot by this arbiter holds, and
 * read again while the slot itself moved meanwhile (another process's
 * handle).  A field whose call failed has its errno beside it.
 */
struct bs_arb_view {
	bs_status slot;
	int lease_err; /* 0: lease is the slot's (a module without leases: -ENOTTY or the like) */
	bs_lease_info lease;
	struct bs_arb_stats stats;
	unsigned n_dies; /* slot.num_dies, at most BS_ARB_VIEW_MAX */
	struct bs_arb_die {
		int info_err; /* 0: info holds */
		bs_die_info info;
		int lend_err; /* 0: lend holds (a module without lending answers an error) */
		bs_die_lend lend;
	} dies[BS_ARB_VIEW_MAX];
	unsigned n_waiters; /* this arbiter's parked holds, head first */
	struct bs_arb_waiter_info waiters[BS_ARB_VIEW_MAX];
	unsigned n_queue; /* the slot's own waiters, head first */
	bs_queue_entry queue[BS_ARB_VIEW_MAX];
	bool settled; /* false: the slot kept moving under other processes and this is the last try */
};
/* 0, or the slot's errno from its query. */
int bs_arb_view(struct bs_arbiter *a, struct bs_arb_view *out);

struct bs_slot *bs_arb_slot(struct bs_arbiter *a);

#endif
