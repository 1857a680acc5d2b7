/* SPDX-License-Identifier: MIT */
#include "fs/shown.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/engine/node.h"
#include "core/policy/quota.h"

/*
 * struct fs_shown is never defined: a pointer to one is the node's own,
 * turned back here alone, so that nothing but these reads reaches it.
 */
static struct accel_node *node_of(const struct fs_shown *p)
{
	return (struct accel_node *)(uintptr_t)p;
}

const struct fs_shown *fs_shown_of(struct accel_node *node)
{
	return (const struct fs_shown *)node;
}

void fs_shown_last_error(const struct fs_shown *p, const char *key, char *buf, size_t len)
{
	if (!p) {
		if (len)
			buf[0] = '\0';
		return;
	}
	accel_node_last_error(node_of(p), key, buf, len);
}

int fs_shown_quota(const struct fs_shown *p, struct accel_quota_table *out)
{
	if (!p) {
		memset(out, 0, sizeof(*out));
		return 0;
	}
	return accel_node_quota_table(node_of(p), out);
}

int fs_shown_usage(const struct fs_shown *p, const struct accel_snapshot *s, const struct accel_device *d,
                   const struct accel_job *j, bool want_new, struct accel_usage *out)
{
	return p ? accel_node_usage_shown(node_of(p), s, d, j, want_new, out) : -ENOENT;
}

int fs_shown_usage_jobs(const struct fs_shown *p, const struct accel_snapshot *s, bool want_new,
                        struct accel_usage *out, bool *known)
{
	size_t n = 0;

	if (p)
		return accel_node_usage_shown_jobs(node_of(p), s, want_new, out, known);
	for (size_t i = 0; i < s->n_devices; i++)
		n += s->devices[i]->n_jobs;
	memset(known, 0, n * sizeof(*known));
	return 0;
}
