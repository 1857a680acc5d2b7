/* SPDX-License-Identifier: MIT */
/*
 * The difference between a card's layout and the card (core/policy/layout.h): a
 * pure function of the view.  The layout's jobs that a declared line still
 * wants stay where they are; the ones no line wants go, unless something
 * holds them; the missing instances take free placements.  Nothing that is
 * not the layout's is ever planned away: it is only named, as what a line
 * waits for.
 */
#include "core/policy/layout.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/policy/layout_fit.h"

#define BLOCKERS_NAMED 3

struct planning {
	const struct accel_layout *l;
	const struct accel_device *d;
	accel_layout_held_fn held;
	void *held_ctx;
	struct accel_layout_plan *plan;
	bool matched[256]; /* per job of d: a declared line keeps it */
	bool going[256];   /* per job of d: reclaimed by this plan */
	char held_why[256][ACCEL_LAYOUT_WHY_MAX / 2];
	bool is_held[256];
	size_t unit_job[ACCEL_LAYOUT_MAX_UNITS]; /* per declared unit: the job of d it keeps, or -1 */
	bool kept_j[256];                        /* per job of d: kept where it is by a plan that moves others */
};

static void add_reclaim(struct accel_layout_plan *plan, const struct accel_job *job)
{
	struct accel_layout_reclaim *r;

	if (plan->n_reclaims == ACCEL_LAYOUT_MAX_UNITS)
		return;
	r = &plan->reclaims[plan->n_reclaims++];
	snprintf(r->profile, sizeof(r->profile), "%s", job->profile);
	snprintf(r->job, sizeof(r->job), "%s", job->name);
	snprintf(r->uuid, sizeof(r->uuid), "%s", job->uuid);
}

static void line_state(struct accel_layout_plan *plan, size_t line, enum accel_layout_state st, const char *why)
{
	plan->state[line] = st;
	snprintf(plan->why[line], sizeof(plan->why[line]), "%s", why);
}

/* Every instance line gets the same answer (the card cannot be worked on, or its mode is not on). */
static void all_lines(struct planning *pl, enum accel_layout_state st, const char *why)
{
	for (size_t i = 0; i < pl->l->n_lines; i++)
		if (pl->l->lines[i].kind == ACCEL_LAYOUT_ANY || pl->l->lines[i].kind == ACCEL_LAYOUT_AT)
			line_state(pl->plan, i, st, why);
}

static bool job_held(struct planning *pl, size_t j)
{
	const struct accel_job *job = &pl->d->jobs[j];

	if (pl->held && !pl->is_held[j] && !pl->held_why[j][0])
		pl->is_held[j] = pl->held(pl->held_ctx, pl->d, job, pl->held_why[j], sizeof(pl->held_why[j]));
	if (!pl->held_why[j][0])
		snprintf(pl->held_why[j], sizeof(pl->held_why[j]), "-");
	return pl->is_held[j];
}

/* Keep the layout jobs the declared units want; the others go unless held. */
static void match_jobs(struct planning *pl, struct layout_unit *u, size_t n)
{
	const struct accel_device *d = pl->d;

	for (size_t i = 0; i < n; i++) {
		size_t pick = (size_t)-1;

		pl->unit_job[i] = (size_t)-1;
		for (size_t j = 0; j < d->n_jobs && j < 256; j++) {
			const struct accel_job *job = &d->jobs[j];
			if (pl->matched[j] || job->state != ACCEL_JOB_READY || !accel_layout_owns(job->name) ||
			    strcmp(job->profile, u[i].p->name))
				continue;
			if (u[i].start >= 0 && job->placement.start != (unsigned)u[i].start)
				continue;
			if (pick == (size_t)-1 || job->placement.start < d->jobs[pick].placement.start)
				pick = j;
		}
		if (pick != (size_t)-1) {
			pl->matched[pick] = true;
			pl->unit_job[i] = pick;
			u[i].chosen = layout_legal_index(u[i].p, d->jobs[pick].placement.start);
			if (u[i].chosen < 0)
				u[i].chosen =
					0; /* a job at a start the driver no longer lists: it is there all the same */
		}
	}
	for (size_t j = 0; j < d->n_jobs && j < 256; j++) {
		const struct accel_job *job = &d->jobs[j];
		struct accel_layout_reclaim *r;

		if (pl->matched[j] || !accel_layout_owns(job->name) || pl->plan->n_reclaims == ACCEL_LAYOUT_MAX_UNITS)
			continue;
		if (job_held(pl, j)) {
			if (pl->plan->n_kept < ACCEL_LAYOUT_MAX_UNITS) {
				r = &pl->plan->kept[pl->plan->n_kept];
				snprintf(r->profile, sizeof(r->profile), "%s", job->profile);
				snprintf(r->job, sizeof(r->job), "%s", job->name);
				snprintf(r->uuid, sizeof(r->uuid), "%s", job->uuid);
				snprintf(pl->plan->kept_why[pl->plan->n_kept++], sizeof(pl->plan->kept_why[0]), "%s",
				         pl->held_why[j]);
			}
			continue;
		}
		r = &pl->plan->reclaims[pl->plan->n_reclaims++];
		snprintf(r->profile, sizeof(r->profile), "%s", job->profile);
		snprintf(r->job, sizeof(r->job), "%s", job->name);
		snprintf(r->uuid, sizeof(r->uuid), "%s", job->uuid);
		pl->going[j] = true;
	}
}

