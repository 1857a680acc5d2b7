/* SPDX-License-Identifier: MIT */
/*
 * A card's instances that accelfs did not make (fs/foreign_files.c):
 *
 *   foreign  keep or reclaim: what becomes of them on this card; root and the
 *            card's delegate write keep, reclaim or default (--foreign's)
 *   adopt    the instances no job owns that a job could take over, one a
 *            line; writing "gi=<G> [uuid=<MIG-...>] name=<job>" makes one
 *            the writer's job without destroying it (core/engine/node_foreign.c)
 */
#ifndef ACCELFS_FOREIGN_FILES_H
#define ACCELFS_FOREIGN_FILES_H

#include "fs/tree.h"

struct fs_text;

int fs_foreign_render(struct fs_text *t, const struct fs_view *v);
int fs_adopt_render(struct fs_text *t, const struct fs_view *v);
/* The writes of both; their failures go to <dev>/mig/last_error like the layout's files'. */
int fs_foreign_write(struct fs_write *wr, const struct fs_node *n);

#endif
