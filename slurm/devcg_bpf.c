/* SPDX-License-Identifier: MIT */
/*
 * The cgroup v2 device program of a Slurm task (devcg_bpf.h).
 *
 * Written as raw instructions and loaded with bpf(2) directly: the program is
 * a few compares, and building it here keeps the plugin free of libbpf, clang
 * and a BPF object file to install next to it (systemd and Slurm's cgroup/v2
 * plugin build theirs the same way).  The kernel hands the program a
 * struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; },
 * access_type being (BPF_DEVCG_ACC_* << 16) | BPF_DEVCG_DEV_*, and takes a
 * return of 1 as "allow", 0 as "deny" (the caller gets EPERM).
 */
#include "devcg_bpf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One instruction; the kernel's own macros live in samples/, not in a uapi header. */
static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	struct bpf_insn i;
	memset(&i, 0, sizeof(i));
	i.code = code;
	i.dst_reg = dst & 0xf;
	i.src_reg = src & 0xf;
	i.off = off;
	i.imm = imm;
	return i;
}

/* r<dst> = *(u32 *)(r1 + off): a field of the context. */
#define LOAD_CTX(dst, off) insn(BPF_LDX | BPF_MEM | BPF_W, (dst), 1, (off), 0)
#define JUMP_IMM(op, reg, imm) insn(BPF_JMP | (op) | BPF_K, (reg), 0, 0, (int32_t)(imm))
#define JUMP() insn(BPF_JMP | BPF_JA, 0, 0, 0, 0)
#define RETURN(v) insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, (v)), insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* Point the jump at `at` to instruction `target` (offsets count from the next instruction). */
static void aim(struct bpf_insn *p, size_t at, size_t target)
{
	p[at].off = (int16_t)((long)target - (long)at - 1);
}

size_t devcg_bpf_program(const struct devcg_rules *r, struct bpf_insn *p)
{
	size_t n = 0, to_allow[DEVCG_BPF_MAX_INSNS], nallow = 0, to_guard[DEVCG_MAX_MAJORS], nguard = 0;

	/* r2 = access (mknod, read, write), r3 = type (block, char), r4 = major, r5 = minor */
	p[n++] = LOAD_CTX(2, offsetof(struct bpf_cgroup_dev_ctx, access_type));
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 3, 2, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_AND | BPF_K, 3, 0, 0, 0xffff);
	p[n++] = insn(BPF_ALU64 | BPF_RSH | BPF_K, 2, 0, 0, 16);
	/* Block devices are not ours to judge. */
	to_allow[nallow++] = n;
	p[n++] = JUMP_IMM(BPF_JNE, 3, BPF_DEVCG_DEV_CHAR);
	/* Making a node opens nothing (cgroup v1's "c *:* m", which devcg.c writes, allows it too). */
	to_allow[nallow++] = n;
	p[n++] = JUMP_IMM(BPF_JEQ, 2, BPF_DEVCG_ACC_MKNOD);
	p[n++] = LOAD_CTX(4, offsetof(struct bpf_cgroup_dev_ctx, major));
	p[n++] = LOAD_CTX(5, offsetof(struct bpf_cgroup_dev_ctx, minor));
	/* An accelerator major is guarded; any other is allowed. */
	for (size_t i = 0; i < r->nmajors; i++) {
		to_guard[nguard++] = n;
		p[n++] = JUMP_IMM(BPF_JEQ, 4, r->majors[i]);
	}
	to_allow[nallow++] = n;
	p[n++] = JUMP();
	/* Guarded: only the job's own nodes pass. */
	size_t guarded = n;
	for (size_t i = 0; i < r->nallow; i++) {
		struct bpf_insn skip = JUMP_IMM(BPF_JNE, 4, r->allow[i].major);
		skip.off = 1; /* not this major: past the minor's test */
		p[n++] = skip;
		to_allow[nallow++] = n;
		p[n++] = JUMP_IMM(BPF_JEQ, 5, r->allow[i].minor);
	}
	struct bpf_insn deny[] = { RETURN(0) };
	p[n++] = deny[0];
	p[n++] = deny[1];
	size_t allow = n;
	struct bpf_insn yes[] = { RETURN(1) };
	p[n++] = yes[0];
	p[n++] = yes[1];
	for (size_t i = 0; i < nguard; i++)
		aim(p, to_guard[i], guarded);
	for (size_t i = 0; i < nallow; i++)
		aim(p, to_allow[i], allow);
	return n;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

