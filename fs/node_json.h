/* SPDX-License-Identifier: MIT */
/*
 * /accel/node.json: the whole node from one snapshot, for programs: every
 * device (its info, mode, profiles with placements and availability, jobs,
 * instances), the node-level profiles, and the dies with their slot.  A
 * program that reads the individual files reads them at different instants
 * and may stitch together a state that never existed; this file is one
 * instant.  Keys and values are those of the individual files (docs/tree.md),
 * numbers as numbers; accelfs(5) lists them.
 */
#ifndef ACCELFS_NODE_JSON_H
#define ACCELFS_NODE_JSON_H

#include <stddef.h>

#include "core/model/model.h"
#include "fs/text.h"

struct fs_mount;

/* The format's version: it grows keys compatibly, and changes only with a new number. */
#define FS_NODE_JSON_FORMAT 1

/*
 * Write s into t (JSON, indented, ending in a newline): the snapshot, the
 * mount's dies and containers (fs/tree.h; NULL: no dies/ and no registry),
 * the node's limits (quota: accel_node_quota_table, NULL for none) and
 * the usage last read (shown, fs/shown.h; NULL: none).  A snapshot row: no
 * driver is asked anything (what runs on a job is its live processes file,
 * not here).  0, or -ENOMEM.
 */
struct fs_shown;
struct accel_quota_table;
int fs_node_json_text(struct fs_text *t, const struct accel_snapshot *s, const struct fs_shown *shown,
                      const struct fs_mount *mount, const struct accel_quota_table *quota);

#endif