static size_t job_index(const struct accel_device *d, const char *name)
{
	for (size_t j = 0; j < d->n_jobs && j < 256; j++)
		if (name[0] && !strcmp(d->jobs[j].name, name))
			return j;
	return (size_t)-1;
}

static unsigned instance_compute(const struct accel_device *d, const struct accel_instance *in)
{
	for (size_t i = 0; i < d->n_profiles; i++)
		if (d->profiles[i].id == in->profile_id)
			return d->profiles[i].slice_count;
	return in->placement.size;
}

/* Who holds the instance in, as a line's why says it. */
static void describe_holder(struct planning *pl, const struct accel_instance *in, char *buf, size_t len)
{
	size_t j = job_index(pl->d, in->job);

	if (j == (size_t)-1) {
		snprintf(buf, len, "placement %u:%u held by GPU instance %u, which accelfs did not make%s%s",
		         in->placement.start, in->placement.size, in->gi, in->note[0] ? " (" : "",
		         in->note[0] ? in->note : "");
		if (in->note[0])
			snprintf(buf + strlen(buf), len - strlen(buf), ")");
		return;
	}
	bool held = job_held(pl, j);
	/* A layout job a line keeps is that line's (in use, or the move that frees it comes next), not an old one. */
	snprintf(buf, len, "placement %u:%u held by %s%s%s%s", in->placement.start, in->placement.size, in->job,
	         !accel_layout_owns(in->job)       ? ""
	         : pl->matched[j] || pl->kept_j[j] ? " (declared here)"
	                                           : " (no longer declared)",
	         held ? ", " : "", held ? pl->held_why[j] : "");
}

/*
 * Why line's missing units found no placement: the instances on its legal
 * placements that the layout cannot move (not its own, or in use), a few
 * named with what holds them.
 */
static void blocked_why(struct planning *pl, size_t line, const struct accel_profile *p, long start, size_t have,
                        const struct accel_instance **inst, size_t n_used)
{
	char *buf = pl->plan->why[line];
	size_t len = sizeof(pl->plan->why[line]), at = 0, named = 0;
	const struct accel_layout_line *ln = &pl->l->lines[line];

	if (ln->count > 1)
		at = (size_t)snprintf(buf, len, "%zu of %u applied; ", have, ln->count);
	for (size_t k = 0; k < p->n_placements && named < BLOCKERS_NAMED && at < len; k++) {
		if (start >= 0 && p->placements[k].start != (unsigned)start)
			continue;
		for (size_t i = 0; i < n_used && named < BLOCKERS_NAMED && at < len; i++) {
			char one[ACCEL_LAYOUT_WHY_MAX];
			bool dup = false;
			size_t j = job_index(pl->d, inst[i]->job);
			if (!accel_span_overlaps(inst[i]->placement, p->placements[k]))
				continue;
			/* The layout's idle instances are its own to move: what blocks is what it cannot move. */
			if (j != (size_t)-1 && accel_layout_owns(inst[i]->job) &&
			    pl->d->jobs[j].state == ACCEL_JOB_READY && !job_held(pl, j))
				continue;
			describe_holder(pl, inst[i], one, sizeof(one));
			dup = strstr(buf, one) != NULL;
			if (!dup) {
				at += (size_t)snprintf(buf + at, len - at, "%s%s", named ? "; " : "", one);
				named++;
			}
		}
	}
	if (!named)
		snprintf(buf + at, len - at, "no room left beside the other declared instances (compute slices)");
	pl->plan->state[line] = ACCEL_LAYOUT_PENDING;
}

