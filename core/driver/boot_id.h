/* SPDX-License-Identifier: MIT */
/*
 * Which boot of the kernel this is: /proc/sys/kernel/random/boot_id, a new
 * random UUID at every boot.  A GPU instance lives in the driver and dies
 * with the kernel (NVIDIA: "MIG devices are not persistent across system
 * reboots"; the T-Head runbook treats a reboot the same way), so what was
 * written about an instance in another boot names none of this boot's: an
 * intent (core/state/intent.h) is bound to the boot it was written in.
 */
#ifndef ACCEL_BOOT_ID_H
#define ACCEL_BOOT_ID_H

#define ACCEL_BOOT_ID_MAX 40

/* This boot's id, read once; "" when the kernel does not say (then no boot is told from another). */
const char *accel_boot_id(void);

#endif
