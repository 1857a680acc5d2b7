/* SPDX-License-Identifier: MIT */
/*
 * The registry's insides, shared by its operations (core/state/attach.c) and its
 * file (core/state/attach_store.c).  Nothing else includes this.
 */
#ifndef ACCEL_ATTACH_INTERNAL_H
#define ACCEL_ATTACH_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

#include "core/state/attach.h"

struct attach_entry {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX]; /* the instance this is about; "" until known */
	enum accel_reclaim reclaim;
	bool armed;    /* has had a container: when-detached applies once it has none */
	bool removing; /* rmdir in progress: nothing attaches (not kept on disk) */
	struct accel_attachment *c;
	size_t n;
};

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
 * store_lock (the file's writes, in the order they were serialized), and
 * view_lock apart, a leaf held only to copy or swap the view pointer.
 */
struct accel_attach {
	pthread_mutex_t lock;
	char path[PATH_MAX]; /* <state-dir>/attachments.json */
	char proc_root[PATH_MAX];
	struct attach_entry *e;
	size_t n;
	bool pidfds;       /* follow processes by pidfd (accel_attach_set_pidfds) */
	bool pidfd_warned; /* a pidfd could not be opened, and the log said so */
	struct attach_watch *w;
	size_t n_w;
	bool read_only;      /* the file is never written (accel_attach_set_read_only) */
	uint64_t generation; /* of the last view published */
	bool unsaved;        /* the file says less than memory (a write failed): the next change writes it */
	bool news;           /* this change gives the sweeper something to do: wake is written */
	int wake;            /* an eventfd (accel_attach_wake_fd) */
	uint64_t saves;      /* serializations of the file so far */
	pthread_mutex_t view_lock;
	struct accel_attach_view *view; /* under view_lock: what readers see */
	pthread_mutex_t store_lock;
	uint64_t saved;   /* under store_lock: the last serialization written */
	char *saved_text; /* under store_lock: its text */
};

/* An entry that says nothing: no container, manual, never attached, not being removed. */
static inline bool attach_entry_idle(const struct attach_entry *e)
{
	return !e->n && e->reclaim == ACCEL_RECLAIM_MANUAL && !e->armed && !e->removing;
}

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

/*
 * Read a->path into a->e (a missing file is an empty registry): 0, or
 * -errno with err naming the file, what is wrong and what to do.
 */
int attach_store_load(struct accel_attach *a, char *err, size_t errlen);
/*
 * Replace a->path with what a says, atomically, under a->lock; durable also
 * fsyncs (configuration, not state).  -EROFS, writing nothing, when
 * read-only.  A failure is logged: memory and file disagree until the next
 * save succeeds.
 */
int attach_store_save(struct accel_attach *a, bool durable);
/*
 * The same in two steps, so that an fsync is not waited for under a->lock:
 * attach_store_text serializes a (under a->lock) into *text, the *seq'th
 * save; attach_store_write (without a->lock) writes it, taking it, unless
 * a later save was written meanwhile, which then says more and is what is
 * made durable.  0 or -errno.
 */
int attach_store_text(struct accel_attach *a, char **text, uint64_t *seq);
int attach_store_write(struct accel_attach *a, char *text, uint64_t seq, bool durable);

/* Publish what a says now as the readers' view (under a->lock, at the end of every change). */
void attach_view_publish(struct accel_attach *a);
void attach_view_unpublish(struct accel_attach *a);

#endif
