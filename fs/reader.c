/* SPDX-License-Identifier: MIT */
#include "fs/reader.h"

#include <string.h>

#include <fuse_lowlevel.h>

void fs_reader_of(struct fuse_req *req, struct accel_viewer *out)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int n;

	memset(out, 0, sizeof(*out));
	out->uid = ctx->uid;
	out->gid = ctx->gid;
	/* Root sees every process, as the operator expects; anyone else by their capabilities, as the kernel does. */
	out->ptrace = ctx->uid == 0 || accel_proc_has_ptrace("/proc", ctx->pid);
	if (out->ptrace)
		return; /* the groups decide nothing more */
	/* libfuse reads them from /proc/<pid>/task/<pid>/status; a reader it cannot find has none (sees less). */
	n = fuse_req_getgroups(req, ACCEL_VIEWER_GROUPS, out->groups);
	out->n_groups = n < 0 ? 0 : (size_t)(n > ACCEL_VIEWER_GROUPS ? ACCEL_VIEWER_GROUPS : n);
}
