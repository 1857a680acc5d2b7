/* SPDX-License-Identifier: MIT */
/*
 * Who holds a device open: the processes with a file descriptor on one of a
 * set of device nodes, read from /proc/<pid>/fd.  The runbook's lesson is
 * that the driver's own count is a lower bound and ppu-smi names nobody; the
 * descriptors are the truth an admin needs before flipping a mode.
 */
#ifndef ACCEL_HOLDERS_H
#define ACCEL_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/driver/proc_view.h"

struct accel_holder {
	pid_t pid;
	char comm[32];                 /* /proc/<pid>/comm */
	char cmdline[256];             /* arguments joined by spaces, truncated */
	unsigned nfds;                 /* descriptors on the nodes looked for */
	struct accel_proc_owner owner; /* whose: who may see comm and cmdline (core/driver/proc_view.h) */
};

/*
 * Scan proc_root ("/proc") for descriptors on any of node_paths.  A
 * descriptor matches when it refers to a character device with the same
 * device number as one of the nodes; with same_file_only it must also be that
 * very node file (same filesystem and inode), which is what a simulated node
 * needs so that a real device with equal numbers elsewhere does not count.
 * Nodes that do not exist are skipped.  The caller's own process is never
 * listed.  Returns 0 and a malloc'd array (free with free()), or -errno.
 */
int accel_holders_scan(const char *proc_root, const char *const *node_paths, size_t n_paths, bool same_file_only,
                       struct accel_holder **out, size_t *n_out);

struct accel_devnode;

/*
 * The processes holding the card itself: its own node, and the shared
 * control nodes too where the family's driver counts those
 * (control_blocks: accel_family.control_holders_block).  What blocks a
 * mode change and an orphan's reclaim.
 */
int accel_card_holders(const struct accel_devnode *nodes, size_t n, bool control_blocks, struct accel_holder **out,
                       size_t *n_out);

/* A holder of one shared control node (nvidiactl, nvidia-uvm, alixpu_ctl): once per node it holds. */
struct accel_control_holder {
	struct accel_holder h; /* nfds: its descriptors on that node */
	char node[128];        /* the node, as a container sees it: "/dev/nvidiactl" */
};

int accel_control_holders(const struct accel_devnode *nodes, size_t n, struct accel_control_holder **out,
                          size_t *n_out);

/*
 * What to stop for a daemon known to hold accelerators (nvidia-persistenced,
 * DCGM's nv-hostengine, the device plugin...), as NVIDIA's MIG manager stops
 * them before a mode change: a sentence, or NULL for a process it does not know.
 */
const char *accel_holder_advice(const struct accel_holder *h);

/*
 * "pid 12 (nv-hostengine)" for each, then what to stop for the known ones,
 * into buf: a sentence anyone may read (last_error).  Where /proc hides
 * processes (hidepid), the pids alone, and where their names are to be read.
 */
void accel_holders_describe(const struct accel_holder *h, size_t n, char *buf, size_t len);
/*
 * The processes holding any of a device's own nodes (card and control
 * nodes).  A node whose host path differs from its /dev path belongs to a
 * simulated node: then only that very file counts.
 */
int accel_device_nodes_holders(const struct accel_devnode *nodes, size_t n, struct accel_holder **out, size_t *n_out);

#endif
