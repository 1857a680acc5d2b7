/* SPDX-License-Identifier: MIT */
/*
 * The words of attachments (core/state/attach.h): an attachment, a reclaim
 * policy, a container id.  Apart from the registry so that its file
 * (core/state/attach_store.c), which defines them, needs nothing of the
 * registry's operations: the registry calls its file, never the other way.
 */
#ifndef ACCEL_ATTACHMENT_H
#define ACCEL_ATTACHMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/container_id.h"

struct accel_attachment {
	char id[ACCEL_CONTAINER_ID_MAX + 1];
	pid_t pid;
	unsigned long long start; /* the pid's start time in clock ticks since boot */
	int64_t since;            /* when it was attached, unix seconds */
};

enum accel_reclaim {
	ACCEL_RECLAIM_MANUAL = 0,
	ACCEL_RECLAIM_WHEN_DETACHED,
};

/* "manual" / "when-detached", and back: 0, or -EINVAL for anything else. */
const char *accel_reclaim_str(enum accel_reclaim r);
int accel_reclaim_parse(const char *text, enum accel_reclaim *out);

/* Is id a container id this registry accepts (ACCEL_CONTAINER_ID_RULE, core/model/container_id.h)? */
bool accel_container_id_valid(const char *id);

#endif
