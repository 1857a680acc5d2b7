/* SPDX-License-Identifier: MIT */
/*
 * The simulated barswap slot: the slot seam (barswap/bs_slot.h) without the
 * kernel module, for --sim and for CI machines that cannot load it.
 *
 * It keeps everything under one directory (<state-dir>/sim/barswap/ for the
 * daemon), so the daemon, the barswap CLI and a restarted daemon all see
 * the same slot:
 *   slot.state        the slot in shared memory: owner, active die, the FIFO,
 *                     per-die enabled flags and counters, a robust mutex
 *   die<N>.vram       die N's VRAM: a sparse file of the die's size
 *   handles/<id>      one per open handle, flock()ed for the handle's life:
 *                     a handle whose lock can be taken is dead (closed, or
 *                     its process killed, even by SIGKILL), and the slot or
 *                     its place in the queue is taken back from it
 *   init.lock         serializes creating and attaching
 *
 * Semantics and errnos are the module's (docs/kmod.md); docs/dies.md lists
 * the two differences that follow from being in user space.
 */
#ifndef ACCEL_SIM_BS_SIM_H
#define ACCEL_SIM_BS_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "barswap/bs_slot.h"

#define BS_SIM_MAX_DIES 64
#define BS_SIM_DEFAULT_DIES 16
#define BS_SIM_DEFAULT_VRAM (64ull << 20)
#define BS_SIM_MAX_DRIVERS 8

/*
 * The shape of the simulated dies, and the PCI drivers around them: which
 * are loaded (a lend to any other is ENOENT) and which a die may be lent to
 * (the module's lend_drivers=, empty by default: EPERM).
 */
struct bs_sim_geometry {
	uint32_t num_dies;
	uint64_t vram_size; /* every die's, bytes: a whole number of pages */
	uint32_t n_drivers, n_lend_drivers;
	char drivers[BS_SIM_MAX_DRIVERS][BS_DRIVER_LEN];
	char lend_drivers[BS_SIM_MAX_DRIVERS][BS_DRIVER_LEN];
};

/* The drivers a simulated node has loaded unless its topology says otherwise. */
#define BS_SIM_DEFAULT_DRIVERS                                                                                         \
	{                                                                                                              \
		"nvidia", "uio_pci_generic", "vfio-pci", "pci-stub"                                                    \
	}

/* The defaults: 16 dies of 64 MiB, the default drivers, nothing lendable. */
void bs_sim_geometry_default(struct bs_sim_geometry *g);

/*
 * A user of a lent die through its simulated driver (what a CUDA process
 * is to nvidia): while one runs, the driver does not let go of the die and
 * a return waits.  The user holds *fd (an flock()ed file) until it closes
 * it or dies.  slot must be a simulated one (-EOPNOTSUPP); -EINVAL (no
 * such die), -ENODEV (not lent), or the errno of the file.
 */
int bs_sim_driver_use(struct bs_slot *slot, uint32_t die, char *driver, size_t len, int *fd);

/*
 * A handle on the simulated slot under dir.  With g, the slot is created
 * with that geometry, or re-shaped to it when nobody has it open (a daemon
 * started with another topology); -EBUSY if others hold it in another shape.
 * Without g, whatever is there is used, or the default (16 x 64 MiB) is
 * created.  NULL with *ret = -errno and err set.
 */
struct bs_slot *bs_slot_sim_open(const char *dir, const struct bs_sim_geometry *g, int *ret, char *err, size_t errlen);

/*
 * The "barswap" section of a topology file ({"dies": 16, "vram_mib": 64}),
 * or the defaults when path is NULL or the file has no such section.
 */
int bs_sim_geometry_load(const char *path, struct bs_sim_geometry *g, char *err, size_t errlen);

/* The backing file of a die: a benchmark's baseline maps it directly. */
void bs_sim_die_path(const char *dir, uint32_t die, char *buf, size_t len);

#endif
