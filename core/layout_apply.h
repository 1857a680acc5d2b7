/* SPDX-License-Identifier: MIT */
/*
 * Applying one card's layout through the node's own carve, reclaim and mode
 * change (core/layout_apply.c).  Callers: core/layouts.c, which keeps the
 * declared layouts and applies them again whenever something changes.
 */
#ifndef ACCEL_LAYOUT_APPLY_H
#define ACCEL_LAYOUT_APPLY_H

#include "core/layout.h"
#include "core/node.h"

/*
 * Bring device toward layout l: as much as can be done now, each step
 * decided again under the card's lock.  held says which jobs are in use
 * (an attached container); a layout job whose reclaim the driver refuses
 * counts as held for the rest of the call.  out: the plan of the card as
 * it was left, per line applied / pending / impossible with why.  0, or
 * -ENOENT (no such device), -ENOMEM.
 */
int accel_layout_apply(struct accel_node *node, const char *device, const struct accel_layout *l,
                       accel_layout_held_fn held, void *held_ctx, struct accel_layout_plan *out);

#endif
