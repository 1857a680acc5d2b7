/* SPDX-License-Identifier: MIT */
/*
 * Attachments: which containers a job was given.
 *
 * A container given a job by CDI has the job's device numbers in its
 * device cgroup whether or not it has opened a node yet, and the driver
 * hands the same numbers to the next job carved on that card.  So a job is
 * busy from the moment a runtime creates a container with it (the OCI
 * createRuntime hook attaches) until that container is gone (its poststop
 * hook detaches, or its process is found dead).  While a job has
 * attachments it cannot be removed.
 *
 * A container is known by its id and the pid of its first process, and
 * that process by its pid and start time (from /proc/<pid>/stat): what is
 * kept on disk.  While the registry is open it also holds a pidfd of each
 * such process (pidfd_open(2), where the kernel has it), which follows the
 * process itself: a pid reused within one clock tick (the same start time)
 * is not taken for the container, and an exit is known when it happens
 * (the pidfd becomes readable; accel_attach_pidfds is for poll()).  A
 * pidfd does not outlive the daemon: after a restart it is opened again
 * from the pid, and kept only if the start time still matches.  Without
 * pidfds (an older kernel) pid and start time decide alone.
 *
 * Per job there is also the reclaim policy: `manual`, or `when-detached`,
 * which removes the job once its last container goes.
 *
 * Kept in <state-dir>/attachments.json, replaced atomically at every
 * change, so a restarted daemon knows what its predecessor knew.  It is
 * not fsync'd: a host crash takes the containers with it.
 *
 * Entries are keyed by job name (unique on the node) and tagged with the
 * job's MIG UUID: a later job of the same name is another instance, and
 * what was recorded for the old one does not carry over.  Whatever acts on
 * a job passes the instance it means (its MIG UUID), never a name alone.
 *
 * Thread-safe.  A change blocks on nothing but the registry's own lock and
 * the file it writes (a reclaim policy's fsync is waited for outside the
 * lock); a reader (accel_attach_view) on nothing but a pointer copy.
 */
#ifndef ACCEL_ATTACH_H
#define ACCEL_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/model.h"
#include "core/state/attachment.h"

struct accel_attach;

/*
 * Open the registry of state_dir (absent file: nothing attached).  proc_root
 * is "/proc" (tests may point elsewhere).  NULL with err set when the file
 * cannot be read or parsed: starting without knowing which jobs containers
 * hold could reclaim one from under a container.
 */
struct accel_attach *accel_attach_open(const char *state_dir, const char *proc_root, char *err, size_t errlen);
void accel_attach_close(struct accel_attach *a);
/*
 * From now on the file is never written (a --read-only daemon): what the
 * registry learns (a container found gone) changes it in memory only, an
 * attach or a reclaim policy fails with -EROFS and changes nothing, and a
 * detach answers -EROFS (the daemon refuses every write before any of
 * these is asked).
 */
void accel_attach_set_read_only(struct accel_attach *a);

/*
 * Follow processes by pidfd (above).  On by default when proc_root is
 * "/proc"; a test that fakes /proc for real processes turns it on.  Off
 * also when the kernel has no pidfd_open.
 */
void accel_attach_set_pidfds(struct accel_attach *a, bool on);
/*
 * Copies (close-on-exec) of the pidfds the registry holds, for poll(): each
 * becomes readable (POLLIN) once its process has exited, and a sweep then
 * clears its attachment.  Malloc'd array (free()) of descriptors the caller
 * closes; possibly NULL with *n 0.
 */
int accel_attach_pidfds(struct accel_attach *a, int **fds, size_t *n);

/*
 * An eventfd that turns readable (POLLIN) when a change gives whoever
 * sweeps (the daemon's reclaimer) something to do: a process to watch (an
 * attach) or a job due (a detach, a reclaim policy).  Read 8 bytes from it
 * to clear it.  The registry's own: never closed by the caller.
 */
int accel_attach_wake_fd(const struct accel_attach *a);

/*
 * Record that container id, whose first process is pid, was given job
 * (MIG UUID uuid).  Attaching an id that is already attached updates its
 * pid (a restarted container).  -EINVAL for a bad id, and for pid 1 (init
 * never exits: the job would be held for good) and the daemon's own pid
 * (neither is a container's first process); -ESRCH when pid is not a live
 * process, -EBUSY while the job is being removed; why says so.  A write
 * error is returned after the attachment is undone.
 */
