/* SPDX-License-Identifier: MIT */
#include "fs/dies_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/dies.h"

/* A die number as the tree spells it: decimal, no sign, no leading zero. */
static bool parse_die(const char *s, uint32_t *die)
{
	char *end;
	unsigned long v;

	if (!s[0] || (s[0] == '0' && s[1]) || s[0] < '0' || s[0] > '9')
		return false;
	v = strtoul(s, &end, 10);
	if (*end || v > UINT32_MAX)
		return false;
	*die = (uint32_t)v;
	return true;
}

enum fs_kind fs_dies_tree_step(struct fs_node *n, const char *comp)
{
	return parse_die(comp, &n->die) && fs_dies_has(n->mount->dies, n->die) ? FS_DIE : FS_NONE;
}

void fs_dies_tree_list(const struct fs_node *dir, fs_emit_fn emit, void *ctx)
{
	struct fs_node child = *dir;
	unsigned n = fs_dies_count(dir->mount->dies);

	child.entry = NULL;
	for (unsigned i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "%u", i);
		child.kind = FS_DIE;
		child.die = i;
		emit(ctx, name, FS_DIE, &child);
	}
}
