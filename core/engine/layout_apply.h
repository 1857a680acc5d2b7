/* SPDX-License-Identifier: MIT */
/*
 * Applying one card's layout through the node's own carve, reclaim and mode
 * change (core/engine/layout_apply.c).  Callers: core/engine/layouts.c, which keeps the
 * declared layouts and applies them again whenever something changes.
 */
#ifndef ACCEL_LAYOUT_APPLY_H
#define ACCEL_LAYOUT_APPLY_H

#include "core/state/attach.h"
#include "core/policy/layout.h"
#include "core/engine/node.h"

#include <stdint.h>

/*
 * What applies of one card remember between calls: the layout jobs whose
 * reclaim the driver refused (something runs on them), not asked again
 * before `until` (monotonic ms), so that a busy job costs a bounded retry
 * every few seconds, not one per published change.  Zeroed to start.
 */
struct accel_layout_memory {
	struct {
		char uuid[ACCEL_UUID_MAX];
		char why[160];
		int64_t until;
	} busy[ACCEL_LAYOUT_MAX_UNITS];
	size_t n_busy;
};

/*
 * Bring device toward layout l: as much as can be done now, each step
 * decided again under the card's lock.  Carves are l's writer's (l->uid,
 * l->gid: their quota pays); reclaims go through rmdir's guard
 * (core/engine/rmdir_guard.h) with reg, the attachment registry (NULL: none), so
 * a container attached meanwhile either stops the reclaim or is refused.  held says which jobs are in use
 * (an attached container); a layout job whose reclaim the driver refuses
 * counts as held until retry_ms have passed (mem).  out: the plan of the card as
 * it was left, per line applied / pending / impossible with why.  0, or
 * -ENOENT (no such device), -ENOMEM.
 */
int accel_layout_apply(struct accel_node *node, struct accel_attach *reg, const char *device,
                       const struct accel_layout *l, accel_layout_held_fn held, void *held_ctx,
                       struct accel_layout_memory *mem, unsigned retry_ms, struct accel_layout_plan *out);

#endif
