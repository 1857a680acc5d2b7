/* SPDX-License-Identifier: MIT */
/*
 * barswap: the userspace API of the barswap board, over
 * /dev/bar_swap (kmod/bar_swap.ko).
 *
 * The board can map only one die's VRAM into CPU address space at a time;
 * every die is time-multiplexed through that one slot.  Acquire a die, use
 * its VRAM through the returned mapping, release it, repeat.
 *
 *   bs_context *ctx = bs_init();                 // opens /dev/bar_swap
 *   bs_gpu *g = bs_acquire(ctx, 3);              // waits its turn (FIFO)
 *   memcpy(g->vram, buf, len);                   // die 3's VRAM, g->vram_size bytes
 *   bs_release(ctx, g);                          // g->vram now faults (SIGBUS)
 *   bs_free(ctx);
 *
 * The nine functions of the original barswap API keep its signatures, so code written
 * for the original barswap project's library builds and links against this one
 * (`pkg-config --cflags --libs barswap`).  The functions after them are this
 * library's additions: the slot's full state, one die's description,
 * non-blocking and timed acquires, quarantine.
 *
 * Errors: a function that returns a pointer returns NULL, one that returns
 * int returns -1, and errno says why (the module's errno, see docs/kmod.md:
 * EAGAIN busy with BS_NONBLOCK, EINTR a signal while queued, ETIMEDOUT,
 * EINVAL no such die, ENODEV die removed or quarantined, EPERM not the owner,
 * ETIME the slot was taken back by the lease).
 *
 * Ownership belongs to the context: two contexts never share the slot, and
 * freeing a context (or the process dying) releases it.  A context may be
 * used from several threads, but only one of them may wait in bs_acquire at
 * a time (EBUSY).
 */
#ifndef BARSWAP_H
#define BARSWAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BS_DEVICE "/dev/bar_swap"
#define BS_BUS_ID_LEN 32
#define BS_DRIVER_LEN 32

typedef struct bs_context bs_context;

/* A die while the context holds it.  The pointer stays valid until bs_free. */
typedef struct bs_gpu {
	int die_id;
	void *vram;         /* the die's VRAM, mapped through the slot */
	uint64_t vram_size; /* bytes reachable at vram */
} bs_gpu;

/* ---- the original barswap API ------------------------------------------------------ */

bs_context *bs_init(void);                       /* open /dev/bar_swap */
uint32_t bs_num_dies(bs_context *ctx);           /* dies known to the module */
uint32_t bs_num_slots(bs_context *ctx);          /* 1 */
bs_gpu *bs_acquire(bs_context *ctx, int die_id); /* put die_id into the slot (waiting), map its VRAM */
void bs_release(bs_context *ctx, bs_gpu *gpu);   /* vacate the slot; the next waiter gets it */
int bs_active_die(bs_context *ctx);              /* the die in the slot (anyone's), or -1 */
int bs_is_mapped(bs_context *ctx, int die_id);   /* 1: this context holds die_id in the slot */
int bs_refresh(bs_context *ctx);                 /* re-read the die count; 0 or -1 */
void bs_free(bs_context *ctx);                   /* unmap, release, close */

/* ---- additions ----------------------------------------------------------- */

/* The slot as the module reports it (struct bar_swap_query). */
typedef struct bs_status {
	uint32_t num_dies;
	uint32_t num_slots;
	int32_t active_die;  /* -1: empty */
	int32_t owner_pid;   /* 0: none, or not visible from here */
	uint32_t waiters;    /* acquires queued behind the owner */
	uint32_t open_files; /* open handles on the slot */
	uint64_t swaps;      /* dies put into the slot so far */
	uint64_t slot_size;  /* the largest die: what one mapping may cover */
	int owner;           /* 1: this context owns the slot */
	int revoked;         /* 1: this context lost the slot to quarantine or removal */
} bs_status;

#define BS_DIE_PRESENT (1u << 0) /* bound: usable unless quarantined */
#define BS_DIE_ENABLED (1u << 1) /* not quarantined */
#define BS_DIE_ACTIVE (1u << 2)  /* in the slot now */
#define BS_DIE_SIM (1u << 3)     /* simulated: no PCI device behind it */
#define BS_DIE_LENT (1u << 4)    /* bound to another driver (bs_die_lend_get says which) */

typedef struct bs_die_info {
	uint32_t die;
	uint32_t flags;          /* BS_DIE_* */
	uint16_t vendor, device; /* PCI ids; 0 for a simulated die */
	uint64_t vram_size;
	uint64_t acquires;          /* times this die was put into the slot */
	uint64_t bar_phys;          /* where it decodes while active; 0 if simulated */
	char bus_id[BS_BUS_ID_LEN]; /* "0000:03:00.0", "sim:3" */
} bs_die_info;

#define BS_NONBLOCK (1u << 0) /* bs_acquire_ex: EAGAIN instead of waiting */

