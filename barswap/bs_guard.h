/* SPDX-License-Identifier: MIT */
/*
 * Copies to and from a slot mapping that may be revoked under our feet.
 *
 * The module revokes a mapping by zapping it (quarantine of the active die,
 * a die unbound while held): the next touch raises SIGBUS.  In a daemon
 * that serves everyone, one such touch must fail one request, not kill the
 * process.  bs_guarded_copy() turns a SIGBUS (or SIGSEGV: the simulated
 * slot revokes with PROT_NONE) raised inside the copy into -EFAULT.
 * Faults anywhere else keep their normal effect.
 */
#ifndef ACCEL_BS_GUARD_H
#define ACCEL_BS_GUARD_H

#include <stddef.h>

/* memcpy(dst, src, n): 0, or -EFAULT if either side faulted (part may have been copied). */
int bs_guarded_copy(void *dst, const void *src, size_t n);

#endif
