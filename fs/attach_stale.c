/* SPDX-License-Identifier: MIT */
#include "fs/attach_stale.h"

#include <stdbool.h>
#include <string.h>

#include "core/engine/node.h"
#include "fs/inode.h"

/* Does what status shows of a job's entry differ (NULL: the job has none)? */
static bool differs(const struct accel_attach_job *a, const struct accel_attach_job *b)
{
	if (!a || !b)
		return a != b;
	if (strcmp(a->uuid, b->uuid) || a->reclaim != b->reclaim || a->n != b->n)
		return true;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->c[i].id, b->c[i].id) || a->c[i].pid != b->c[i].pid || a->c[i].since != b->c[i].since)
			return true;
	return false;
}

static const struct accel_attach_job *named(const struct accel_attach_view *v, const char *job)
{
	return v ? accel_attach_view_job(v, job, NULL) : NULL;
}

struct match {
	const char *job;
	void (*stale)(void *ctx, uint64_t ino);
	void *ctx;
};

/* An inode ".../<job>/status": the job's status in one of its views. */
static void match(void *ctx, const struct fs_inode *in)
{
	const struct match *m = ctx;
	size_t len = strlen(in->path), jl = strlen(m->job);
	const char *tail = len >= jl + 8 ? in->path + len - jl - 8 : NULL;

	if (tail && tail[0] == '/' && !strncmp(tail + 1, m->job, jl) && !strcmp(tail + 1 + jl, "/status"))
		m->stale(m->ctx, in->ino);
}

/* The status inodes of job, if it is in cur: under its device and under the node-level mig/. */
static void job_changed(struct fs_inodes *inodes, const struct accel_snapshot *cur, const char *job,
                        void (*stale)(void *ctx, uint64_t ino), void *ctx)
{
	const struct accel_device *d;
	struct match m = { job, stale, ctx };

	if (!accel_snapshot_job(cur, job, &d))
		return; /* gone: its inodes went with the snapshot that dropped it */
	fs_inodes_each_under(inodes, d->name, match, &m);
	fs_inodes_each_under(inodes, "mig", match, &m);
}

void fs_attach_stale(struct fs_inodes *inodes, const struct accel_snapshot *cur, const struct accel_attach_view *was,
                     const struct accel_attach_view *now, void (*stale)(void *ctx, uint64_t ino), void *ctx)
{
	for (size_t i = 0; now && i < now->n; i++)
		if (differs(named(was, now->jobs[i].job), &now->jobs[i]))
			job_changed(inodes, cur, now->jobs[i].job, stale, ctx);
	/* An entry dropped (the job went, or it said nothing any more): its status said something. */
	for (size_t i = 0; was && i < was->n; i++)
		if (!named(now, was->jobs[i].job))
			job_changed(inodes, cur, was->jobs[i].job, stale, ctx);
}
