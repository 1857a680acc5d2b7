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

#include "core/state/fileio.h"
#include "core/model/log.h"
#include "core/policy/quota.h"
#include "core/model/timed_wait.h"
#include "fs/metrics_text.h"

struct fs_textfile {
	pthread_mutex_t lock; /* stopping, kicked */
	pthread_cond_t cond;
	bool running, stopping, kicked;
	pthread_t thread;
	struct accel_node *node; /* what it renders: the node and the mount's dies, as /accel/metrics does */
	struct fs_dies *dies;
	char path[PATH_MAX];
	char *last; /* the text last written, less its write time; only the writer thread touches it after start */
	size_t last_len;
	struct timespec last_write; /* CLOCK_MONOTONIC: when it was written, for the heartbeat */
	int last_error;             /* the errno of the last failed write, 0 after a success: logged on change only */
};

/* Has a heartbeat's time passed since the last write? */
static bool heartbeat_due(const struct fs_textfile *tf)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(now.tv_sec - tf->last_write.tv_sec) * 1000 + (now.tv_nsec - tf->last_write.tv_nsec) / 1000000;
	return ms >= FS_TEXTFILE_HEARTBEAT_MS;
}

/* The file's text: the metrics, then when it is written (the one series /accel/metrics has not). */
static char *with_write_time(const char *text, size_t len, size_t *out_len)
{
	struct timespec now;
	char *out = NULL;
	int n;

	clock_gettime(CLOCK_REALTIME, &now);
	n = asprintf(&out, "%.*s# HELP %s %s\n# TYPE %s gauge\n%s %lld.%03ld\n", (int)len, text, FS_TEXTFILE_WRITE_TIME,
	             FS_TEXTFILE_WRITE_TIME_HELP, FS_TEXTFILE_WRITE_TIME, FS_TEXTFILE_WRITE_TIME, (long long)now.tv_sec,
	             now.tv_nsec / 1000000);
	if (n < 0)
		return NULL;
	*out_len = (size_t)n;
	return out;
}

/*
 * Render and write if the text differs from the last one written, or if
 * FS_TEXTFILE_HEARTBEAT_MS passed since.  0 or -errno.
 */
static int write_if_changed(struct fs_textfile *tf, char *err, size_t errlen)
{
	struct accel_snapshot *s = accel_node_snapshot(tf->node);
	struct fs_text t = { 0 };
	char *text = NULL, *file;
	size_t len = 0, file_len = 0;
	struct accel_quota_table quota = { 0 };
	int ret = !s ? -ENOENT : accel_node_quota_table(tf->node, &quota);

	if (!ret) {
		fs_metrics_text(&t, s, tf->dies, &quota);
		ret = fs_text_finish(&t, &text, &len);
	}
	accel_quota_table_free(&quota);
	accel_snapshot_unref(s);
	if (ret) {
		snprintf(err, errlen, "cannot render the metrics: %s", strerror(-ret));
		return ret;
	}
	if (tf->last && len == tf->last_len && !memcmp(text, tf->last, len) && !heartbeat_due(tf)) {
		free(text);
		return 0;
	}
	file = with_write_time(text, len, &file_len);
	ret = file ? accel_atomic_write(tf->path, file, file_len, 0644) : -ENOMEM;
	free(file);
	if (ret) {
		snprintf(err, errlen, "cannot write the metrics textfile %s: %s", tf->path, strerror(-ret));
		free(text);
		return ret;
	}
	free(tf->last);
	tf->last = text;
	tf->last_len = len;
	clock_gettime(CLOCK_MONOTONIC, &tf->last_write);
	return 0;
}

static void *writer_main(void *arg)
{
	struct fs_textfile *tf = arg;

	pthread_mutex_lock(&tf->lock);
	while (!tf->stopping) {
		/* Only the dies' slot moves with nobody kicking: without dies/, the heartbeat's deadline alone. */
		struct timespec at = accel_deadline_in_ms(tf->dies ? FS_TEXTFILE_TICK_MS : FS_TEXTFILE_HEARTBEAT_MS);
		char err[PATH_MAX + 128];
		int ret;

		while (!tf->kicked && !tf->stopping && pthread_cond_timedwait(&tf->cond, &tf->lock, &at) != ETIMEDOUT)
			;
		if (tf->stopping)
			break;
		tf->kicked = false;
		pthread_mutex_unlock(&tf->lock);
		/* Outside the lock: a kick during the write asks for one more pass, it does not wait. */
		ret = write_if_changed(tf, err, sizeof(err));
		if (ret && ret != -tf->last_error)
			log_warn("%s; trying again at the next change", err);
		else if (!ret && tf->last_error)
			log_info("writing the metrics textfile %s again", tf->path);
		tf->last_error = ret ? -ret : 0;
		pthread_mutex_lock(&tf->lock);
	}
	pthread_mutex_unlock(&tf->lock);
	return NULL;
}

struct fs_textfile *fs_textfile_start(struct accel_node *node, struct fs_dies *dies, const char *dir, char *err,
                                      size_t errlen)
{
	struct fs_textfile *tf = calloc(1, sizeof(*tf));
	int ret;

	if (!tf) {
		snprintf(err, errlen, "cannot start the metrics textfile writer: out of memory");
		return NULL;
	}
	if (snprintf(tf->path, sizeof(tf->path), "%s/%s", dir, FS_TEXTFILE_NAME) >= (int)sizeof(tf->path)) {
		snprintf(err, errlen, "--metrics-textfile=%s: path too long", dir);
		free(tf);
		return NULL;
	}
	tf->node = node;
	tf->dies = dies;
	/* The first write here, so that a directory we cannot write to stops the start with its reason. */
	if (write_if_changed(tf, err, errlen)) {
		free(tf->last);
		free(tf);
		return NULL;
	}
	pthread_mutex_init(&tf->lock, NULL);
	accel_cond_init_monotonic(&tf->cond);
	ret = pthread_create(&tf->thread, NULL, writer_main, tf);
	if (ret) {
		snprintf(err, errlen, "cannot start the metrics textfile writer: %s", strerror(ret));
		unlink(tf->path);
		fs_textfile_free(tf);
		return NULL;
	}
	pthread_setname_np(tf->thread, "metrics-file");
	tf->running = true;
	log_info("keeping the metrics in %s", tf->path);
	return tf;
}

void fs_textfile_kick(struct fs_textfile *tf)
{
	if (!tf)
		return;
	pthread_mutex_lock(&tf->lock);
	tf->kicked = true;
	pthread_cond_signal(&tf->cond);
	pthread_mutex_unlock(&tf->lock);
}

void fs_textfile_stop(struct fs_textfile *tf)
{
	if (!tf || !tf->running)
		return;
	pthread_mutex_lock(&tf->lock);
	tf->stopping = true;
	pthread_cond_signal(&tf->cond);
	pthread_mutex_unlock(&tf->lock);
	pthread_join(tf->thread, NULL);
	tf->running = false;
	/* Metrics of a daemon that is gone would read as a node that stands still: absent says the truth. */
	if (unlink(tf->path) && errno != ENOENT)
		log_warn("cannot remove the metrics textfile %s: %s", tf->path, strerror(errno));
}

void fs_textfile_free(struct fs_textfile *tf)
{
	if (!tf)
		return;
	fs_textfile_stop(tf);
	pthread_cond_destroy(&tf->cond);
	pthread_mutex_destroy(&tf->lock);
	free(tf->last);
	free(tf);
}
