/* SPDX-License-Identifier: MIT */
/*
 * Where a card's intents live (core/state/intent.h says what an intent is): one
 * file of fixed slots, <card's records directory>/intents, so that writing
 * an intent is one write in place, not a new file (a temporary file's
 * fsync, a rename, the directory's fsync): a carve pays for its intent what
 * it pays for one block of data, not for two journal commits.  A put is not
 * synced: an intent is bound to the boot (core/state/intent.h), so a crash
 * that could lose the write is one of the kernel, which voids it anyway.
 *
 * A slot is ACCEL_SLOT_BYTES at a multiple of them: a header line (the
 * FNV-1a hash of the body, in 16 hex digits, a space, the body's length in
 * 3 digits, a newline), then the body (the key, a newline, the text), then
 * zeros.  A slot whose first byte is 0 is free.  A slot whose header or hash
 * does not hold was torn by a crash in the middle of its write: the caller
 * had not gone on (it goes on only once the write returned), so it never
 * was, and it is free too.  The file is made, zeroed, with a durable write
 * (core/state/fileio.h) at a card's first intent, which is the one time the
 * directory changes.
 *
 * No lock here: the caller serializes the writers of one card (the card's
 * lock).
 */
#ifndef ACCEL_INTENT_SLOTS_H
#define ACCEL_INTENT_SLOTS_H

#include <stdbool.h>

#define ACCEL_SLOTS_FILE "intents"
#define ACCEL_SLOT_BYTES 512
#define ACCEL_SLOTS_MAX 64

/*
 * Put text under key into a free slot of the file at path (made if absent:
 * -ENOENT when its directory is not there), written in place, not synced:
 * 0, -ENOSPC when no slot is free or key and text do not fit one (the caller
 * keeps it elsewhere), or -errno.
 */
int accel_slots_put(const char *path, const char *key, const char *text);
/* Free the slot holding key (fdatasync'd when durable): 0, -ENOENT when none holds it, or -errno. */
int accel_slots_clear(const char *path, const char *key, bool durable);
/*
 * Call each(ctx, key, text) for every whole slot, in slot order; a nonzero
 * answer stops and is returned.  0 (no file: no slot), or -errno.
 */
int accel_slots_each(const char *path, int (*each)(void *ctx, const char *key, const char *text), void *ctx);

#endif