/* Mode lines; returns false when the instance lines cannot be worked on now (the mode is not on). */
static bool plan_mode(struct planning *pl)
{
	const struct accel_layout *l = pl->l;
	const struct accel_device *d = pl->d;
	char why[ACCEL_LAYOUT_WHY_MAX];

	for (size_t i = 0; i < l->n_lines; i++) {
		if (l->lines[i].kind == ACCEL_LAYOUT_DRAIN)
			line_state(pl->plan, i, ACCEL_LAYOUT_APPLIED, "");
		if (l->lines[i].kind != ACCEL_LAYOUT_MODE)
			continue;
		if (d->mig_enabled == l->lines[i].enabled && d->mig_pending_enabled == d->mig_enabled) {
			line_state(pl->plan, i, ACCEL_LAYOUT_APPLIED, "");
		} else if (d->mig_enabled == l->lines[i].enabled) {
			snprintf(
				why, sizeof(why),
				"the driver holds mode %s pending on %s, which only a reset applies: accelfs resets nothing",
				d->mig_pending_enabled ? "enabled" : "disabled", d->name);
			line_state(pl->plan, i, ACCEL_LAYOUT_PENDING, why);
		} else {
			pl->plan->set_mode = l->lines[i].enabled;
			line_state(pl->plan, i, ACCEL_LAYOUT_PENDING, "changing the mode");
		}
	}
	if (!d->mig_enabled) {
		snprintf(why, sizeof(why), "MIG mode is disabled on %s%s", d->name,
		         l->mode == 1 ? ": waiting for the mode change" : ": declare 'mode enabled'");
		all_lines(pl, l->mode == 1 ? ACCEL_LAYOUT_PENDING : ACCEL_LAYOUT_IMPOSSIBLE, why);
		return false;
	}
	return true;
}

/* Before a mode change the card must have no instance: the layout's go, the others are named. */
static void plan_mode_off(struct planning *pl)
{
	const struct accel_device *d = pl->d;
	char why[ACCEL_LAYOUT_WHY_MAX] = "";
	size_t at = 0, left = 0;

	match_jobs(pl, NULL, 0);
	for (size_t i = 0; i < d->n_instances; i++) {
		size_t j = job_index(d, d->instances[i].job);
		char one[ACCEL_LAYOUT_WHY_MAX];
		if (j != (size_t)-1 && pl->going[j])
			continue;
		if (left++ < BLOCKERS_NAMED && at < sizeof(why)) {
			describe_holder(pl, &d->instances[i], one, sizeof(one));
			at += (size_t)snprintf(why + at, sizeof(why) - at, "%s%s", at ? "; " : "", one);
		}
	}
	if (!left)
		return; /* set_mode stands: the apply changes it once the reclaims are done */
	pl->plan->set_mode = -1;
	for (size_t i = 0; i < pl->l->n_lines; i++)
		if (pl->l->lines[i].kind == ACCEL_LAYOUT_MODE) {
			char full[ACCEL_LAYOUT_WHY_MAX];
			snprintf(full, sizeof(full), "the mode changes only on a card with no instance: %.300s", why);
			line_state(pl->plan, i, ACCEL_LAYOUT_PENDING, full);
		}
}

static void add_carve(struct planning *pl, const struct layout_unit *u)
{
	struct accel_layout_carve *c;

	if (pl->plan->n_carves == ACCEL_LAYOUT_MAX_UNITS)
		return;
	c = &pl->plan->carves[pl->plan->n_carves++];
	snprintf(c->profile, sizeof(c->profile), "%s", u->p->name);
	c->start = u->p->placements[u->chosen].start;
	accel_layout_job_name(pl->d->name, c->profile, c->start, c->job, sizeof(c->job));
}

/*
 * When the layout jobs kept where they are leave a line short, fit every
 * declared unit again as if the layout's idle jobs (ready, held by nothing)
 * were not there: only what the layout cannot move (other instances, its
 * jobs in use) stays in the way.  If that places more, it is the plan: an
 * idle job already where an instance of its profile goes stays, the other
 * idle ones are reclaimed and carved again where they fit together.  Units
 * kept by a job in use are fixed.  have and planned (per line) are the
 * plan's.  false: moving places nothing more, the plan is left as it was.
 */
