/* SPDX-License-Identifier: MIT */
#include "fs/dies_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/dies.h"

static const struct {
	const char *name;
	enum fs_kind kind;
} die_files[] = {
	{ "info", FS_DIE_INFO },     { "enabled", FS_DIE_ENABLED }, { "driver", FS_DIE_DRIVER },
	{ "policy", FS_DIE_POLICY }, { "vram", FS_DIE_VRAM },
};

enum fs_kind fs_dies_tree_root(const struct fs_node *root)
{
	return root->mount->dies ? FS_DIES : FS_NONE;
}

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
	if (n->kind == FS_DIES) {
		if (!strcmp(comp, "slot"))
			return FS_DIES_SLOT;
		if (!strcmp(comp, "lease_ms"))
			return FS_DIES_LEASE;
		return parse_die(comp, &n->die) && fs_dies_has(n->mount->dies, n->die) ? FS_DIE : FS_NONE;
	}
	for (size_t i = 0; i < sizeof(die_files) / sizeof(die_files[0]); i++)
		if (!strcmp(comp, die_files[i].name))
			return die_files[i].kind;
	return FS_NONE;
}

void fs_dies_tree_list(const struct fs_node *dir, fs_emit_fn emit, void *ctx)
{
	if (dir->kind == FS_DIES) {
		struct fs_node child = *dir;
		unsigned n = fs_dies_count(dir->mount->dies);

		child.kind = FS_DIES_SLOT;
		emit(ctx, "slot", FS_DIES_SLOT, &child);
		child.kind = FS_DIES_LEASE;
		emit(ctx, "lease_ms", FS_DIES_LEASE, &child);
		for (unsigned i = 0; i < n; i++) {
			char name[16];
			snprintf(name, sizeof(name), "%u", i);
			child.kind = FS_DIE;
			child.die = i;
			emit(ctx, name, FS_DIE, &child);
		}
		return;
	}
	for (size_t i = 0; i < sizeof(die_files) / sizeof(die_files[0]); i++) {
		struct fs_node child = *dir;
		child.kind = die_files[i].kind;
		emit(ctx, die_files[i].name, child.kind, &child);
	}
}
