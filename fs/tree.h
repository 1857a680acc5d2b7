/* SPDX-License-Identifier: MIT */
/*
 * The shape of the tree: which paths exist in a snapshot and what each one
 * is.  No FUSE calls and no decisions here; ops.c asks, render.c fills
 * files in, core decides.
 */
#ifndef ACCELFS_TREE_H
#define ACCELFS_TREE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/model.h"

enum fs_kind {
	FS_NONE = 0,
	FS_ROOT,
	FS_FILE,          /* a file: everything about it is its row (struct fs_entry) */
	FS_DEVICE,        /* ppu3/ */
	FS_MIG,           /* ppu3/mig/ */
	FS_PROFILE,       /* ppu3/mig/4g.48gb/ */
	FS_JOB,           /* ppu3/mig/4g.48gb/job1/ */
	FS_JOB_DEV,       /* job1/dev/ and directories inside it */
	FS_JOB_DEV_NODE,  /* a character device inside job1/dev/ */
	FS_NODE_MIG,      /* mig/: every profile of every device */
	FS_NODE_PROFILE,  /* mig/4g.48gb/ */
	FS_NODE_JOB,      /* mig/4g.48gb/job1/: the device's job, seen from the node */
	FS_JOB_LINK,      /* mig/4g.48gb/job1/device -> ../../../ppu3/mig/4g.48gb/job1 */
	FS_PLACEMENTS,    /* ppu3/mig/4g.48gb/placements/: one directory per legal start */
	FS_PLACEMENT,     /* placements/0/: its status, the profile's jobs there; mkdir carves exactly there */
	FS_PLACEMENT_JOB, /* placements/0/job1/: the job, seen from its placement; device -> ../../../job1 */
	FS_DIES,          /* dies/: slot, lease_ms and one directory per die (fs/dies_tree.c) */
	FS_DIE,           /* dies/3/ */
};

struct accelfs;
struct fs_node;
struct fs_text;
struct fuse_req;
struct fuse_file_info;
struct fs_dies;
struct accel_node;
struct accel_attach;
struct accel_layouts;
struct fs_deferred;

/*
 * What a mount serves besides the node's snapshots.  struct accelfs holds
 * it (fs->mount), and every fs_node carries a pointer to it, so that the
 * tree and the texts rendered from a snapshot reach the mount's own, never
 * a process-wide copy.  A member is NULL where the mount has none.
 */
struct fs_mount {
	struct fs_dies *dies;          /* dies/ (fs/dies.h); NULL: no slot, no dies/ */
	struct accel_attach *attach;   /* the containers given each job (fs/attached.h) */
	struct accel_layouts *layouts; /* the cards' declared layouts (fs/layout_files.h); NULL: none kept */
};

struct fs_shown;

/*
 * What a row's render may read, and all it gets (fs/render.c fills it in):
 * the node it shows (n: its device, profile, job or die, and its mount's
 * own), the snapshot n was resolved in (s), and what the node published
 * beside the snapshot (shown: last_error, the quota table, the usage last
 * read, through fs/shown.h's reads alone).  live, the node to ask the
 * driver or /proc, is there for a live row (FS_FRESH_LIVE) alone: NULL for
 * every other, so that a snapshot row's render can do nothing but read
 * what is published.  shown and live are NULL where a render is checked
 * without a node (tests).
 */
struct fs_view {
	const struct fs_node *n;
	const struct accel_snapshot *s;
	const struct fs_shown *shown;
	struct accel_node *live;
};

/* Write file v->n's text into t (fs_put, fs/text.h): 0, or -errno (-ENODEV: a lost job fails closed). */
typedef int (*fs_render_fn)(struct fs_text *t, const struct fs_view *v);

/* A write to a row's file, as fs/ops_file.c hands it to the row's write function. */
struct fs_write {
	struct accelfs *fs;
	struct fuse_req *req; /* the request: the caller answers it with what write returns, unless answered */
	uid_t uid;            /* who writes */
	gid_t gid;
	const char *buf;
	size_t size;
	off_t off;
	bool answered; /* the write function answered req itself, or will later (dies/<n>/driver) */
	/* What the handle keeps between writes until its writer's close applies it (fs/deferred.h), under its lock. */
	struct fs_deferred **pending;
	pthread_mutex_t *handle_lock;
};
/* Take w's bytes for file n (n lives in the snapshot it was resolved in): the bytes taken, or -errno. */
typedef int (*fs_write_fn)(struct fs_write *w, const struct fs_node *n);
/* Open a file whose handles are its own (dies/<n>/vram, fs/openfile.h): answers req, now or later. */
typedef void (*fs_open_fn)(struct fuse_req *req, uint64_t ino, const struct fs_node *n, struct fuse_file_info *fi);

enum fs_entry_flags {
	/*
	 * A function of the snapshot alone: page cache, exact size, fs/notify.c
	 * invalidates it.  A file without it is read through: generated at
	 * every read, its size its text's now.
	 */
	FS_ENTRY_CACHED = 1 << 0,
	/* Its text exists only while the job is ready: otherwise every read fails (not cached then). */
	FS_ENTRY_JOB_READY = 1 << 1,
	/* Opened for writing (its write function, or its own handles, take the bytes); every other row is read-only. */
	FS_ENTRY_WRITABLE = 1 << 2,
	/*
	 * It and everything below it move without a snapshot (dies/: the slot):
	 * the kernel keeps their entries and attributes a second at most.
	 */
	FS_ENTRY_LIVE = 1 << 3,
	/* Written whole, a line at a time: the writer's close applies the text its writes brought (fs/deferred.h). */
	FS_ENTRY_DEFERRED = 1 << 4,
};