int devcg_bpf_load(const struct devcg_rules *r, char *err, size_t len)
{
	static struct bpf_insn prog[DEVCG_BPF_MAX_INSNS];
	static char log[16384];
	union bpf_attr attr;

	size_t n = devcg_bpf_program(r, prog);
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)prog;
	attr.insn_cnt = (uint32_t)n;
	/* No helper is called, so the license grants nothing; it names the project's terms. */
	attr.license = (uint64_t)(uintptr_t) "Dual MIT/GPL";
	log[0] = '\0';
	attr.log_buf = (uint64_t)(uintptr_t)log;
	attr.log_size = sizeof(log);
	attr.log_level = 1;
	snprintf(attr.prog_name, sizeof(attr.prog_name), "accelfs_devcg");
	int fd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
	if (fd < 0) {
		int e = errno;
		snprintf(err, len, "cannot load the cgroup v2 device program (%zu instructions): %s%s%s%s", n,
		         strerror(e),
		         e == EPERM
		                 ? " (needs CAP_BPF or CAP_SYS_ADMIN: the plugin runs as root in task_init_privileged)"
		                 : "",
		         log[0] ? ": " : "", log);
	}
	return fd;
}

static int attach_multi(int cg_fd, int prog_fd)
{
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cg_fd;
	attr.attach_bpf_fd = (uint32_t)prog_fd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = BPF_F_ALLOW_MULTI;
	return (int)sys_bpf(BPF_PROG_ATTACH, &attr);
}

/*
 * Attach, to the task's own cgroup, every device program that applies to it
 * now (the kernel's effective list: Slurm's on the step or the job,
 * systemd's above), each with BPF_F_ALLOW_MULTI.  The kernel runs a
 * cgroup's programs and then climbs only through ancestors attached with
 * BPF_F_ALLOW_MULTI: Slurm's cgroup/v2 attaches with BPF_F_ALLOW_OVERRIDE,
 * so a program of ours alone on the task's cgroup would replace Slurm's
 * (every GRES File= it keeps from the task) instead of adding to it.  With
 * the same programs attached here too, every one of them still has to allow.
 */
static int keep_effective(int cg_fd, const char *cgdir, char *err, size_t len)
{
	uint32_t ids[64];
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.query.target_fd = (uint32_t)cg_fd;
	attr.query.attach_type = BPF_CGROUP_DEVICE;
	attr.query.query_flags = BPF_F_QUERY_EFFECTIVE;
	attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
	attr.query.prog_cnt = sizeof(ids) / sizeof(ids[0]);
	if (sys_bpf(BPF_PROG_QUERY, &attr) < 0) {
		snprintf(err, len, "cannot list the device programs that apply to %s: %s", cgdir, strerror(errno));
		return -1;
	}
	for (uint32_t i = 0; i < attr.query.prog_cnt; i++) {
		union bpf_attr get;
		memset(&get, 0, sizeof(get));
		get.prog_id = ids[i];
		int fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &get);
		if (fd < 0) {
			snprintf(err, len, "cannot take device program %u (applies to %s): %s", ids[i], cgdir,
			         strerror(errno));
			return -1;
		}
		int rc = attach_multi(cg_fd, fd);
		int e = errno;
		close(fd);
		if (rc < 0 && e != EEXIST) {
			snprintf(err, len, "cannot keep device program %u on %s: %s%s", ids[i], cgdir, strerror(e),
			         e == EPERM ? " (a program attached there without BPF_F_ALLOW_MULTI admits no other)"
			                    : "");
			return -1;
		}
	}
	return 0;
}

int devcg_bpf_attach(const char *cgdir, const struct devcg_rules *r, char *err, size_t len)
{
	int prog_fd = devcg_bpf_load(r, err, len);
	if (prog_fd < 0)
		return -1;
	int cg_fd = open(cgdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd < 0) {
		snprintf(err, len, "cannot open the task's cgroup %s: %s", cgdir, strerror(errno));
		close(prog_fd);
		return -1;
	}
	int rc = keep_effective(cg_fd, cgdir, err, len);
	if (rc == 0 && attach_multi(cg_fd, prog_fd) < 0) {
		int e = errno;
		snprintf(err, len, "cannot attach the device program to %s: %s%s", cgdir, strerror(e),
		         e == EPERM ? " (a program attached there without BPF_F_ALLOW_MULTI admits no other)" : "");
		rc = -1;
	}
	close(cg_fd);
	close(prog_fd); /* the attachment keeps the program */
	return rc;
}
