/* SPDX-License-Identifier: MIT */
#include "fs/reclaimer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/attach.h"
#include "core/log.h"
#include "core/node.h"
#include "fs/accelfs.h"
#include "fs/attached.h"

#define DEFAULT_POLL_MS 2000

/* The last reason a job could not be reclaimed, so that a retry every pass is logged once. */
struct failure {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char why[ACCEL_TEXT_MAX];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running, stopping, kicked;
	struct accelfs *fs;
	unsigned poll_ms;
	struct failure *failed; /* touched by the thread alone */
	size_t n_failed;
} r = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct failure *failure_of(const char *job, bool create)
{
	struct failure *grown;

	for (size_t i = 0; i < r.n_failed; i++)
		if (!strcmp(r.failed[i].job, job))
			return &r.failed[i];
	if (!create)
		return NULL;
	grown = realloc(r.failed, (r.n_failed + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	r.failed = grown;
	memset(&r.failed[r.n_failed], 0, sizeof(r.failed[0]));
	snprintf(r.failed[r.n_failed].job, sizeof(r.failed[0].job), "%s", job);
	return &r.failed[r.n_failed++];
}

static void forget_failure(const char *job)
{
	struct failure *f = failure_of(job, false);

	if (f) {
		size_t i = (size_t)(f - r.failed);
		memmove(&r.failed[i], &r.failed[i + 1], (r.n_failed - i - 1) * sizeof(*f));
		r.n_failed--;
	}
}

static const struct accel_job *find_job(const struct accel_snapshot *s, const char *job,
                                        const struct accel_device **dev)
{
	for (size_t i = 0; s && i < s->n_devices; i++) {
		const struct accel_job *j = accel_device_job(s->devices[i], job);
		if (j) {
			*dev = s->devices[i];
			return j;
		}
	}
	return NULL;
}

/* Does the job of that instance still exist?  (A registry entry of one that does not is forgotten.) */
static bool exists(void *ctx, const char *job, const char *uuid)
{
	const struct accel_device *d;
	const struct accel_job *j = find_job(ctx, job, &d);

	return j && (!uuid[0] || !strcmp(j->uuid, uuid));
}

static void reclaim(const struct accel_snapshot *s, const char *job)
{
	char device[32], profile[ACCEL_NAME_MAX], why[ACCEL_TEXT_MAX] = "";
	const struct accel_device *d;
	const struct accel_job *j = find_job(s, job, &d);
	struct failure *f;
	int ret;

	if (!j)
		return;
	snprintf(device, sizeof(device), "%s", d->name);
	snprintf(profile, sizeof(profile), "%s", j->profile);
	if (d->absent) {
		/* rmdir there would only forget it, and its instance may come back: wait for the card. */
		snprintf(why, sizeof(why), "%s is absent; it is reclaimed once the card is back", device);
		ret = -ENODEV;
	} else {
		ret = fs_attached_rmdir(r.fs, device, profile, job, why, sizeof(why));
	}
	if (!ret) {
		log_info("%s: reclaimed (reclaim when-detached): its last container is gone", job);
		forget_failure(job);
		return;
	}
	f = failure_of(job, true);
	if (!f || strcmp(f->why, why)) {
		log_warn("%s: its last container is gone but it cannot be reclaimed yet (%s); trying again every %u ms",
		         job, why, r.poll_ms);
		if (f)
			snprintf(f->why, sizeof(f->why), "%s", why);
	}
}

static void pass(void)
{
	struct accel_attach *reg = r.fs->mount.attach;
	struct accel_snapshot *s;
	struct accel_sweep_event *ev;
	size_t n;

	if (!reg)
		return;
	s = accel_node_snapshot(r.fs->node);
	if (accel_attach_sweep(reg, exists, s, &ev, &n))
		log_warn("the sweep of stale attachments ran out of memory; trying again next pass");
	for (size_t i = 0; i < n; i++) {
		if (ev[i].gone.id[0]) {
			/* Its poststop hook may still come, or never (conmon killed, a crash): the pid decides. */
			log_info("%s: container %.12s has exited (pid %d is gone): attachment cleared", ev[i].job,
			         ev[i].gone.id, (int)ev[i].gone.pid);
			fs_attached_changed(r.fs, ev[i].job);
		}
		if (ev[i].due)
			reclaim(s, ev[i].job);
	}
	free(ev);
	accel_snapshot_unref(s);
}

static void *run(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&r.lock);
	while (!r.stopping) {
		struct timespec until;

		r.kicked = false;
		pthread_mutex_unlock(&r.lock);
		pass();
		pthread_mutex_lock(&r.lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += r.poll_ms / 1000;
		until.tv_nsec += (long)(r.poll_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!r.stopping && !r.kicked)
			if (pthread_cond_timedwait(&r.cond, &r.lock, &until) == ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&r.lock);
	return NULL;
}

int fs_reclaimer_start(struct accelfs *fs, unsigned poll_ms)
{
	pthread_condattr_t attr;
	int ret;

	r.fs = fs;
	r.poll_ms = poll_ms ? poll_ms : DEFAULT_POLL_MS;
	r.stopping = false;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&r.cond, &attr);
	pthread_condattr_destroy(&attr);
	ret = pthread_create(&r.thread, NULL, run, NULL);
	if (ret) {
		pthread_cond_destroy(&r.cond);
		return -ret;
	}
	pthread_mutex_lock(&r.lock);
	r.running = true;
	pthread_mutex_unlock(&r.lock);
	return 0;
}

void fs_reclaimer_kick(void)
{
	pthread_mutex_lock(&r.lock);
	r.kicked = true;
	if (r.running)
		pthread_cond_signal(&r.cond);
	pthread_mutex_unlock(&r.lock);
}

void fs_reclaimer_stop(void)
{
	if (!r.running)
		return;
	pthread_mutex_lock(&r.lock);
	r.stopping = true;
	pthread_cond_signal(&r.cond);
	pthread_mutex_unlock(&r.lock);
	pthread_join(r.thread, NULL);
	pthread_cond_destroy(&r.cond);
	r.running = false;
	free(r.failed);
	r.failed = NULL;
	r.n_failed = 0;
}
