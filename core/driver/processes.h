/* SPDX-License-Identifier: MIT */
/*
 * What runs on a MIG instance, as its driver says: the running-process query
 * (DeviceGetComputeRunningProcesses_v3) on the instance's MIG device handle,
 * each pid's command read from /proc where this host can see it.  Asked at
 * every read: nothing here is cached, since processes come and go without
 * the driver telling anyone.
 */
#ifndef ACCEL_PROCESSES_H
#define ACCEL_PROCESSES_H

#include <stddef.h>
#include <sys/types.h>

#include "core/driver/card.h"
#include "core/driver/proc_view.h"

#define ACCEL_USED_UNKNOWN (~0ULL) /* the driver cannot say how much memory the process uses */
/* How long a reader's query waits for its card's lock before it says the card is busy (core/engine/node_processes.c). */
#define ACCEL_PROCESSES_WAIT_MS 50

struct accel_process {
	unsigned pid;                  /* in the driver's (the host's) pid namespace */
	unsigned long long used_bytes; /* device memory, or ACCEL_USED_UNKNOWN */
	char command[64];              /* /proc/<pid>/comm; "" when this host cannot see the pid */
	struct accel_proc_owner owner; /* whose: who may see its command (core/driver/proc_view.h) */
};

/*
 * The processes running on compute instance ci of GPU instance gi, in the
 * driver's order.  *index: where its MIG device was last found (UINT_MAX:
 * not known; learnt here), as accel_mig_uuid.  0 and a malloc'd list (free();
 * NULL with *n 0 when none), or -errno with err saying why: -EOPNOTSUPP when
 * the driver library has no running-process query, the driver's errno when
 * the query or the handle lookup fails.
 */
int accel_mig_processes(const struct accel_card *card, unsigned gi, unsigned ci, unsigned *index,
                        struct accel_process **out, size_t *n, char *err, size_t errlen);

#endif
