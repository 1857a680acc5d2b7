/* SPDX-License-Identifier: MIT */
/*
 * A card's layout: the instances that should exist on it, and its MIG mode.
 *
 * Written to <dev>/mig/layout, one declaration a line:
 *
 *   <profile>             one instance, at whatever placement is free
 *   <profile> x<count>    count of them
 *   <profile>@<start>     one, exactly at the legal placement starting there
 *   mode enabled|disabled the card's MIG mode
 *   drain                 cordon the card while a line waits for a busy instance
 *   # ...                 a comment (also after a declaration); blank lines are nothing
 *
 * The layout owns the jobs it carves, named layout-<device>-<profile>-<start>
 * (ACCEL_LAYOUT_JOB_PREFIX: no mkdir may take such a name, so a name alone
 * says, across crashes and restarts, which jobs are the layout's).  Jobs made
 * by mkdir, Slurm or Kubernetes are never the layout's.
 *
 * This header is the parse (layout_parse.c), the pure plan of what to do
 * about a card as a snapshot shows it (layout_plan.c), and applying it
 * through the node's own carve and reclaim (layout_apply.c).
 */
#ifndef ACCEL_LAYOUT_H
#define ACCEL_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/model/model.h"

#define ACCEL_LAYOUT_JOB_PREFIX "layout-"
#define ACCEL_LAYOUT_MAX_LINES 64
#define ACCEL_LAYOUT_MAX_UNITS 64 /* instances declared on one card, every line together */
#define ACCEL_LAYOUT_TEXT_MAX 4096
#define ACCEL_LAYOUT_WHY_MAX 384

enum accel_layout_kind {
	ACCEL_LAYOUT_ANY,   /* <profile> [x<count>] */
	ACCEL_LAYOUT_AT,    /* <profile>@<start> */
	ACCEL_LAYOUT_MODE,  /* mode enabled|disabled */
	ACCEL_LAYOUT_DRAIN, /* drain */
};

struct accel_layout_line {
	enum accel_layout_kind kind;
	char profile[ACCEL_NAME_MAX];
	unsigned count; /* ANY: how many; AT: 1 */
	unsigned start; /* AT */
	bool enabled;   /* MODE */
	char text[96];  /* the line as declared, normalized: what layout_status names it by */
};

struct accel_layout {
	struct accel_layout_line lines[ACCEL_LAYOUT_MAX_LINES];
	size_t n_lines;
	int mode; /* -1: not declared, else 0/1 */
	bool drain;
	/*
	 * Who wrote it (accel_layouts_set; 0:0 from the parse): its jobs are
	 * carved as theirs, charged to their quota, and it reclaims as they would.
	 */
	uid_t uid;
	gid_t gid;
};

/*
 * Parse a layout's text (len bytes, no NUL needed): 0, or -EINVAL with why
 * naming the line and what to write instead.  Only the syntax is checked
 * here; what the card offers is accel_layout_check's.
 */
int accel_layout_parse(const char *text, size_t len, struct accel_layout *out, char *why, size_t whylen);
/* The layout as reading <dev>/mig/layout shows it: one normalized line each. */
void accel_layout_format(const struct accel_layout *l, char *buf, size_t len);

/* The job name the layout gives the instance of profile at start on device (job-name rule kept). */
void accel_layout_job_name(const char *device, const char *profile, unsigned start, char *buf, size_t len);
/* Is this job the layout's (its name has the prefix)? */
bool accel_layout_owns(const char *job);

/*
 * Could the layout ever be true on a card offering these profiles (an empty
 * card: placements, memory and compute slices)?  0, or -EINVAL with why:
 * an unknown profile, a start that is no legal placement, a set that does
 * not fit, instances declared with the mode disabled.  With no profiles
 * (the mode is off and the driver lists none) only what needs no catalogue
 * is checked; the rest is decided once the mode is on.
 */
int accel_layout_check(const struct accel_layout *l, const struct accel_device *d, char *why, size_t whylen);

/* ---- the plan (pure) ---------------------------------------------------- */

/* Is a job held, and by whom?  The caller's answer (attachments, a driver's busy refusal). */
typedef bool (*accel_layout_held_fn)(void *ctx, const struct accel_device *d, const struct accel_job *j, char *why,
                                     size_t whylen);

enum accel_layout_state {
	ACCEL_LAYOUT_APPLIED,
	ACCEL_LAYOUT_PENDING,
	ACCEL_LAYOUT_IMPOSSIBLE,
};

struct accel_layout_carve {
	char profile[ACCEL_NAME_MAX];
	unsigned start;
	char job[ACCEL_JOB_NAME_MAX + 1];
};

struct accel_layout_reclaim {
	char profile[ACCEL_NAME_MAX];
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX];
};

struct accel_layout_plan {
	struct accel_layout_carve carves[ACCEL_LAYOUT_MAX_UNITS];
	size_t n_carves;
	/* layout jobs no longer declared and held by nothing (reclaims come before carves) */
	struct accel_layout_reclaim reclaims[ACCEL_LAYOUT_MAX_UNITS];
	size_t n_reclaims;
	/* layout jobs no longer declared that something holds: they stay, and status says why */
	struct accel_layout_reclaim kept[ACCEL_LAYOUT_MAX_UNITS];
	char kept_why[ACCEL_LAYOUT_MAX_UNITS][160];
	size_t n_kept;
	int set_mode; /* -1: leave it; else the mode to set once the card has no instance */
	bool cordon;  /* drain declared and some line waits for a holder */
	/* per declared line, indexed like the layout's */
	enum accel_layout_state state[ACCEL_LAYOUT_MAX_LINES];
	char why[ACCEL_LAYOUT_MAX_LINES][ACCEL_LAYOUT_WHY_MAX];
};

/*
 * What to do about card d so that it shows layout l: a pure function of the
 * view, the layout and held() (NULL: nothing is held).  Layout jobs that
 * match a declared line stay where they are; missing instances get the free
 * placements that leave room for every other declared one (lowest start
 * first among equals); instances that are not the layout's are never in
 * reclaims.  -ENOMEM, else 0.
 */
int accel_layout_plan(const struct accel_layout *l, const struct accel_device *d, accel_layout_held_fn held,
                      void *held_ctx, struct accel_layout_plan *plan);

/*
 * layout_status's text: one line per declared line, "<line>: applied|pending:
 * <why>|impossible: <why>", then one per layout job no longer declared that
 * something holds, "<job>: pending: no longer declared, <why>".
 */
void accel_layout_status_format(const struct accel_layout *l, const struct accel_layout_plan *plan, char *buf,
                                size_t len);

#endif
