/* SPDX-License-Identifier: MIT */
/*
 * fs/dies.c's answers for a process without dies/ (no slot was set up), so
 * that test_render links the renderers without a FUSE session: they leave
 * the dies out.  The mounted daemon's dies are test_service.py's.
 */
#include <errno.h>

#include "fs/dies.h"

bool fs_dies_present(void)
{
	return false;
}

unsigned fs_dies_count(void)
{
	return 0;
}

int fs_dies_status(struct fs_dies_status *out)
{
	(void)out;
	return -ENODEV;
}

int fs_dies_die_info(uint32_t die, bs_die_info *out)
{
	(void)die;
	(void)out;
	return -ENODEV;
}

int fs_dies_render(int kind, uint32_t die, char **out, size_t *len)
{
	(void)kind;
	(void)die;
	(void)out;
	(void)len;
	return -ENODEV;
}

bool fs_dies_has(uint32_t die)
{
	(void)die;
	return false;
}
