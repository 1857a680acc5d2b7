/* SPDX-License-Identifier: MIT */
#include "fs/textfile.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/log.h"
#include "core/quota.h"
#include "fs/metrics_text.h"

/*
 * Static, never destroyed: a kick from a thread that raced with the stop
 * finds a valid mutex and a flag nobody reads any more.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static bool started, stopping, kicked;
static pthread_t thread;
static struct accel_node *src_node; /* what it renders: the node and the mount's dies, as /accel/metrics does */
static struct fs_dies *src_dies;
static char path[PATH_MAX];
static char *last; /* the text last written; only the writer thread touches it after start */
static size_t last_len;
static int last_error; /* the errno of the last failed write, 0 after a success: logged on change only */

/* Render and write if the text differs from the last one written.  0 or -errno. */
static int write_if_changed(char *err, size_t errlen)
{
	struct accel_snapshot *s = accel_node_snapshot(src_node);
	struct fs_text t = { 0 };
	char *text = NULL;
	size_t len = 0;
	struct accel_quota_table quota = { 0 };
	int ret = !s ? -ENOENT : accel_node_quota_table(src_node, &quota);

	if (!ret) {
		fs_metrics_text(&t, s, src_dies, &quota);
		ret = fs_text_finish(&t, &text, &len);
	}
	accel_quota_table_free(&quota);
	accel_snapshot_unref(s);
	if (ret) {
		snprintf(err, errlen, "cannot render the metrics: %s", strerror(-ret));
		return ret;
	}
	if (last && len == last_len && !memcmp(text, last, len)) {
		free(text);
		return 0;
	}
	ret = accel_atomic_write(path, text, len, 0644);
	if (ret) {
		snprintf(err, errlen, "cannot write the metrics textfile %s: %s", path, strerror(-ret));
		free(text);
		return ret;
	}
	free(last);
	last = text;
	last_len = len;
	return 0;
}

static void *writer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (!stopping) {
		struct timespec at;
		char err[PATH_MAX + 128];
		int ret;

		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_nsec += (long)(FS_TEXTFILE_TICK_MS % 1000) * 1000000L;
		at.tv_sec += FS_TEXTFILE_TICK_MS / 1000 + at.tv_nsec / 1000000000L;
		at.tv_nsec %= 1000000000L;
		while (!kicked && !stopping && pthread_cond_timedwait(&cond, &lock, &at) != ETIMEDOUT)
			;
		if (stopping)
			break;
		kicked = false;
		pthread_mutex_unlock(&lock);
		/* Outside the lock: a kick during the write asks for one more pass, it does not wait. */
		ret = write_if_changed(err, sizeof(err));
		if (ret && ret != -last_error)
			log_warn("%s; trying again at the next change", err);
		else if (!ret && last_error)
			log_info("writing the metrics textfile %s again", path);
		last_error = ret ? -ret : 0;
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int fs_textfile_start(struct accel_node *node, struct fs_dies *dies, const char *dir, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	int ret;

	if (snprintf(path, sizeof(path), "%s/%s", dir, FS_TEXTFILE_NAME) >= (int)sizeof(path)) {
		snprintf(err, errlen, "--metrics-textfile=%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	src_node = node;
	src_dies = dies;
	/* The first write here, so that a directory we cannot write to stops the start with its reason. */
	ret = write_if_changed(err, errlen);
	if (ret)
		return ret;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	pthread_condattr_destroy(&ca);
	stopping = kicked = false;
	ret = pthread_create(&thread, NULL, writer_main, NULL);
	if (ret) {
		snprintf(err, errlen, "cannot start the metrics textfile writer: %s", strerror(ret));
		unlink(path);
		return -ret;
	}
	pthread_mutex_lock(&lock);
	started = true;
	pthread_mutex_unlock(&lock);
	log_info("keeping the metrics in %s", path);
	return 0;
}

void fs_textfile_kick(void)
{
	pthread_mutex_lock(&lock);
	if (started) {
		kicked = true;
		pthread_cond_signal(&cond);
	}
	pthread_mutex_unlock(&lock);
}

void fs_textfile_stop(void)
{
	pthread_mutex_lock(&lock);
	if (!started) {
		pthread_mutex_unlock(&lock);
		return;
	}
	stopping = true;
	started = false;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	pthread_cond_destroy(&cond);
	/* Metrics of a daemon that is gone would read as a node that stands still: absent says the truth. */
	if (unlink(path) && errno != ENOENT)
		log_warn("cannot remove the metrics textfile %s: %s", path, strerror(errno));
	free(last);
	last = NULL;
	last_len = 0;
}
