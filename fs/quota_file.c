/* SPDX-License-Identifier: MIT */
/*
 * /accel/quota (fs/quota_file.h).  What a refused write said stays readable
 * at the end of the file, as a comment line the parser skips, until the
 * next write is taken: the log has it too.
 */
#include "fs/quota_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/node.h"
#include "core/quota.h"
#include "fs/accelfs.h"

#define QUOTA_ERROR_KEY "quota"

int fs_quota_render(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n)
{
	struct accel_quota_table table;
	struct accel_quota_charge *c = NULL;
	char last[ACCEL_TEXT_MAX];
	size_t nc = 0;
	char *text;

	(void)n;
	if (accel_node_quota_table(node, &table))
		return -ENOMEM;
	if (accel_quota_charges(s, &c, &nc)) {
		accel_quota_table_free(&table);
		return -ENOMEM;
	}
	text = accel_quota_render(&table, c, nc);
	free(c);
	accel_quota_table_free(&table);
	if (!text)
		return -ENOMEM;
	fs_put(t, "%s", text);
	free(text);
	accel_node_last_error(node, QUOTA_ERROR_KEY, last, sizeof(last));
	if (last[0])
		fs_put(t, "# last write refused: %s\n", last);
	return 0;
}

int fs_quota_write(struct fs_write *w, const struct fs_node *n)
{
	struct accelfs *fs = w->fs;
	const char *buf = w->buf;
	size_t size = w->size;
	off_t off = w->off;
	char why[ACCEL_TEXT_MAX] = "";
	char *text = NULL;
	int ret = 0;

	(void)n;
	if (w->uid != 0) {
		/* Delegation says who may carve; how much is root's to say, whatever directory was delegated. */
		snprintf(why, sizeof(why), "quota: only root may write it (uid %u tried)", (unsigned)w->uid);
		ret = -EPERM;
	} else if (off != 0) {
		snprintf(why, sizeof(why), "quota: write the whole table in one write, from the start of the file");
		ret = -EINVAL;
	} else if (size > ACCEL_QUOTA_TEXT_MAX) {
		snprintf(why, sizeof(why), "quota: the table is %zu bytes, more than %d", size, ACCEL_QUOTA_TEXT_MAX);
		ret = -EINVAL;
	} else if (memchr(buf, '\0', size)) {
		snprintf(why, sizeof(why), "quota: the text holds a NUL byte");
		ret = -EINVAL;
	} else if (!(text = strndup(buf, size))) {
		snprintf(why, sizeof(why), "out of memory");
		ret = -ENOMEM;
	} else {
		ret = accel_node_set_quota(fs->node, text, why, sizeof(why));
	}
	free(text);
	if (ret && ret != -EINVAL && ret != -EROFS)
		log_error("%s", why);
	else if (ret == -EROFS || (ret && w->uid != 0))
		log_info("%s", why);
	accel_node_set_last_error(fs->node, QUOTA_ERROR_KEY, ret ? why : "");
	return ret ? ret : (int)size;
}
