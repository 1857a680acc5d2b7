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

uint64_t fs_dies_fingerprint(const struct fs_dies_status *st, uint64_t seed)
{
	(void)st;
	return seed;
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

/* The rows of dies/ (fs/tree_files.c): never reached, as there is no dies/ to resolve. */
#define NO_TEXT(name)                                                                                                  \
	int name(struct fs_text *t, const struct fs_view *v)                                                           \
	{                                                                                                              \
		(void)t;                                                                                               \
		(void)v;                                                                                               \
		return -ENODEV;                                                                                        \
	}
#define NO_WRITE(name)                                                                                                 \
	int name(struct fs_write *w, const struct fs_node *n)                                                          \
	{                                                                                                              \
		(void)w;                                                                                               \
		(void)n;                                                                                               \
		return -ENODEV;                                                                                        \
	}
NO_TEXT(fs_dies_slot_text)
NO_TEXT(fs_dies_lease_text)
NO_TEXT(fs_die_info_text)
NO_TEXT(fs_die_enabled_text)
NO_TEXT(fs_die_driver_text)
NO_TEXT(fs_die_policy_text)
NO_WRITE(fs_dies_lease_write)
NO_WRITE(fs_die_enabled_write)
NO_WRITE(fs_die_policy_write)
NO_WRITE(fs_die_driver_write)

void fs_die_vram_open(fuse_req_t req, fuse_ino_t ino, const struct fs_node *n, struct fuse_file_info *fi)
{
	(void)ino;
	(void)n;
	(void)fi;
	fuse_reply_err(req, ENODEV);
}

uint64_t fs_die_vram_bytes(const struct fs_node *n)
{
	(void)n;
	return 0;
}

bool fs_dies_has(const struct fs_dies *d, uint32_t die)
{
	(void)d;
	(void)die;
	return false;
}

void fs_dies_slot_words(const struct fs_dies_status *st, struct fs_dies_slot_words *w)
{
	(void)st;
	(void)w;
}

int fs_die_words(const struct fs_dies_status *st, uint32_t die, struct fs_die_words *w)
{
	(void)st;
	(void)die;
	(void)w;
	return -ENODEV;
}