static bool plan_moves(struct planning *pl, struct layout_unit *u, size_t n, size_t placed_now, size_t *have,
                       size_t *planned)
{
	const struct accel_device *d = pl->d;
	struct layout_unit all[ACCEL_LAYOUT_MAX_UNITS];
	struct accel_span used[256];
	bool movable[256] = { false };
	size_t n_all = 0, n_used = 0, placed, fixed = 0;
	unsigned compute = layout_card_compute(d);

	for (size_t j = 0; j < d->n_jobs && j < 256; j++)
		movable[j] =
			accel_layout_owns(d->jobs[j].name) && d->jobs[j].state == ACCEL_JOB_READY && !job_held(pl, j);
	for (size_t i = 0; i < n; i++) {
		if (u[i].chosen >= 0 && pl->unit_job[i] != (size_t)-1 && !movable[pl->unit_job[i]]) {
			fixed++; /* its job is in use: it stays where it is */
			continue;
		}
		all[n_all] = u[i];
		all[n_all++].chosen = -1;
	}
	for (size_t i = 0; i < d->n_instances && n_used < 256; i++) {
		size_t j = job_index(d, d->instances[i].job);
		unsigned c = instance_compute(d, &d->instances[i]);
		if (j != (size_t)-1 && movable[j])
			continue;
		compute = compute > c ? compute - c : 0;
		used[n_used++] = d->instances[i].placement;
	}
	placed = fixed + layout_fit(all, n_all, used, n_used, compute);
	if (placed <= placed_now)
		return false;
	/* The plan that moves: what was decided about idle jobs is decided again. */
	pl->plan->n_reclaims = 0;
	pl->plan->n_carves = 0;
	memset(have, 0, ACCEL_LAYOUT_MAX_LINES * sizeof(*have));
	memset(planned, 0, ACCEL_LAYOUT_MAX_LINES * sizeof(*planned));
	for (size_t i = 0; i < n; i++)
		if (u[i].chosen >= 0 && pl->unit_job[i] != (size_t)-1 && !movable[pl->unit_job[i]])
			have[u[i].line]++;
	memset(pl->matched, 0, sizeof(pl->matched));
	for (size_t i = 0; i < n; i++)
		if (pl->unit_job[i] != (size_t)-1 && !movable[pl->unit_job[i]])
			pl->matched[pl->unit_job[i]] = true;
	for (size_t k = 0; k < n_all; k++) {
		size_t keep = (size_t)-1;
		if (all[k].chosen < 0)
			continue;
		for (size_t j = 0; j < d->n_jobs && j < 256 && keep == (size_t)-1; j++)
			if (movable[j] && !pl->kept_j[j] && !strcmp(d->jobs[j].profile, all[k].p->name) &&
			    d->jobs[j].placement.start == all[k].p->placements[all[k].chosen].start)
				keep = j;
		if (keep != (size_t)-1) {
			pl->kept_j[keep] = true;
			have[all[k].line]++;
		} else {
			add_carve(pl, &all[k]);
			planned[all[k].line]++;
		}
	}
	for (size_t j = 0; j < d->n_jobs && j < 256; j++) {
		pl->going[j] = movable[j] && !pl->kept_j[j];
		if (pl->going[j])
			add_reclaim(pl->plan, &d->jobs[j]);
	}
	return true;
}

