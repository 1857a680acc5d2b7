/* SPDX-License-Identifier: MIT */
/*
 * /accel/quota (fs/quota_file.h).  What a refused write said stays readable
 * at the end of the file, as a comment line the parser skips, until the
 * next write is taken: the log has it too.
 */
#include "fs/quota_file.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/log.h"
#include "core/engine/node.h"
#include "core/policy/quota.h"
#include "fs/accelfs.h"
#include "fs/deferred.h"
#include "fs/lock_order.h"
#include "fs/quota_text.h"
#include "fs/shown.h"

#define QUOTA_ERROR_KEY "quota"

int fs_quota_render(struct fs_text *t, const struct fs_view *v)
{
	struct accel_quota_table table;
	struct accel_quota_charge *c = NULL;
	char last[ACCEL_TEXT_MAX];
	size_t nc = 0;
	int ret;

	if (fs_shown_quota(v->shown, &table))
		return -ENOMEM;
	if (accel_quota_charges(v->s, &c, &nc)) {
		accel_quota_table_free(&table);
		return -ENOMEM;
	}
	ret = fs_quota_text(t, &table, c, nc);
	free(c);
	accel_quota_table_free(&table);
	if (ret)
		return ret;
	fs_shown_last_error(v->shown, QUOTA_ERROR_KEY, last, sizeof(last));
	if (last[0])
		fs_put(t, "# last write refused: %s\n", last);
	return 0;
}

/* The log and last_error of a write refused or taken. */
static int answer(struct accelfs *fs, uid_t uid, int ret, const char *why)
{
	if (ret == -EINVAL && uid == 0)
		log_warn("quota: refused: %s", why);
	else if (ret && ret != -EINVAL && ret != -EROFS)
		log_error("%s", why);
	else if (ret == -EROFS || (ret && uid != 0))
		log_info("%s", why);
	accel_node_set_last_error(fs->node, QUOTA_ERROR_KEY, ret ? why : "");
	return ret;
}

/* The writer's close: the whole table its writes brought replaces the table (fs/deferred.h). */
static int quota_commit(struct accelfs *fs, struct fs_deferred *d)
{
	char why[ACCEL_TEXT_MAX] = "";
	int ret = accel_node_set_quota(fs->node, d->text ? d->text : "", why, sizeof(why));

	if (ret == -EINVAL) { /* core has logged it */
		accel_node_set_last_error(fs->node, QUOTA_ERROR_KEY, why);
		return ret;
	}
	return answer(fs, 0, ret, why);
}

int fs_quota_write(struct fs_write *w, const struct fs_node *n)
{
	struct accelfs *fs = w->fs;
	char why[ACCEL_TEXT_MAX] = "";
	struct accel_quota_table table;
	struct fs_deferred *d;
	int ret = 0;

	(void)n;
	if (w->uid != 0) {
		/* Delegation says who may carve; how much is root's to say, whatever directory was delegated. */
		snprintf(why, sizeof(why), "quota: only root may write it (uid %u tried)", (unsigned)w->uid);
		return answer(fs, w->uid, -EPERM, why);
	}
	if (!w->pending || !w->handle_lock)
		return -EACCES;
	fs_lock(w->handle_lock, FS_LOCK_FILE);
	d = *w->pending;
	if (!d)
		d = *w->pending = fs_deferred_new("", quota_commit);
	if (!d) {
		snprintf(why, sizeof(why), "out of memory");
		ret = -ENOMEM;
	} else if (d->bad) {
		snprintf(why, sizeof(why),
		         "quota: an earlier write of this table was refused: nothing will be applied; write the whole "
		         "table again");
		ret = -EINVAL;
	} else if (memchr(w->buf, '\0', w->size)) {
		d->bad = true;
		snprintf(why, sizeof(why), "quota: the text holds a NUL byte: nothing applied");
		ret = -EINVAL;
	} else {
		ret = fs_deferred_add(d, w->buf, w->size, w->off, ACCEL_QUOTA_TEXT_MAX, "the quota table", why,
		                      sizeof(why));
	}
	if (!ret) {
		/* Each complete line is checked with those before it: the write that brings a bad one fails. */
		char *whole = strndup(d->text, fs_deferred_whole(d));
		ret = whole ? accel_quota_parse(whole, false, &table, why, sizeof(why)) : -ENOMEM;
		if (!ret)
			accel_quota_table_free(&table);
		else if (ret == -EINVAL)
			d->bad = true;
		free(whole);
	}
	fs_unlock(w->handle_lock, FS_LOCK_FILE);
	if (ret)
		return answer(fs, w->uid, ret, why);
	return (int)w->size;
}
