/* SPDX-License-Identifier: MIT */
/*
 * The inode table: which tree paths the kernel currently knows, by inode
 * number, with the kernel's lookup counts (as libfuse's passthrough_ll
 * keeps them).  An inode lives from its first lookup until the kernel
 * forgets it; numbers are never reused within a mount, so a stale handle
 * can never reach a different file.
 *
 * Paths are relative to the mount root, without leading slash ("" is the
 * root, "ppu3/mig/4g.48gb/job1/status" a file).
 */
#ifndef ACCELFS_INODE_H
#define ACCELFS_INODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fs_inode {
	uint64_t ino;
	uint64_t parent;
	uint64_t nlookup;
	char *path;
	const char *name; /* last component, inside path */
	char *ident;      /* what the path named at lookup (fs_node_identity); NULL: nothing in particular */
	bool dead;        /* gone: not found by path, nor visited, any more (fs_inodes_kill) */
	/* What it resolved to in the snapshot of generation memo_gen (fs_inodes_recall); NULL: nothing yet. */
	void *memo;
	uint64_t memo_gen;
	struct fs_inode *next_by_ino;
	struct fs_inode *next_by_path;
	struct fs_inode *next_by_top; /* chained by the path's first component ("ppu3", "mig") */
	struct fs_inode *next_by_dir; /* chained by its first three ("mig/4g.48gb/job1"), when it has as many */
};

struct fs_inodes;

struct fs_inodes *fs_inodes_new(void);
void fs_inodes_free(struct fs_inodes *t);

/*
 * Find or create the inode of parent/name standing for ident ("" or NULL:
 * nothing in particular) and add one lookup reference.  A live inode of
 * that path that stands for something else is killed first: the path gets
 * a new number.  Returns its number, or 0 when out of memory or when the
 * parent is gone.
 */
uint64_t fs_inodes_lookup(struct fs_inodes *t, uint64_t parent, const char *name, const char *ident);
/* Drop n lookup references; the inode is freed when none remain. */
void fs_inodes_forget(struct fs_inodes *t, uint64_t ino, uint64_t n);
/*
 * Copy the path of an inode into buf and its identity into ident (when not
 * NULL; "" for none): 0, -ESTALE if the kernel has forgotten it, -ENOENT if
 * it is dead, -ENAMETOOLONG if a buffer is too small.
 */
int fs_inodes_get(struct fs_inodes *t, uint64_t ino, char *buf, size_t len, char *ident, size_t identlen);
/*
 * An inode resolved again and again in one snapshot (every open of a file
 * between two publications) is resolved once: the caller remembers what it
 * resolved to in the snapshot of generation gen (size bytes, copied), and
 * recalls it while the snapshot is that one (size the same at every call).
 * fs_inodes_recall is fs_inodes_get, but: 1 and the memo in memo (and no
 * identity) when the inode has one of generation gen.  A memo is dropped
 * with its inode; generation 0 is never remembered.
 */
int fs_inodes_recall(struct fs_inodes *t, uint64_t ino, uint64_t gen, char *buf, size_t len, char *ident,
                     size_t identlen, void *memo, size_t size);
void fs_inodes_remember(struct fs_inodes *t, uint64_t ino, uint64_t gen, const void *memo, size_t size);
/* The path of a live inode into buf: false if forgotten or dead. */
bool fs_inodes_path(struct fs_inodes *t, uint64_t ino, char *buf, size_t len);
/* The inode went away (or its path names something else now): dead from now on (see above). */
void fs_inodes_kill(struct fs_inodes *t, uint64_t ino);

/* The inode number of a path the kernel knows (its parent's in *parent), 0 if none. */
uint64_t fs_inodes_ino(struct fs_inodes *t, const char *path, uint64_t *parent);

/* Visit every live inode (under the table's lock: the visitor must not call back in). */
void fs_inodes_each(struct fs_inodes *t, void (*fn)(void *ctx, const struct fs_inode *in), void *ctx);
/*
 * Visit the live inodes whose path starts with the component top ("ppu3" visits
 * ppu3 and everything below it), without looking at the others: what a
 * change to one device costs does not grow with the number of devices.
 */
void fs_inodes_each_under(struct fs_inodes *t, const char *top, void (*fn)(void *ctx, const struct fs_inode *in),
                          void *ctx);
/*
 * Visit the inodes at or below dir, a path of exactly three components
 * ("mig/4g.48gb/job1": one node-level job), without looking at any other:
 * what a change to one job costs does not grow with the jobs of the node.
 */
void fs_inodes_each_below(struct fs_inodes *t, const char *dir, void (*fn)(void *ctx, const struct fs_inode *in),
                          void *ctx);

#endif
