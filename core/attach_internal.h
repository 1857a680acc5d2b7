/* SPDX-License-Identifier: MIT */
/*
 * The registry's insides, shared by its operations (core/attach.c) and its
 * file (core/attach_store.c).  Nothing else includes this.
 */
#ifndef ACCEL_ATTACH_INTERNAL_H
#define ACCEL_ATTACH_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

#include "core/attach.h"

struct attach_entry {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX]; /* the instance this is about; "" until known */
	enum accel_reclaim reclaim;
	bool armed;    /* has had a container: when-detached applies once it has none */
	bool removing; /* rmdir in progress: nothing attaches (not kept on disk) */
	struct accel_attachment *c;
	size_t n;
};

struct accel_attach {
	pthread_mutex_t lock;
	char path[PATH_MAX]; /* <state-dir>/attachments.json */
	char proc_root[PATH_MAX];
	struct attach_entry *e;
	size_t n;
};

/* An entry that says nothing: no container, manual, never attached, not being removed. */
static inline bool attach_entry_idle(const struct attach_entry *e)
{
	return !e->n && e->reclaim == ACCEL_RECLAIM_MANUAL && !e->armed && !e->removing;
}

/*
 * Read a->path into a->e (a missing file is an empty registry): 0, or
 * -errno with err naming the file, what is wrong and what to do.
 */
int attach_store_load(struct accel_attach *a, char *err, size_t errlen);
/* Replace a->path with what a says, atomically; durable also fsyncs (configuration, not state). */
int attach_store_save(const struct accel_attach *a, bool durable);

#endif
