/* SPDX-License-Identifier: MIT */
#include "core/state/attach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/state/attach_internal.h"
#include "core/model/log.h"

/*
 * After a change that stands whether or not the file follows (a process
 * found gone, a removal finished): the file is written, and if it cannot be
 * (attach_store_write said why in the log), the next change writes it again.
 */
static void save_what_happened(struct accel_attach *a)
{
	int ret = attach_store_save(&a->store, a->e, a->n, false);

	if (ret == -ENOMEM)
		log_warn("cannot write %s: out of memory (the next change writes it again)", a->store.path);
	a->unsaved = ret && ret != -EROFS; /* read-only: in memory alone, by design */
}

/* Tell whoever sweeps (accel_attach_wake_fd).  A full counter (EAGAIN) is a wake-up pending already. */
static void wake_sweeper(struct accel_attach *a)
{
	uint64_t one = 1;

	if (a->wake >= 0 && write(a->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("the registry cannot wake the reclaimer: %s", strerror(errno));
}

/*
 * Every pass ends here: the file catches up, and the sweeper hears of what
 * is its.  One that changed something (moved) also lets readers see it and
 * closes a watch whose attachment went.  One that changed nothing (a quiet
 * sweep) publishes no view: a view's generation moves with what it shows,
 * since a waiter's check compares it (fs/waiters.h: a sweep every few
 * seconds that published anyway made every waiter on node.json render it
 * again, to find the same text).
 */
static void end_pass(struct accel_attach *a, bool moved)
{
	if (a->unsaved)
		save_what_happened(a);
	if (moved) {
		attach_view_publish(a);
		attach_watch_sync(a);
	}
	if (a->news)
		wake_sweeper(a);
	a->news = false;
	pthread_mutex_unlock(&a->lock);
}

/* Every change ends here. */
static void done(struct accel_attach *a)
{
	end_pass(a, true);
}

void accel_attach_set_read_only(struct accel_attach *a)
{
	pthread_mutex_lock(&a->lock);
	a->store.read_only = true;
	pthread_mutex_unlock(&a->lock);
}

int accel_attach_wake_fd(const struct accel_attach *a)
{
	return a->wake;
}

/* ---- the entries ---------------------------------------------------------- */

static struct attach_entry *find(struct accel_attach *a, const char *job)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->e[i].job, job))
			return &a->e[i];
	return NULL;
}

/* Is e about instance uuid (NULL or "": whatever instance)? */
static bool same_instance(const struct attach_entry *e, const char *uuid)
{
	return !uuid || !uuid[0] || !e->uuid[0] || !strcmp(e->uuid, uuid);
}

static void entry_reset(struct attach_entry *e, const char *uuid)
{
	free(e->c);
	e->c = NULL;
	e->n = 0;
	e->reclaim = ACCEL_RECLAIM_MANUAL;
	e->armed = false;
	snprintf(e->uuid, sizeof(e->uuid), "%s", uuid ? uuid : "");
}

static struct attach_entry *get(struct accel_attach *a, const char *job, const char *uuid)
{
	struct attach_entry *e = find(a, job), *grown;

