/* SPDX-License-Identifier: MIT */
/*
 * The registry's file, <state-dir>/attachments.json (core/state/attach_store.c),
 * and the entries it keeps: what the registry (core/state/attach.c) hands
 * it, an array of entries and the file's own state, and nothing else of
 * the registry.  Nothing outside core/state/attach*.c includes this.
 */
#ifndef ACCEL_ATTACH_STORE_H
#define ACCEL_ATTACH_STORE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model/model.h"
#include "core/state/attachment.h"

/* What is known of one job: the file keeps all of it but `removing`. */
struct attach_entry {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX]; /* the instance this is about; "" until known */
	enum accel_reclaim reclaim;
	bool armed;    /* has had a container: when-detached applies once it has none */
	bool removing; /* rmdir in progress: nothing attaches (not kept on disk) */
	struct accel_attachment *c;
	size_t n;
};

/* An entry that says nothing: no container, manual, never attached, not being removed. */
static inline bool attach_entry_idle(const struct attach_entry *e)
{
	return !e->n && e->reclaim == ACCEL_RECLAIM_MANUAL && !e->armed && !e->removing;
}

/*
 * The file.  path, read_only and saves are under the registry's lock (the
 * serialization happens under it); saved and saved_text under lock, which
 * comes after the registry's.
 */
struct attach_store {
	char path[PATH_MAX]; /* <state-dir>/attachments.json */
	bool read_only;      /* the file is never written (accel_attach_set_read_only) */
	uint64_t saves;      /* serializations of the file so far */
	pthread_mutex_t lock;
	uint64_t saved;   /* under lock: the last serialization written */
	char *saved_text; /* under lock: its text */
};

void attach_store_init(struct attach_store *s, const char *state_dir);
void attach_store_fini(struct attach_store *s);
/*
 * Read s->path into *e, *n entries (a missing file is an empty registry):
 * 0, or -errno with err naming the file, what is wrong and what to do
 * (what was read before the fault is in *e all the same, for the caller to free).
 */
int attach_store_load(struct attach_store *s, struct attach_entry **e, size_t *n, char *err, size_t errlen);
/*
 * Replace s->path with what the n entries e say, atomically, under the
 * registry's lock; durable also fsyncs (configuration, not state).
 * -EROFS, writing nothing, when read-only.  A failure is logged: memory and
 * file disagree until the next save succeeds.
 */
int attach_store_save(struct attach_store *s, const struct attach_entry *e, size_t n, bool durable);
/*
 * The same in two steps, so that an fsync is not waited for under the
 * registry's lock: attach_store_text serializes the entries (under it) into
 * *text, the *seq'th save; attach_store_write (without it) writes it,
 * taking it, unless a later save was written meanwhile, which then says
 * more and is what is made durable.  0 or -errno.
 */
int attach_store_text(struct attach_store *s, const struct attach_entry *e, size_t n, char **text, uint64_t *seq);
int attach_store_write(struct attach_store *s, char *text, uint64_t seq, bool durable);

#endif
