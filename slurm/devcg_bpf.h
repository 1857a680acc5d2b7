/* SPDX-License-Identifier: MIT */
/*
 * cgroup v2 has no devices controller: the kernel asks the
 * BPF_PROG_TYPE_CGROUP_DEVICE programs attached to a task's cgroup and its
 * ancestors whether it may open (or mknod) a device node.  This builds that
 * program from devcg_rules as raw BPF instructions and attaches it with
 * BPF_F_ALLOW_MULTI, so that it composes with the one Slurm's cgroup/v2
 * plugin or systemd attaches: with several programs, every one must allow
 * (the ones that applied to the cgroup are attached there again with it).
 */
#ifndef ACCELFS_SLURM_DEVCG_BPF_H
#define ACCELFS_SLURM_DEVCG_BPF_H

#include "devcg_rules.h"

#include <linux/bpf.h>
#include <stddef.h>

/* Enough for every rule: a few fixed instructions, one per major, two per node. */
#define DEVCG_BPF_MAX_INSNS (16 + DEVCG_MAX_MAJORS + 2 * DEVCG_MAX_NODES)

/* The program for r into out (DEVCG_BPF_MAX_INSNS at least): how many instructions. */
size_t devcg_bpf_program(const struct devcg_rules *r, struct bpf_insn *out);

/* Load the program for r: its fd, or -1 with err (the verifier's log included when it refuses it). */
int devcg_bpf_load(const struct devcg_rules *r, char *err, size_t len);

/*
 * Load the program and attach it to the cgroup v2 directory cgdir
 * (BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI), keeping every program that applied
 * there before (Slurm's, attached above with BPF_F_ALLOW_OVERRIDE, would
 * otherwise be replaced: devcg_bpf.c).  The attachment holds the program: it
 * lasts as long as the cgroup.  0, or -1 with the reason in err.
 */
int devcg_bpf_attach(const char *cgdir, const struct devcg_rules *r, char *err, size_t len);

#endif