/* Open a device node other than /dev/bar_swap. */
bs_context *bs_init_path(const char *path);
int bs_query(bs_context *ctx, bs_status *out);
int bs_die_info_get(bs_context *ctx, int die_id, bs_die_info *out);
/* bs_acquire with flags (BS_NONBLOCK) and a bound on the wait (0: none; ETIMEDOUT). */
bs_gpu *bs_acquire_ex(bs_context *ctx, int die_id, unsigned flags, uint32_t timeout_ms);
/* bs_release that reports: 0, or -1 with EPERM (not held) or ENODEV (revoked meanwhile). */
int bs_release_ex(bs_context *ctx, bs_gpu *gpu);
/* Quarantine (0) or re-enable (1) a die; needs CAP_SYS_ADMIN on the module. */
int bs_set_enabled(bs_context *ctx, int die_id, int enabled);
/* "bar_swap" (the module) or "simulated". */
const char *bs_backend(bs_context *ctx);

/* ---- lending a die to a GPU driver, and the lease (docs/kmod.md, "Lend") -- */

#define BS_LEND_NONE 0      /* bound to bar_swap */
#define BS_LEND_LENDING 1   /* being handed to the driver */
#define BS_LEND_LENT 2      /* bound to the driver */
#define BS_LEND_RETURNING 3 /* waiting for the driver to let go */

/* The word for a lend state, as dies/<n>/info and `barswap info` say it; NULL for a value not above. */
static inline const char *bs_lend_state_name(uint32_t state)
{
	static const char *const names[] = { "none", "lending", "lent", "returning" };

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : NULL;
}

#define BS_POLICY_PINNED 0   /* lent only while held: comes back before the slot moves on */
#define BS_POLICY_RESIDENT 1 /* stays with its driver, parked, when the slot moves on */

typedef struct bs_die_lend {
	uint32_t die;
	uint32_t policy;            /* BS_POLICY_* */
	uint32_t state;             /* BS_LEND_* */
	int32_t lender_pid;         /* while lent; 0 otherwise */
	char driver[BS_DRIVER_LEN]; /* bound now: "bar_swap", or the driver it is lent to */
} bs_die_lend;

#define BS_SLOT_EXPIRED (1u << 0) /* the owner's lease ran out; its lent die comes back first */
#define BS_SLOT_LEAVING (1u << 1) /* the owner let go of a lent die; the slot moves once it is back */

typedef struct bs_lease_info {
	uint32_t lease_ms;     /* 0: no lease */
	int32_t lease_left_ms; /* the owner's, -1: it does not run (nobody waits) */
	int32_t lent_die;      /* the die in the slot if lent, else -1 */
	uint32_t lend_state;   /* BS_LEND_* of lent_die */
	int32_t lender_pid;
	uint32_t returning_ms; /* how long its return has waited for the driver */
	uint32_t slot_flags;   /* BS_SLOT_* */
	int revoked_by_lease;  /* 1: this context lost the slot to the lease */
	char lent_driver[BS_DRIVER_LEN];
} bs_lease_info;

typedef struct bs_queue_entry {
	int32_t pid; /* 0: not visible from here */
	uint32_t die;
	uint64_t waited_ns;
} bs_queue_entry;

/*
 * Hand the die this context holds (gpu) to a PCI driver from the module's
 * lend_drivers= allowlist.  gpu->vram faults from then on: the memory is the
 * driver's.  EPERM (not the holder, or not allowed), ENOENT (no such driver
 * loaded), ENXIO (its probe refused), EBUSY (lent elsewhere), EOPNOTSUPP (a
 * RAM-backed die of sim_dies=).
 */
int bs_lend(bs_context *ctx, bs_gpu *gpu, const char *driver);
/* Take it back (waiting for the driver to let go); gpu->vram works again. */
int bs_return(bs_context *ctx, bs_gpu *gpu);
/* With BS_NONBLOCK: EINPROGRESS while the driver has not let go (the return goes on). */
int bs_return_ex(bs_context *ctx, bs_gpu *gpu, unsigned flags);
int bs_die_lend_get(bs_context *ctx, int die_id, bs_die_lend *out);
/* BS_POLICY_PINNED or BS_POLICY_RESIDENT; CAP_SYS_ADMIN; EBUSY while lent. */
int bs_set_policy(bs_context *ctx, int die_id, int policy);
/* While others wait, an owner keeps the slot at most lease_ms (0: no lease); CAP_SYS_ADMIN. */
int bs_set_lease(bs_context *ctx, uint32_t lease_ms);
int bs_lease_get(bs_context *ctx, bs_lease_info *out);
/* The slot's waiters, head first: how many were written to out (at most max), or -1; *total: all. */
int bs_queue(bs_context *ctx, bs_queue_entry *out, uint32_t max, uint32_t *total);

#ifdef __cplusplus
}
#endif

#endif