int accel_attach_add(struct accel_attach *a, const char *job, const char *uuid, const char *id, pid_t pid, char *why,
                     size_t whylen);

/*
 * Forget container id's attachment to job (uuid NULL: whatever instance).
 * 0 also when it was not attached (a poststop hook may run twice).  *due is
 * set when this left a when-detached job with no container: it should be
 * reclaimed now.
 */
int accel_attach_remove(struct accel_attach *a, const char *job, const char *uuid, const char *id, bool *due);

/*
 * What the registry says, for readers: an immutable copy published at the
 * end of every change.  Taking one copies a pointer under a leaf lock:
 * nothing else, never /proc, never the file.  So a container whose process
 * died is still listed until the reclaimer's sweep clears it (a pidfd wakes
 * it when the process exits; without pidfds, its next pass).
 */
struct accel_attach_job {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX]; /* "" when the entry never knew it */
	enum accel_reclaim reclaim;
	size_t n;
	const struct accel_attachment *c;
};
struct accel_attach_view {
	uint64_t generation; /* grows with every change published */
	size_t n;
	struct accel_attach_job *jobs;
};
/* The registry's view now (NULL for a NULL registry); accel_attach_view_unref it. */
struct accel_attach_view *accel_attach_view(struct accel_attach *a);
void accel_attach_view_unref(struct accel_attach_view *v);
/* What v says of job instance uuid (NULL: whatever instance), or NULL: nothing. */
const struct accel_attach_job *accel_attach_view_job(const struct accel_attach_view *v, const char *job,
                                                     const char *uuid);

/*
 * The attachments of job instance uuid, as the view says (malloc'd array,
 * free(), possibly NULL with *n 0), and its reclaim policy (manual unless set).
 */
int accel_attach_list(struct accel_attach *a, const char *job, const char *uuid, struct accel_attachment **out,
                      size_t *n);
enum accel_reclaim accel_attach_reclaim(struct accel_attach *a, const char *job, const char *uuid);
/*
 * Set it, durably.  *due is set when the job already had a container and
 * has none now: with when-detached, it should be reclaimed now.
 */
int accel_attach_set_reclaim(struct accel_attach *a, const char *job, const char *uuid, enum accel_reclaim r,
                             bool *due);

/*
 * rmdir's guard, for job instance uuid (NULL: whatever instance).  begin:
 * -EBUSY when the job has live attachments (or an entry of another
 * instance of that name has: they were given a job of that name), why
 * naming the containers; else the name is marked as being removed (attach
 * answers -EBUSY) until end.  What is recorded for another instance is
 * left as it is.  end: removed says instance uuid is gone, and everything
 * recorded for it (not for another instance) is forgotten.
 */
int accel_attach_rmdir_begin(struct accel_attach *a, const char *job, const char *uuid, char *why, size_t whylen);
/* Whether text is the sentence accel_attach_rmdir_begin refused job's removal with (its containers named). */
bool accel_attach_is_refusal(const char *text, const char *job);
void accel_attach_rmdir_end(struct accel_attach *a, const char *job, const char *uuid, bool removed);

/* What a sweep found, for the caller to log and act on: about instance uuid of job, and only that one. */
struct accel_sweep_event {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX];    /* "" when the entry never knew it */
	struct accel_attachment gone; /* a stale attachment that was cleared (id "" when none) */
	bool due;                     /* the job should be reclaimed now */
};

/*
 * Drop the attachments whose process is gone (their poststop hook never
 * ran) and the entries of jobs that no longer exist (exists(ctx, job, uuid)
 * false).  Reports each cleared attachment, and each when-detached job that
 * had a container and has none, as events (malloc'd, free()).
 */
int accel_attach_sweep(struct accel_attach *a, bool (*exists)(void *ctx, const char *job, const char *uuid), void *ctx,
                       struct accel_sweep_event **events, size_t *n);

/* Is the process pid alive (not a zombie) with this start time (0: any)?  Its start time in *start. */
bool accel_pid_alive(const char *proc_root, pid_t pid, unsigned long long want, unsigned long long *start);

#endif