/*
 * Where a row's text comes from, and so when it may be generated.  Every row
 * says one (fs_tree_check() refuses a row without, and the daemon does not
 * start): a new row chooses.
 */
enum fs_freshness {
	FS_FRESH_UNSET = 0, /* no row may be left so */
	/*
	 * A pure function of published state: the snapshot, the attachment
	 * view, the quota table, last_error, the layouts' table, the dies'
	 * slot.  It takes no lock but a pointer copy (debug builds assert that
	 * its render takes no node lock), and so it may be page-cached
	 * (FS_ENTRY_CACHED), rendered for st_size, compared by the notifier and
	 * polled.  Directories and links are of this class.
	 */
	FS_FRESH_SNAPSHOT,
	/*
	 * Asks the driver or /proc (a job's processes, holders; vram's bytes):
	 * rendered only at open and at a read, never at lookup, stat, notify or
	 * poll, never with an fs/ lock held and never waiting for a lock a carve
	 * holds for long.  Never page-cached; its size at stat is 0 (an open
	 * handle's is its text's); poll wakes its waiters only when it goes away.
	 */
	FS_FRESH_LIVE,
};

/*
 * One name inside a directory (fs/tree_files.c): resolve, list, attributes,
 * caching, reading, writing and opening all read it, and nothing else asks
 * what kind of file it is.  A row of kind FS_FILE needs nothing else.
 */
struct fs_entry {
	const char *name;
	enum fs_kind kind;
	enum fs_freshness fresh; /* mandatory: FS_FRESH_SNAPSHOT or FS_FRESH_LIVE */
	mode_t mode;             /* permission bits; 0: 0555 for a directory, 0444 for a file */
	unsigned flags;
	fs_render_fn render; /* a generated file's text */
	fs_write_fn write;   /* FS_ENTRY_WRITABLE generated files: what a write does */
	fs_open_fn open;     /* a file with handles of its own instead of a text (dies/<n>/vram) */
	uint64_t (*size)(const struct fs_node *n);  /* such a file's size */
	bool (*offered)(const struct fs_node *dir); /* NULL: always there */
};

/* The rows of a directory of that kind (NULL-name terminated), or NULL: it has none. */
const struct fs_entry *fs_tree_files(enum fs_kind dir);
/*
 * Every row of every directory chose its freshness class, and a live row is
 * not page-cached: 0, or -EINVAL with why naming the row.
 */
int fs_tree_check(char *why, size_t whylen);
/* A row that asks the driver or /proc (FS_FRESH_LIVE): generated at open and read only. */
bool fs_node_is_live(const struct fs_node *n);

struct fs_node {
	enum fs_kind kind;
	const struct fs_entry *entry; /* the row it was reached by, NULL for a name that is no row's */
	const struct accel_device *dev;
	const struct accel_profile *profile;
	const struct accel_job *job;
	const struct accel_devnode *devnode; /* FS_JOB_DEV_NODE */
	char dev_sub[128];                   /* FS_JOB_DEV: path inside dev/ ("" or "alixpu-caps") */
	char node_profile[ACCEL_NAME_MAX];   /* node-level mig/<profile>: the published name */
	bool via_node;                       /* reached through the node-level mig/ */
	struct accel_span placement;         /* FS_PLACEMENT and below: the legal placement it names */
	bool via_placement;                  /* reached through placements/<start>/ */
	uint32_t die;                        /* FS_DIE and its files */
	bool live;                           /* at or below a row flagged FS_ENTRY_LIVE */
	const struct fs_mount *mount;        /* what it was resolved in (never NULL); listed children inherit it */
};

/*
 * What a resolved path names, beyond its name: the job's instance (its MIG
 * UUID and creation time) for a job's directory and everything in it, the
 * device (its UUID) for a device's, "" for the rest.  A job made again
 * under the same name is another identity: the inode table (fs/inode.h)
 * gives it other inode numbers.
 */
#define FS_IDENT_MAX (ACCEL_UUID_MAX + 32)
void fs_node_identity(const struct fs_node *n, char *buf, size_t len);

/* Resolve a path ("" = root) in a snapshot of the node, served by mount m: 0, or -ENOENT. */
int fs_tree_resolve(const struct accel_snapshot *s, const struct fs_mount *m, const char *path, struct fs_node *out);

/* List a directory's entries (without "." and ".."). */
typedef void (*fs_emit_fn)(void *ctx, const char *name, enum fs_kind kind, const struct fs_node *child);
void fs_tree_list(const struct accel_snapshot *s, const struct fs_node *dir, fs_emit_fn emit, void *ctx);

bool fs_kind_is_dir(enum fs_kind kind);
/* Directories whose owner and mode an operator may set (delegation). */
bool fs_kind_is_delegatable(enum fs_kind kind);
/* Directories that show the nearest delegated ancestor's owner and mode: those, and the placement directories. */
bool fs_kind_takes_delegation(enum fs_kind kind);

/* The node-level profile's numbers: devices offering it and the sum of their available. */
size_t fs_node_profile_devices(const struct accel_snapshot *s, const char *profile, unsigned *available);
/* Files a user may write: their rows say so (a job's containers and reclaim, dies/<n>/enabled, vram ...). */
bool fs_node_is_writable(const struct fs_node *n);

#endif
