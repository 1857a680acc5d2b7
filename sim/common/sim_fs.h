/* SPDX-License-Identifier: MIT */
/*
 * Where one simulated driver keeps its hardware, and the small file
 * operations the engine needs there (directories, character nodes, text
 * records written atomically, the kernel log).
 */
#ifndef ACCEL_SIM_FS_H
#define ACCEL_SIM_FS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/state/record.h"

struct sim_paths {
	char root[PATH_MAX];         /* $ACCELFS_SIM_ROOT/<vendor> */
	char dev[PATH_MAX];          /* <root>/dev */
	char proc[PATH_MAX];         /* <root>/proc */
	char kmsg[PATH_MAX];         /* <root>/kmsg */
	char node[PATH_MAX];         /* <root>/node.json: what is node-wide (card count, armed faults) */
	char cards[PATH_MAX];        /* <root>/cards: <N>.json (what changes), <N>.hw.json (what never does) */
	char lock[PATH_MAX];         /* <root>/locks: byte-range locks, byte 0 the node's, byte 1 + N card N's */
	char counters[PATH_MAX];     /* <root>/counters: call counts and generations (sim_counters.h) */
	char health[PATH_MAX];       /* <root>/health: events and ECC counts (sim_health.h) */
	char health_wake[PATH_MAX];  /* <root>/health.wake: the futex word event waiters sleep on */
	char legacy_state[PATH_MAX]; /* <root>/state.json: an older simulator's whole node, refused at Init */
};

/* Returns 0 or -ENAMETOOLONG. */
int sim_paths_init(struct sim_paths *p, const char *sim_root, const char *vendor_dir);

/* <cards>/<ordinal>.json, or <ordinal>.hw.json when hw; 0 or -ENAMETOOLONG. */
int sim_card_path(const struct sim_paths *p, unsigned ordinal, bool hw, char *buf, size_t len);

/* dir + "/" + rel into buf; 0 or -ENAMETOOLONG. */
int sim_path_join(char *buf, size_t len, const char *dir, const char *rel);

/* mkdir -p is core's accel_mkdirs() (core/state/record.h). */

/*
 * Make path a character device major:minor with the given permission bits,
 * creating parent directories; an existing node with the right number is
 * kept, anything else there is replaced.  0 or -errno (-EPERM without
 * CAP_MKNOD).
 */
int sim_make_chr(const char *path, mode_t perm, unsigned major, unsigned minor);

/* Replace path's content with text (tmp + rename), creating parents. */
int sim_write_text(const char *path, const char *text);

/* rm -r; a missing path is not an error. */
int sim_remove_tree(const char *path);

/*
 * Append one line to the simulated kernel log, and echo it to stderr when
 * ACCELFS_SIM_VERBOSE is set.  Failures are ignored: a log line is never
 * worth failing a driver call for.
 */
void sim_kmsg(const char *kmsg_path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ACCELFS_SIM_VERBOSE is set (to anything but "" or "0"). */
int sim_verbose(void);

#endif
