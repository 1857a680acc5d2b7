/* SPDX-License-Identifier: MIT */
/*
 * barswap: the userspace API of the barswap board (seed 004), over
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
 * The nine functions of the seed's API keep its signatures, so code written
 * for the seed's library builds and links against this one
 * (`pkg-config --cflags --libs barswap`).  The functions after them are this
 * library's additions: the slot's full state, one die's description,
 * non-blocking and timed acquires, quarantine.
 *
 * Errors: a function that returns a pointer returns NULL, one that returns
 * int returns -1, and errno says why (the module's errno, see docs/kmod.md:
 * EAGAIN busy with BS_NONBLOCK, EINTR a signal while queued, ETIMEDOUT,
 * EINVAL no such die, ENODEV die removed or quarantined, EPERM not the owner).
 *
 * Ownership belongs to the context: two contexts never share the slot, and
 * freeing a context (or the process dying) releases it.  A context may be
 * used from several threads, but only one of them may wait in bs_acquire at
 * a time (EBUSY).
 */
#ifndef BARSWAP_H
#define BARSWAP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BS_DEVICE "/dev/bar_swap"
#define BS_BUS_ID_LEN 32

typedef struct bs_context bs_context;

/* A die while the context holds it.  The pointer stays valid until bs_free. */
typedef struct bs_gpu {
	int die_id;
	void *vram;          /* the die's VRAM, mapped through the slot */
	uint64_t vram_size;  /* bytes reachable at vram */
} bs_gpu;

/* ---- the seed's API ------------------------------------------------------ */

bs_context *bs_init(void);                      /* open /dev/bar_swap */
uint32_t bs_num_dies(bs_context *ctx);          /* dies known to the module */
uint32_t bs_num_slots(bs_context *ctx);         /* 1 */
bs_gpu *bs_acquire(bs_context *ctx, int die_id); /* put die_id into the slot (waiting), map its VRAM */
void bs_release(bs_context *ctx, bs_gpu *gpu);  /* vacate the slot; the next waiter gets it */
int bs_active_die(bs_context *ctx);             /* the die in the slot (anyone's), or -1 */
int bs_is_mapped(bs_context *ctx, int die_id);  /* 1: this context holds die_id in the slot */
int bs_refresh(bs_context *ctx);                /* re-read the die count; 0 or -1 */
void bs_free(bs_context *ctx);                  /* unmap, release, close */

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

typedef struct bs_die_info {
	uint32_t die;
	uint32_t flags; /* BS_DIE_* */
	uint16_t vendor, device;  /* PCI ids; 0 for a simulated die */
	uint64_t vram_size;
	uint64_t acquires;        /* times this die was put into the slot */
	uint64_t bar_phys;        /* where it decodes while active; 0 if simulated */
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

#ifdef __cplusplus
}
#endif

#endif
