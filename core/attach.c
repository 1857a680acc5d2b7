/* SPDX-License-Identifier: MIT */
#include "core/attach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/attach_internal.h"

bool accel_pid_alive(const char *proc_root, pid_t pid, unsigned long long want, unsigned long long *start)
{
	char path[PATH_MAX], buf[1024], *p, state;
	unsigned long long st = 0;
	FILE *f;
	size_t len;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* The command may hold spaces and parentheses: the fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
	                 &state, &st) != 2)
		return false;
	/* A zombie has exited: nothing of the container runs any more. */
	if (state == 'Z' || state == 'X')
		return false;
	if (start)
		*start = st;
	return !want || st == want;
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
		if (accel_pid_alive(a->proc_root, e->c[i].pid, e->c[i].start, NULL)) {
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
	snprintf(a->path, sizeof(a->path), "%s/attachments.json", state_dir);
	snprintf(a->proc_root, sizeof(a->proc_root), "%s", proc_root);
	if (attach_store_load(a, err, errlen)) {
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
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* ---- operations ------------------------------------------------------------ */

int accel_attach_add(struct accel_attach *a, const char *job, const char *uuid, const char *id, pid_t pid, char *why,
                     size_t whylen)
{
	struct accel_attachment c;
	struct attach_entry *e;
	size_t i;
	int ret;

	if (!accel_container_id_valid(id)) {
		snprintf(why, whylen, "'%.40s' is not a container id (1 to %d of [A-Za-z0-9_+.-])", id,
		         ACCEL_CONTAINER_ID_MAX);
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	snprintf(c.id, sizeof(c.id), "%s", id);
	c.pid = pid;
	c.since = (int64_t)time(NULL);
	if (!accel_pid_alive(a->proc_root, pid, 0, &c.start)) {
		snprintf(why, whylen, "container %.12s: its process %d does not exist", id, (int)pid);
		return -ESRCH;
	}
	pthread_mutex_lock(&a->lock);
	e = find(a, job);
	if (e && e->removing) {
		pthread_mutex_unlock(&a->lock);
		snprintf(why, whylen, "%s is being removed (rmdir): it cannot be given to container %.12s", job, id);
		return -EBUSY;
	}
	if (e && !same_instance(e, uuid)) {
		prune(a, e, NULL, 0);
		if (e->n) {
			/* Only a removed job's entry may be replaced, and that one has no live container. */
			pthread_mutex_unlock(&a->lock);
			snprintf(why, whylen,
			         "%s is instance %s, not %s: the container was given an earlier job of "
			         "that name",
			         job, e->uuid, uuid);
			return -ESTALE;
		}
	}
	e = get(a, job, uuid);
	if (!e) {
		pthread_mutex_unlock(&a->lock);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < e->n && strcmp(e->c[i].id, id); i++)
		;
	if (i == e->n) {
		struct accel_attachment *grown = realloc(e->c, (e->n + 1) * sizeof(*grown));
		if (!grown) {
			pthread_mutex_unlock(&a->lock);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		e->c = grown;
		e->n++;
	}
	e->c[i] = c;
	bool was_armed = e->armed;
	e->armed = true;
	ret = attach_store_save(a, false);
	if (ret) {
		remove_at(e, i);
		e->armed = was_armed;
		snprintf(why, whylen, "cannot record the attachment in %s: %s", a->path, strerror(-ret));
	}
	pthread_mutex_unlock(&a->lock);
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
				ret = attach_store_save(a, false);
				break;
			}
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int accel_attach_list(struct accel_attach *a, const char *job, const char *uuid, struct accel_attachment **out,
                      size_t *n)
{
	struct attach_entry *e;
	int ret = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&a->lock);
	e = find(a, job);
	if (e && same_instance(e, uuid)) {
		/* A reader is told the truth now, not at the next sweep. */
		if (prune(a, e, NULL, 0))
			attach_store_save(a, false);
		if (e->n) {
			*out = malloc(e->n * sizeof(**out));
			if (*out) {
				memcpy(*out, e->c, e->n * sizeof(**out));
				*n = e->n;
			} else {
				ret = -ENOMEM;
			}
		}
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

enum accel_reclaim accel_attach_reclaim(struct accel_attach *a, const char *job, const char *uuid)
{
	enum accel_reclaim r = ACCEL_RECLAIM_MANUAL;
	struct attach_entry *e;

	pthread_mutex_lock(&a->lock);
	e = find(a, job);
	if (e && same_instance(e, uuid))
		r = e->reclaim;
	pthread_mutex_unlock(&a->lock);
	return r;
}

int accel_attach_set_reclaim(struct accel_attach *a, const char *job, const char *uuid, enum accel_reclaim r,
                             bool *now_due)
{
	enum accel_reclaim old;
	struct attach_entry *e;
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
	/* A policy is configuration: it must survive a host crash, unlike the attachments. */
	ret = attach_store_save(a, true);
	if (ret)
		e->reclaim = old;
	else
		*now_due = due(e);
	if (attach_entry_idle(e))
		drop(a, e);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int accel_attach_rmdir_begin(struct accel_attach *a, const char *job, char *why, size_t whylen)
{
	struct attach_entry *e;
	size_t used;

	pthread_mutex_lock(&a->lock);
	e = get(a, job, NULL);
	if (!e) {
		pthread_mutex_unlock(&a->lock);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (prune(a, e, NULL, 0))
		attach_store_save(a, false);
	if (!e->n) {
		e->removing = true;
		pthread_mutex_unlock(&a->lock);
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
	pthread_mutex_unlock(&a->lock);
	return -EBUSY;
}

void accel_attach_rmdir_end(struct accel_attach *a, const char *job, bool removed)
{
	struct attach_entry *e;

	pthread_mutex_lock(&a->lock);
	e = find(a, job);
	if (e) {
		e->removing = false;
		if (removed || attach_entry_idle(e)) {
			bool said_something = !attach_entry_idle(e);
			drop(a, e);
			if (said_something)
				attach_store_save(a, false);
		}
	}
	pthread_mutex_unlock(&a->lock);
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
			if (!last)
				ev[n].gone = gone[k];
			ev[n].due = last;
			n++;
		}
		i++;
	}
	if (changed)
		attach_store_save(a, false);
	pthread_mutex_unlock(&a->lock);
	*events = ev;
	*n_events = n;
	return ret;
}