	if (e) {
		if (!same_instance(e, uuid))
			entry_reset(e, uuid); /* an earlier job of that name: its record does not carry over */
		else if (uuid && uuid[0] && !e->uuid[0])
			snprintf(e->uuid, sizeof(e->uuid), "%s", uuid);
		return e;
	}
	grown = realloc(a->e, (a->n + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	a->e = grown;
	e = &a->e[a->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->job, sizeof(e->job), "%s", job);
	snprintf(e->uuid, sizeof(e->uuid), "%s", uuid ? uuid : "");
	return e;
}

static void drop(struct accel_attach *a, struct attach_entry *e)
{
	size_t i = (size_t)(e - a->e);

	free(e->c);
	memmove(&a->e[i], &a->e[i + 1], (a->n - i - 1) * sizeof(*e));
	a->n--;
}

static void remove_at(struct attach_entry *e, size_t i)
{
	memmove(&e->c[i], &e->c[i + 1], (e->n - i - 1) * sizeof(e->c[0]));
	e->n--;
}

/* Drop the attachments whose process is gone; the dropped ones go to gone (if given). */
static size_t prune(struct accel_attach *a, struct attach_entry *e, struct accel_attachment *gone, size_t cap)
{
	size_t n_gone = 0;

	for (size_t i = 0; i < e->n;) {
		if (attach_watch_alive(a, e->job, &e->c[i])) {
			i++;
			continue;
		}
		if (gone && n_gone < cap)
			gone[n_gone] = e->c[i];
		n_gone++;
		remove_at(e, i);
	}
	return n_gone;
}

static bool due(const struct attach_entry *e)
{
	return e->reclaim == ACCEL_RECLAIM_WHEN_DETACHED && e->armed && !e->n && !e->removing;
}

struct accel_attach *accel_attach_open(const char *state_dir, const char *proc_root, char *err, size_t errlen)
{
	struct accel_attach *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->view_lock, NULL);
	attach_store_init(&a->store, state_dir);
	a->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (a->wake < 0) {
		snprintf(err, errlen, "cannot make the registry's eventfd: %s", strerror(errno));
		accel_attach_close(a);
		return NULL;
	}
	snprintf(a->proc_root, sizeof(a->proc_root), "%s", proc_root);
	/* A pidfd is of a real process: a faked /proc's pids are not (a test turns them on for real ones). */
	a->pidfds = !strcmp(proc_root, "/proc");
	if (attach_store_load(&a->store, &a->e, &a->n, err, errlen)) {
		accel_attach_close(a);
		return NULL;
	}
	attach_view_publish(a);
	if (!a->view) {
		snprintf(err, errlen, "out of memory");
		accel_attach_close(a);
		return NULL;
	}
	return a;
}

void accel_attach_close(struct accel_attach *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->e[i].c);
	free(a->e);
	attach_watch_close_all(a);
	attach_view_unpublish(a);
	if (a->wake >= 0)
		close(a->wake);
	attach_store_fini(&a->store);
	pthread_mutex_destroy(&a->view_lock);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* ---- operations ------------------------------------------------------------ */

int accel_attach_add(struct accel_attach *a, const char *job, const char *uuid, const char *id, pid_t pid, char *why,
                     size_t whylen)
{
	struct accel_attachment c;
	struct attach_entry *e;
	char quoted[48];
	size_t i;
	int ret, fd = -1;

	if (!accel_container_id_valid(id)) {
		snprintf(why, whylen, "'%s' is not a container id (" ACCEL_CONTAINER_ID_RULE ")",
		         accel_word_quote(id, strlen(id), quoted, sizeof(quoted)));
		return -EINVAL;
	}
	if (pid == 1 || pid == getpid()) {
		snprintf(why, whylen,
		         "container %.12s: pid %d is %s, not a container's process: the runtime passes its "
		         "container's first process (the OCI state's pid)",
		         id, (int)pid,
		         pid == 1 ? "init, which never exits (the job would be held for good)" : "accelfs itself");
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	snprintf(c.id, sizeof(c.id), "%s", id);
	c.pid = pid;
	c.since = (int64_t)time(NULL);
	pthread_mutex_lock(&a->lock);
	/* The pidfd first, then the start time: both are then of the one process (core/state/attach_watch.c). */
	if (attach_watch_open(a, pid, &fd, &c.start)) {
		pthread_mutex_unlock(&a->lock);
		snprintf(why, whylen, "container %.12s: its process %d does not exist", id, (int)pid);
		return -ESRCH;
	}
	e = find(a, job);
	if (e && e->removing) {
		ret = -EBUSY;
		snprintf(why, whylen, "%s is being removed (rmdir): it cannot be given to container %.12s", job, id);
		goto out;
	}
	if (e && !same_instance(e, uuid)) {
		prune(a, e, NULL, 0);
		if (e->n) {
			/* Only a removed job's entry may be replaced, and that one has no live container. */
			ret = -ESTALE;
			snprintf(why, whylen,
			         "%s is instance %s, not %s: the container was given an earlier job of "
			         "that name",
			         job, e->uuid, uuid);
			goto out;
		}
	}
	e = get(a, job, uuid);
	ret = -ENOMEM;
	if (!e) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (i = 0; i < e->n && strcmp(e->c[i].id, id); i++)
		;
	if (i == e->n) {
		struct accel_attachment *grown = realloc(e->c, (e->n + 1) * sizeof(*grown));
		if (!grown) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		e->c = grown;
		e->n++;
	}
	e->c[i] = c;
	bool was_armed = e->armed;
	e->armed = true;
	ret = attach_store_save(&a->store, a->e, a->n, false);
	if (ret) {
		remove_at(e, i);
		e->armed = was_armed;
		snprintf(why, whylen, "cannot record the attachment in %s: %s", a->store.path, strerror(-ret));
	} else {
		a->news = true; /* a process to watch */
		if (fd >= 0) {
			attach_watch_adopt(a, job, &c, fd);
			fd = -1;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	done(a);
	return ret;
}

int accel_attach_remove(struct accel_attach *a, const char *job, const char *uuid, const char *id, bool *now_due)
{
	struct attach_entry *e;
	int ret = 0;

	*now_due = false;
	pthread_mutex_lock(&a->lock);
	e = find(a, job);
	if (e && same_instance(e, uuid)) {
		for (size_t i = 0; i < e->n; i++)
			if (!strcmp(e->c[i].id, id)) {
				remove_at(e, i);
				prune(a, e, NULL, 0);
				*now_due = due(e);
				a->news = *now_due;
				ret = attach_store_save(&a->store, a->e, a->n, false);
				a->unsaved = ret && ret != -EROFS; /* gone all the same: the next change writes it */
				break;
			}
	}
	done(a);
	return ret;
}

int accel_attach_set_reclaim(struct accel_attach *a, const char *job, const char *uuid, enum accel_reclaim r,
                             bool *now_due)
{
	enum accel_reclaim old;
	struct attach_entry *e;
	uint64_t seq;
	char *text;
	bool was_due;
	int ret;

	*now_due = false;
	pthread_mutex_lock(&a->lock);
	e = get(a, job, uuid);
	if (!e) {
		pthread_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	old = e->reclaim;
	e->reclaim = r;
	prune(a, e, NULL, 0);
	ret = attach_store_text(&a->store, a->e, a->n, &text, &seq);
	if (ret)
		e->reclaim = old;
	was_due = due(e);
	if (attach_entry_idle(e))
		drop(a, e);
	done(a);
	if (ret)
		return ret;
	/* A policy is configuration: it must survive a host crash, unlike the attachments; fsync'd unlocked. */
	ret = attach_store_write(&a->store, text, seq, true);
	if (ret) {
		/* Not recorded: the policy before stands, unless another change set one meanwhile. */
		pthread_mutex_lock(&a->lock);
		e = find(a, job);
		if (e && same_instance(e, uuid) && e->reclaim == r) {
			e->reclaim = old;
			if (attach_entry_idle(e))
				drop(a, e);
			save_what_happened(a);
		}
		done(a);
		return ret;
	}
	*now_due = was_due;
	if (was_due)
		wake_sweeper(a);
	return 0;
}

int accel_attach_rmdir_begin(struct accel_attach *a, const char *job, const char *uuid, char *why, size_t whylen)
{
	struct attach_entry *e;
	size_t used;

	pthread_mutex_lock(&a->lock);
	e = find(a, job);
	/*
	 * An entry of another instance of that name is not this removal's to
	 * reset: it may be a newer job's (the caller's uuid read earlier) or an
	 * older one's that the next sweep forgets.  Its live containers still
	 * refuse: they were given a job of this name.
	 */
	if (!e || same_instance(e, uuid))
		e = get(a, job, uuid);
	if (!e) {
		done(a);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (prune(a, e, NULL, 0))
		save_what_happened(a);
	if (!e->n) {
		e->removing = true;
		done(a);
		return 0;
	}
	used = (size_t)snprintf(why, whylen, "%s is attached to %zu container%s:", job, e->n, e->n == 1 ? "" : "s");
	for (size_t i = 0; i < e->n && used < whylen; i++)
		used += (size_t)snprintf(why + used, whylen - used, "%s %.12s (pid %d)", i ? "," : "", e->c[i].id,
		                         (int)e->c[i].pid);
	if (used < whylen)
		snprintf(why + used, whylen - used,
		         ": stop %s first (podman stop ID); an attachment clears when its container exits",
		         e->n == 1 ? "it" : "them");
	done(a);
	return -EBUSY;
}

bool accel_attach_is_refusal(const char *text, const char *job)
{
	size_t n = strlen(job);

	/* The sentence accel_attach_rmdir_begin writes, and nothing else begins so. */
	return !strncmp(text, job, n) && !strncmp(text + n, " is attached to ", 16);
}

void accel_attach_rmdir_end(struct accel_attach *a, const char *job, const char *uuid, bool removed)
{
	struct attach_entry *e;

	pthread_mutex_lock(&a->lock);
	e = find(a, job);
	if (e) {
		e->removing = false;
		/* What was recorded for another instance (a job made again meanwhile) is that one's. */
		if ((removed && same_instance(e, uuid)) || attach_entry_idle(e)) {
			bool said_something = !attach_entry_idle(e);
			drop(a, e);
			if (said_something)
				save_what_happened(a);
		}
	}
	done(a);
}

int accel_attach_sweep(struct accel_attach *a, bool (*exists)(void *ctx, const char *job, const char *uuid), void *ctx,
                       struct accel_sweep_event **events, size_t *n_events)
{
	struct accel_sweep_event *ev = NULL;
	size_t n = 0, cap = 0;
	bool changed = false;
	int ret = 0;

	*events = NULL;
	*n_events = 0;
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->n;) {
		struct attach_entry *e = &a->e[i];
		struct accel_attachment gone[8];
		size_t n_gone;

		if (!e->removing && !exists(ctx, e->job, e->uuid)) {
			drop(a, e); /* the job is gone: nothing it had applies to anything */
			changed = true;
			continue;
		}
		n_gone = prune(a, e, gone, 8);
		changed = changed || n_gone;
		/* Each cleared attachment (the first 8 of a pass), then whether the job is now due. */
		for (size_t k = 0; k < (n_gone < 8 ? n_gone : 8) + 1 && !ret; k++) {
			bool last = k == (n_gone < 8 ? n_gone : 8);
			if (last && !due(e))
				break;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 8;
				struct accel_sweep_event *grown = realloc(ev, ncap * sizeof(*grown));
				if (!grown) {
					ret = -ENOMEM;
					break;
				}
				ev = grown;
				cap = ncap;
			}
			memset(&ev[n], 0, sizeof(ev[n]));
			snprintf(ev[n].job, sizeof(ev[n].job), "%s", e->job);
			snprintf(ev[n].uuid, sizeof(ev[n].uuid), "%s", e->uuid);
			if (!last)
				ev[n].gone = gone[k];
			ev[n].due = last;
			n++;
		}
		i++;
	}
	if (changed)
		save_what_happened(a);
	end_pass(a, changed);
	*events = ev;
	*n_events = n;
	return ret;
}
