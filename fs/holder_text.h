/* SPDX-License-Identifier: MIT */
/*
 * One line of a holders file (a card's, a job's): the process, its
 * descriptors, and its command and arguments where /proc would show them to
 * the reader (core/driver/proc_view.h); "hidden" in their place where it would not.
 */
#ifndef ACCELFS_HOLDER_TEXT_H
#define ACCELFS_HOLDER_TEXT_H

#include "core/driver/holders.h"
#include "core/driver/proc_view.h"
#include "fs/text.h"

/* The gate for t's reader over /proc as mounted now: read once per text, then asked per process. */
void fs_text_proc_gate(const struct fs_text *t, struct accel_proc_gate *g);
/* lead (e.g. "control node=/dev/nvidiactl ") then "pid=P command=C fds=N cmdline=A\n". */
void fs_put_holder(struct fs_text *t, const struct accel_proc_gate *g, const char *lead, const struct accel_holder *h);

#endif
