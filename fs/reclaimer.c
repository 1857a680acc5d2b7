/* SPDX-License-Identifier: MIT */
#include "fs/reclaimer.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/state/attach.h"
#include "core/model/log.h"
#include "core/engine/node.h"
#include "fs/accelfs.h"
#include "fs/attached.h"
#include "core/engine/rmdir_guard.h"
#include "fs/notify.h"

#define DEFAULT_POLL_MS 2000

/* The last reason a job instance could not be reclaimed, so that a retry every pass is logged once. */
struct failure {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX];
	char why[ACCEL_TEXT_MAX];
};

struct fs_reclaimer {
	pthread_mutex_t lock;
	pthread_t thread;
	bool stopping;
	int wake; /* an eventfd: stop */
	struct accelfs *fs;
	unsigned poll_ms;
	struct failure *failed; /* touched by the thread alone */
	size_t n_failed;
};

static struct failure *failure_of(struct fs_reclaimer *r, const char *job, const char *uuid, bool create)
{
	struct failure *grown;

	for (size_t i = 0; i < r->n_failed; i++)
		if (!strcmp(r->failed[i].job, job) && !strcmp(r->failed[i].uuid, uuid))
			return &r->failed[i];
	if (!create)
		return NULL;
	grown = realloc(r->failed, (r->n_failed + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	r->failed = grown;
	memset(&r->failed[r->n_failed], 0, sizeof(r->failed[0]));
	snprintf(r->failed[r->n_failed].job, sizeof(r->failed[0].job), "%s", job);
	snprintf(r->failed[r->n_failed].uuid, sizeof(r->failed[0].uuid), "%s", uuid);
	return &r->failed[r->n_failed++];
}

static void forget_failure(struct fs_reclaimer *r, const char *job, const char *uuid)
{
	struct failure *f = failure_of(r, job, uuid, false);

	if (f) {
		size_t i = (size_t)(f - r->failed);
		memmove(&r->failed[i], &r->failed[i + 1], (r->n_failed - i - 1) * sizeof(*f));
		r->n_failed--;
	}
}

/*
 * Does the job of that instance still exist?  (A registry entry of one that
 * does not is forgotten.)  Asked of the newest snapshot, taken under the
 * registry's lock: one older than the entry could miss a job made since.
 */
static bool exists(void *ctx, const char *job, const char *uuid)
{
	struct accel_snapshot *s = accel_node_snapshot(ctx);
	const struct accel_job *j = accel_snapshot_job(s, job, NULL);
	bool yes = j && (!uuid[0] || !strcmp(j->uuid, uuid));

	accel_snapshot_unref(s);
	return yes;
}

/*
 * Reclaim the instance the sweep found due, and only that one: the list
 * was made before this pass began its removals, and meanwhile the job may
 * have been removed by hand and made again under its name.  The newest
 * snapshot says where it is; core checks the UUID again under the card's
 * lock (-ESTALE).
 */
static void reclaim(struct fs_reclaimer *r, const char *job, const char *uuid)
{
	char device[32], profile[ACCEL_NAME_MAX], now[ACCEL_UUID_MAX], why[ACCEL_TEXT_MAX] = "";
	struct accel_snapshot *s = accel_node_snapshot(r->fs->node);
	const struct accel_device *d;
	const struct accel_job *j = accel_snapshot_job(s, job, &d);
	struct failure *f;
	bool found = j != NULL, absent = false;
	int ret;

	if (found) {
		snprintf(device, sizeof(device), "%s", d->name);
		snprintf(profile, sizeof(profile), "%s", j->profile);
		snprintf(now, sizeof(now), "%s", j->uuid);
		absent = d->absent;
	}
	accel_snapshot_unref(s); /* j and d go with it: what is needed was copied */
	if (!found || (uuid[0] && strcmp(now, uuid))) {
		if (found)
			log_info("%s: not reclaimed (reclaim when-detached): the job of that name is another instance "
			         "now (%s), not %s whose last container went",
			         job, now, uuid);
		else
			log_info("%s: not reclaimed (reclaim when-detached): it was removed already", job);
		forget_failure(r, job, uuid);
		return;
	}
	if (absent) {
		/* rmdir there would only forget it, and its instance may come back: wait for the card. */
		snprintf(why, sizeof(why), "%s is absent; it is reclaimed once the card is back", device);
		ret = -ENODEV;
	} else {
		ret = accel_job_rmdir(r->fs->node, r->fs->mount.attach, device, profile, job, uuid[0] ? uuid : NULL,
		                      why, sizeof(why));
	}
	if (!ret) {
		log_info("%s: reclaimed (reclaim when-detached): its last container is gone", job);
		forget_failure(r, job, uuid);
		return;
	}
	if (ret == -ESTALE) {
		log_info("%s: not reclaimed (reclaim when-detached): %s", job, why);
		forget_failure(r, job, uuid);
		return;
	}
	f = failure_of(r, job, uuid, true);
	if (!f || strcmp(f->why, why)) {
		log_warn("%s: its last container is gone but it cannot be reclaimed yet (%s); trying again every %u ms",
		         job, why, r->poll_ms);
		if (f)
			snprintf(f->why, sizeof(f->why), "%s", why);
	}
}

static void pass(struct fs_reclaimer *r)
{
	struct accel_attach *reg = r->fs->mount.attach;
	struct accel_sweep_event *ev;
	bool cleared = false;
	size_t n;

	if (!reg)
		return;
	if (accel_attach_sweep(reg, exists, r->fs->node, &ev, &n))
		log_warn("the sweep of stale attachments ran out of memory; trying again next pass");
	for (size_t i = 0; i < n; i++) {
		if (ev[i].gone.id[0]) {
			/* Its poststop hook may still come, or never (conmon killed, a crash): the process decides. */
			log_info("%s: container %.12s has exited (pid %d is gone): attachment cleared", ev[i].job,
			         ev[i].gone.id, (int)ev[i].gone.pid);
			fs_attached_gone(r->fs, ev[i].job);
			cleared = true;
		}
		if (ev[i].due)
			reclaim(r, ev[i].job, ev[i].uuid);
	}
	free(ev);
	/* The status of those jobs said those containers: the notifier compares the registry's views. */
	if (cleared)
		fs_notify_check(r->fs);
}

/*
 * Until the next pass is due: a poll interval, a kick, or the exit of an
 * attached container's process (its pidfd turns readable), whichever
 * comes first.
 */
static void wait_for_news(struct fs_reclaimer *r)
{
	struct accel_attach *reg = r->fs->mount.attach;
	struct pollfd *p;
	int *fds = NULL;
	size_t n = 0;
	uint64_t count;

	if (reg && accel_attach_pidfds(reg, &fds, &n))
		n = 0; /* out of descriptors or memory: the poll interval still comes */
	p = calloc(n + 2, sizeof(*p));
	if (p) {
		p[0].fd = r->wake;
		p[0].events = POLLIN;
		/* The registry's news: a process to watch (an attach), a job due (a detach, a policy). */
		p[1].fd = reg ? accel_attach_wake_fd(reg) : -1;
		p[1].events = POLLIN;
		for (size_t i = 0; i < n; i++) {
			p[i + 2].fd = fds[i];
			p[i + 2].events = POLLIN;
		}
		if (poll(p, n + 2, (int)r->poll_ms) < 0 && errno != EINTR)
			log_warn("the reclaimer cannot wait (%s); passing every %u ms", strerror(errno), r->poll_ms);
		free(p);
	} else {
		struct pollfd one = { .fd = r->wake, .events = POLLIN };
		poll(&one, 1, (int)r->poll_ms);
	}
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	if (read(r->wake, &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_warn("the reclaimer's wake-up cannot be read: %s", strerror(errno));
	if (reg && read(accel_attach_wake_fd(reg), &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_warn("the registry's wake-up cannot be read: %s", strerror(errno));
}

static bool stopping(struct fs_reclaimer *r)
{
	bool yes;

	pthread_mutex_lock(&r->lock);
	yes = r->stopping;
	pthread_mutex_unlock(&r->lock);
	return yes;
}

static void *run(void *arg)
{
	struct fs_reclaimer *r = arg;

	while (!stopping(r)) {
		pass(r);
		if (!stopping(r))
			wait_for_news(r);
	}
	return NULL;
}

struct fs_reclaimer *fs_reclaimer_start(struct accelfs *fs, unsigned poll_ms, int *err)
{
	struct fs_reclaimer *r = calloc(1, sizeof(*r));

	*err = 0;
	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->fs = fs;
	r->poll_ms = poll_ms ? poll_ms : DEFAULT_POLL_MS;
	r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake < 0)
		*err = -errno;
	else if ((*err = -pthread_create(&r->thread, NULL, run, r)))
		close(r->wake);
	if (*err) {
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;
	}
	pthread_setname_np(r->thread, "reclaimer");
	return r;
}

static void wake(struct fs_reclaimer *r)
{
	uint64_t one = 1;

	/* A full counter (EAGAIN) is a wake-up already pending: nothing is lost. */
	if (write(r->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("the reclaimer cannot be woken: %s", strerror(errno));
}

void fs_reclaimer_stop(struct fs_reclaimer *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	wake(r);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	close(r->wake);
	pthread_mutex_destroy(&r->lock);
	free(r->failed);
	free(r);
}
