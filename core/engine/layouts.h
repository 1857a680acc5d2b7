/* SPDX-License-Identifier: MIT */
/*
 * The node's declared layouts (core/policy/layout.h), kept and applied.
 *
 * A layout is kept in <state-dir>/layouts/<device>.layout and a cordon in
 * <device>.cordon, written durably before a write to <dev>/mig/layout or
 * <dev>/mig/cordon answers, so a restart applies what was declared.  A
 * thread applies every layout again each poll interval and at once when
 * kicked (a snapshot changed, a container detached), cards in parallel:
 * what waited for a busy instance, an orphan's reclaim or a mode change
 * applies when it can, without being asked again.
 *
 * Lock order: a card's set lock (one write of its layout at a time, from
 * check to apply) comes before its apply lock, which comes before everything
 * of core/engine/node.h (the apply takes the node's locks) and the attachment
 * registry's (a reclaim goes through rmdir's guard); the table's lock is a
 * leaf.
 */
#ifndef ACCEL_LAYOUTS_H
#define ACCEL_LAYOUTS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/state/attach.h"
#include "core/policy/layout.h"
#include "core/engine/node.h"

struct accel_layouts_options {
	const char *state_dir;
	unsigned poll_ms;            /* 0: 2000 */
	accel_layout_held_fn held;   /* NULL: nothing is held but what the driver refuses to destroy */
	struct accel_attach *attach; /* rmdir's guard for its reclaims (core/engine/rmdir_guard.h); NULL: none */
	void *held_ctx;
	/* A card's layout_status or cordon changed (any thread; it must only queue work). */
	void (*on_change)(void *ctx);
	void *change_ctx;
};

struct accel_layouts;

/* Read the kept layouts and cordons (a bad file is logged and left out, never fatal); NULL: out of memory. */
struct accel_layouts *accel_layouts_open(struct accel_node *node, const struct accel_layouts_options *opt);
/* Apply every kept layout now, cards in parallel, and return when done (at start, before READY=1). */
void accel_layouts_apply_all(struct accel_layouts *ls);
/* Start the thread that applies again; 0 or -errno. */
int accel_layouts_start(struct accel_layouts *ls);
void accel_layouts_kick(struct accel_layouts *ls);
void accel_layouts_close(struct accel_layouts *ls);

/*
 * Declare device's layout as written by uid:gid: parse and check the whole
 * text against the card (-EINVAL with why, nothing changed), keep it (and
 * its writer) durably, apply it once before returning.  Its jobs are the
 * writer's.  Empty text declares nothing: every layout job that nothing
 * holds goes.
 */
int accel_layouts_set(struct accel_layouts *ls, const char *device, const char *text, size_t len, uid_t uid, gid_t gid,
                      char *why, size_t whylen);
/* What accel_layouts_set checks first, alone: 0 or -EINVAL / -ENOENT with why. */
int accel_layouts_check(struct accel_layouts *ls, const char *device, const char *text, size_t len, char *why,
                        size_t whylen);
/* The declared text, layout_status's text (malloc'd; "" when none), the cordon as written. */
char *accel_layouts_text(struct accel_layouts *ls, const char *device);
char *accel_layouts_status(struct accel_layouts *ls, const char *device);
/* The mode device's layout declares: -1 none, 0 disabled, 1 enabled. */
int accel_layouts_mode(struct accel_layouts *ls, const char *device);
/* The cordon as cordon shows it: the operator's, or a drain's while it waits. */
bool accel_layouts_cordoned(struct accel_layouts *ls, const char *device);
int accel_layouts_set_cordon(struct accel_layouts *ls, const char *device, bool on, char *why, size_t whylen);

#endif
