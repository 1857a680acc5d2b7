/* SPDX-License-Identifier: MIT */
/*
 * Can the kernel take pages of this mapping for a FUSE reply?
 *
 * A read of dies/<n>/vram is fastest replied straight from the slot's
 * mapping: the kernel then copies once, from the mapping into the reader's
 * buffer.  It reaches the mapping's pages with get_user_pages, which works
 * for ordinary memory (the simulated slot maps a file) and fails for a
 * VM_PFNMAP mapping of device memory (bar_swap.ko's BAR window): a reply
 * from there would end the reader's request with EIO.  So the answer is
 * asked of the kernel itself, not assumed from the backend.
 */
#ifndef ACCELFS_VRAM_PIN_H
#define ACCELFS_VRAM_PIN_H

#include <stdbool.h>

/* True when the kernel can take the page at addr for a reply (asked of it now, with vmsplice). */
bool fs_vram_pinnable(const void *addr);

#endif
