/* SPDX-License-Identifier: MIT */
/*
 * fs/dies.c's answers for a mount without dies/ (no slot was set up), so
 * that test_render links the renderers without a FUSE session; it renders
 * with no dies (NULL), and they leave the dies out.  The mounted daemon's dies are test_service.py's.
 */
#include <errno.h>
#include <stddef.h>

#include "fs/dies.h"

unsigned fs_dies_count(const struct fs_dies *d)
{
	(void)d;
	return 0;
}

int fs_dies_status(const struct fs_dies *d, struct fs_dies_status **out)
{
	(void)d;
	*out = NULL;
	return -ENODEV;
}

const char *fs_dies_owner(const struct fs_dies_status *st)
{
	(void)st;
	return "none";
}

int fs_dies_die_info(const struct fs_dies *d, uint32_t die, bs_die_info *out)
{
	(void)d;
	(void)die;
	(void)out;
	return -ENODEV;
}

int fs_dies_render(struct fs_dies *d, int kind, uint32_t die, char **out, size_t *len)
{
	(void)d;
	(void)kind;
	(void)die;
	(void)out;
	(void)len;
	return -ENODEV;
}

bool fs_dies_has(const struct fs_dies *d, uint32_t die)
{
	(void)d;
	(void)die;
	return false;
}
