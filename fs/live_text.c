/* SPDX-License-Identifier: MIT */
#include "fs/live_text.h"

#include <errno.h>
#include <stdlib.h>

#include "core/node.h"
#include "fs/dies.h"
#include "fs/holder_text.h"
#include "fs/text.h"

int fs_job_processes_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                          const struct fs_node *n)
{
	struct accel_proc_gate g;
	char *text;
	int ret;

	(void)s;
	if (n->job->state != ACCEL_JOB_READY)
		return -ENODEV;
	fs_text_proc_gate(t, &g);
	ret = accel_node_job_processes_text(node, n->dev->name, n->job->name, n->job->uuid, &g, "", "unknown: ", &text);
	if (!ret)
		fs_put(t, "%s", text);
	free(text);
	return ret;
}

int fs_usage_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n)
{
	char *text;
	int ret;

	if (n->job && n->job->state != ACCEL_JOB_READY)
		return -ENODEV;
	if (!node)
		return 0;
	/* Sampled now, or answered from a reading under a window old (core/node_usage.c); never a card's lock. */
	ret = accel_node_usage_text(node, s, n->dev, n->job, &text);
	if (!ret)
		fs_put(t, "%s", text);
	free(text);
	return ret;
}

uint64_t fs_usage_size(const struct fs_node *n)
{
	(void)n;
	return 0; /* as /proc's live files: a stat (ls -l) never samples the driver, a read does */
}

int fs_dies_last_error_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                            const struct fs_node *n)
{
	char buf[ACCEL_TEXT_MAX + 64];

	(void)s;
	(void)n;
	accel_node_last_error(node, FS_DIES_LAST_ERROR_KEY, buf, sizeof(buf));
	if (buf[0])
		fs_put(t, "%s\n", buf);
	return 0;
}
