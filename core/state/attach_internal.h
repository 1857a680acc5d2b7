/* SPDX-License-Identifier: MIT */
/*
 * The registry's insides, shared by its operations (core/state/attach.c), its
 * watches (core/state/attach_watch.c) and its view (core/state/attach_view.c).
 * Nothing else includes this; the file (core/state/attach_store.c) is handed
 * the entries and its own state alone (core/state/attach_store.h).
 */
#ifndef ACCEL_ATTACH_INTERNAL_H
#define ACCEL_ATTACH_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

#include "core/state/attach.h"
#include "core/state/attach_store.h"

/*
 * A pidfd held on the process of one attachment (core/state/attach_watch.c),
 * matched to it by job, container id, pid and start time: an attachment
 * whose pid or start changed is another process, and gets a watch of its
 * own.
 */
struct attach_watch {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char id[ACCEL_CONTAINER_ID_MAX + 1];
	pid_t pid;
	unsigned long long start;
	int fd;
};

/*
 * Locks, in order: lock (everything below but what says otherwise), then
 * store.lock (the file's writes, in the order they were serialized), and
 * view_lock apart, a leaf held only to copy or swap the view pointer.
 */
struct accel_attach {
	pthread_mutex_t lock;
	struct attach_store store; /* the file (core/state/attach_store.h) */
	char proc_root[PATH_MAX];
	struct attach_entry *e;
	size_t n;
	bool pidfds;       /* follow processes by pidfd (accel_attach_set_pidfds) */
	bool pidfd_warned; /* a pidfd could not be opened, and the log said so */
	struct attach_watch *w;
	size_t n_w;
	uint64_t generation; /* of the last view published */
	bool unsaved;        /* the file says less than memory (a write failed): the next change writes it */
	bool news;           /* this change gives the sweeper something to do: wake is written */
	int wake;            /* an eventfd (accel_attach_wake_fd) */
	pthread_mutex_t view_lock;
	struct accel_attach_view *view; /* under view_lock: what readers see */
};

/*
 * The processes of the attachments (core/state/attach_watch.c), under a->lock.
 *
 * attach_watch_open: for a new attachment, a pidfd on pid (-1 in *fd when
 * pidfds are off or the kernel refuses one) and the start time of the very
 * process it holds: 0, or -ESRCH when there is no such live process.
 * attach_watch_adopt: keep fd as the watch of attachment c of job.
 * attach_watch_alive: is c still its process?  By its pidfd, opened now
 * for an attachment that has none (one loaded from disk: kept only if the
 * start time matches); by pid and start time without pidfds.
 * attach_watch_sync: close the watches no attachment matches any more.
 */
int attach_watch_open(struct accel_attach *a, pid_t pid, int *fd, unsigned long long *start);
void attach_watch_adopt(struct accel_attach *a, const char *job, const struct accel_attachment *c, int fd);
bool attach_watch_alive(struct accel_attach *a, const char *job, const struct accel_attachment *c);
void attach_watch_sync(struct accel_attach *a);
void attach_watch_close_all(struct accel_attach *a);

/* Publish what a says now as the readers' view (under a->lock, at the end of every change). */
void attach_view_publish(struct accel_attach *a);
void attach_view_unpublish(struct accel_attach *a);

#endif