static void plan_instances(struct planning *pl)
{
	const struct accel_device *d = pl->d;
	struct layout_unit u[ACCEL_LAYOUT_MAX_UNITS], missing[ACCEL_LAYOUT_MAX_UNITS];
	struct accel_span used[256];
	const struct accel_instance *inst[256];
	bool unknown[ACCEL_LAYOUT_MAX_LINES] = { false };
	char ignored[8];
	size_t n_used = 0, n_missing = 0, have[ACCEL_LAYOUT_MAX_LINES] = { 0 }, planned[ACCEL_LAYOUT_MAX_LINES] = { 0 };
	unsigned compute = layout_card_compute(d);
	int n = layout_units(pl->l, d, true, u, unknown, ignored, sizeof(ignored));

	if (n < 0)
		n = 0;
	match_jobs(pl, u, (size_t)n);
	for (size_t i = 0; i < d->n_instances && n_used < 256; i++) {
		size_t j = job_index(d, d->instances[i].job);
		unsigned c = instance_compute(d, &d->instances[i]);
		if (j != (size_t)-1 && pl->going[j])
			continue;
		compute = compute > c ? compute - c : 0; /* kept layout jobs included: their units are placed */
		inst[n_used] = &d->instances[i];
		used[n_used++] = d->instances[i].placement;
	}
	for (int i = 0; i < n; i++) {
		if (u[i].chosen >= 0) {
			have[u[i].line]++;
		} else {
			missing[n_missing++] = u[i];
		}
	}
	size_t placed = (size_t)n - n_missing + layout_fit(missing, n_missing, used, n_used, compute);
	if (placed == (size_t)n || !plan_moves(pl, u, (size_t)n, placed, have, planned)) {
		for (size_t i = 0; i < n_missing; i++) {
			if (missing[i].chosen < 0)
				continue;
			add_carve(pl, &missing[i]);
			planned[missing[i].line]++;
		}
	}
	for (size_t i = 0; i < pl->l->n_lines; i++) {
		const struct accel_layout_line *ln = &pl->l->lines[i];
		char why[ACCEL_LAYOUT_WHY_MAX];
		if (ln->kind != ACCEL_LAYOUT_ANY && ln->kind != ACCEL_LAYOUT_AT)
			continue;
		if (unknown[i]) {
			snprintf(why, sizeof(why), "%s offers no %s%s", d->name, ln->profile,
			         ln->kind == ACCEL_LAYOUT_AT ? " placement starting there" : " profile");
			line_state(pl->plan, i, ACCEL_LAYOUT_IMPOSSIBLE, why);
		} else if (have[i] == ln->count) {
			line_state(pl->plan, i, ACCEL_LAYOUT_APPLIED, "");
		} else if (have[i] + planned[i] == ln->count) {
			line_state(pl->plan, i, ACCEL_LAYOUT_PENDING, "carving");
		} else {
			const struct accel_profile *p = accel_device_profile(d, ln->profile);
			blocked_why(pl, i, p, ln->kind == ACCEL_LAYOUT_AT ? (long)ln->start : -1, have[i], inst,
			            n_used);
			pl->plan->cordon = pl->l->drain;
		}
	}
}

int accel_layout_plan(const struct accel_layout *l, const struct accel_device *d, accel_layout_held_fn held,
                      void *held_ctx, struct accel_layout_plan *plan)
{
	static __thread struct planning pl;

	memset(plan, 0, sizeof(*plan));
	memset(&pl, 0, sizeof(pl));
	plan->set_mode = -1;
	pl = (struct planning){ .l = l, .d = d, .held = held, .held_ctx = held_ctx, .plan = plan };
	if (d->refused || d->absent) {
		char why[ACCEL_LAYOUT_WHY_MAX];
		snprintf(why, sizeof(why), "%s is %s: %.300s", d->name, d->absent ? "absent" : "refused", d->refusal);
		all_lines(&pl, ACCEL_LAYOUT_PENDING, why);
		for (size_t i = 0; i < l->n_lines; i++)
			if (l->lines[i].kind == ACCEL_LAYOUT_MODE || l->lines[i].kind == ACCEL_LAYOUT_DRAIN)
				line_state(plan, i, ACCEL_LAYOUT_PENDING, why);
		return 0;
	}
	if (!plan_mode(&pl)) {
		if (plan->set_mode >= 0)
			plan_mode_off(&pl); /* enabling: the card has no instance to wait for */
		return 0;
	}
	if (plan->set_mode == 0) {
		plan_mode_off(&pl); /* disabling: every layout job goes first */
		return 0;
	}
	plan_instances(&pl);
	return 0;
}

void accel_layout_status_format(const struct accel_layout *l, const struct accel_layout_plan *plan, char *buf,
                                size_t len)
{
	static const char *const word[] = { "applied", "pending", "impossible" };
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < l->n_lines && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s: %s%s%s\n", l->lines[i].text, word[plan->state[i]],
		                 plan->state[i] == ACCEL_LAYOUT_APPLIED ? "" : ": ",
		                 plan->state[i] == ACCEL_LAYOUT_APPLIED ? "" : plan->why[i]);
		if (n < 0)
			return;
		used += (size_t)n;
	}
	for (size_t i = 0; i < plan->n_kept && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s: pending: no longer declared, reclaimed once free; %s\n",
		                 plan->kept[i].job, plan->kept_why[i]);
		if (n < 0)
			return;
		used += (size_t)n;
	}
}
