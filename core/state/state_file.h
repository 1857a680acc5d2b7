/* SPDX-License-Identifier: MIT */
/*
 * A small JSON file of a card's directory in the state directory, as the
 * ownership records (core/state/record.c) and the carves' intents (core/state/intent.c)
 * keep them: written durably (the directory made when the write finds it
 * missing), read whole, removed, and every one of a kind listed, the
 * leftovers of interrupted writes swept and the unreadable ones named.
 * What a file says is its owner's; how it is kept is written here once.
 */
#ifndef ACCEL_STATE_FILE_H
#define ACCEL_STATE_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* A file that could not be read or parsed: where, and why. */
struct accel_record_bad {
	char path[512];
	char why[256];
};

/* o as the indented text the files hold, o let go of; NULL when out of memory (o NULL: NULL). */
char *accel_state_json_text(json_t *o);

/* o's member key as an unsigned no greater than max: false when it is missing, not an integer or out of range. */
bool accel_state_json_uint(json_t *o, const char *key, unsigned long long max, unsigned *out);

/*
 * Write text durably as path, a file of dir, making dir (0700) when the
 * write says it is missing; text is taken (freed), NULL when it could not
 * be made (-ENOMEM).  what names the file in why ("the intent").
 */
int accel_state_file_write(const char *dir, const char *path, char *text, const char *what, char *why, size_t whylen);

/* Remove path, durably or not; one already gone is no failure.  what names it in why. */
int accel_state_file_remove(const char *path, bool durable, const char *what, char *why, size_t whylen);

/* The first max bytes of path, NUL-terminated, the caller's to free; NULL with why ("cannot read: ...") and -errno. */
char *accel_state_file_read(const char *path, size_t max, int *err, char *why, size_t whylen);

/*
 * Every file of dir whose name ends in suffix (".json"), handed to load
 * (its name, a zeroed item of item_size to fill): those it loads (0) are
 * appended to *items (a void * of the caller's, NULL or an array of such
 * items), the others to *bad with load's why.  A leftover of
 * an interrupted write (<name><suffix>.tmp.*) is removed: it never was a
 * file of the kind.  A missing dir holds none.  0, or -errno (-ENOMEM).
 */
typedef int (*accel_state_file_load_fn)(const char *dir, const char *name, void *item, void *ctx, char *why,
                                        size_t whylen);
int accel_state_files_load(const char *dir, const char *suffix, size_t item_size, accel_state_file_load_fn load,
                           void *ctx, void **items, size_t *n_items, struct accel_record_bad **bad, size_t *n_bad);

#endif
