/* SPDX-License-Identifier: MIT */
/*
 * Applying a card's layout: plan from the newest snapshot, reclaim what the
 * layout no longer wants, change the mode once the card is empty, carve what
 * is missing, and plan again until nothing is left to do.
 *
 * Every step is the node's own operation (accel_node_rmdir_instance,
 * accel_node_set_mode, accel_node_mkdir_layout), each under the card's lock
 * and deciding there again: a concurrent mkdir that took a planned placement
 * makes the carve fail (ENOSPC) and the next plan choose again, so no
 * placement is given twice and capacity stays what the driver says.
 * Reclaims come before carves, so the capacity they give back is there.
 */
#include "core/engine/layout_apply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model/log.h"
#include "core/engine/rmdir_guard.h"

/* Rounds of plan-and-act before a pass gives up for now (each round is some other carve's success, or ours). */
#define APPLY_ROUNDS 8

/* What this pass learnt: a layout job whose reclaim the driver refused is held for the rest of the pass. */
struct pass {
	struct accel_attach *reg; /* rmdir's guard: no container attaches while a reclaim runs */
	uid_t uid;                /* the layout's writer: its carves are theirs */
	gid_t gid;
	accel_layout_held_fn held;
	void *held_ctx;
	struct accel_layout_memory *mem;
	int64_t now, retry_ms;
	char mode_why[ACCEL_LAYOUT_WHY_MAX];
	struct {
		char job[ACCEL_JOB_NAME_MAX + 1];
		char why[200];
	} failed[ACCEL_LAYOUT_MAX_UNITS];
	size_t n_failed;
};

static bool pass_held(void *ctx, const struct accel_device *d, const struct accel_job *j, char *why, size_t whylen)
{
	struct pass *p = ctx;

	for (size_t i = 0; i < p->mem->n_busy; i++)
		if (!strcmp(p->mem->busy[i].uuid, j->uuid)) {
			snprintf(why, whylen, "%s", p->mem->busy[i].why);
			return true;
		}
	return p->held && p->held(p->held_ctx, d, j, why, whylen);
}

static void remember_failed(struct pass *p, const char *job, const char *why)
{
	for (size_t i = 0; i < p->n_failed; i++)
		if (!strcmp(p->failed[i].job, job)) {
			snprintf(p->failed[i].why, sizeof(p->failed[i].why), "%s", why);
			return;
		}
	if (p->n_failed < ACCEL_LAYOUT_MAX_UNITS) {
		snprintf(p->failed[p->n_failed].job, sizeof(p->failed[0].job), "%s", job);
		snprintf(p->failed[p->n_failed++].why, sizeof(p->failed[0].why), "%s", why);
	}
}

/* One round's actions; true when anything changed. */
static bool act(struct accel_node *node, const char *device, struct pass *p, const struct accel_layout_plan *plan)
{
	char why[512];
	bool changed = false;
	size_t left = plan->n_reclaims;

	for (size_t i = 0; i < plan->n_reclaims; i++) {
		const struct accel_layout_reclaim *r = &plan->reclaims[i];
		/* rmdir's own way: refused while a container holds it, and no attach lands while it runs */
		int ret = accel_job_rmdir(node, p->reg, device, r->profile, r->job, r->uuid, why, sizeof(why));
		if (!ret || ret == -ENOENT || ret == -ESTALE) {
			changed = true;
			left--;
			if (!ret)
				log_info("%s: layout: reclaimed %s, no longer declared", device, r->job);
			continue;
		}
		if (p->mem->n_busy < ACCEL_LAYOUT_MAX_UNITS) {
			size_t k = p->mem->n_busy++;
			snprintf(p->mem->busy[k].uuid, sizeof(p->mem->busy[0].uuid), "%s", r->uuid);
			snprintf(p->mem->busy[k].why, sizeof(p->mem->busy[0].why), "its reclaim failed: %.130s", why);
			p->mem->busy[k].until = p->now + p->retry_ms;
		}
		changed = true; /* the plan changes: the job is held now */
	}
	if (plan->set_mode >= 0 && !left && !p->mode_why[0]) {
		int ret = accel_node_set_mode(node, device, plan->set_mode, why, sizeof(why));
		if (ret)
			snprintf(p->mode_why, sizeof(p->mode_why), "%s", why);
		changed = true;
	}
	for (size_t i = 0; i < plan->n_carves; i++) {
		const struct accel_layout_carve *c = &plan->carves[i];
		int ret = accel_node_mkdir_layout(node, device, c->profile, c->job, c->start, p->uid, p->gid, why,
		                                  sizeof(why));
		if (!ret) {
			log_info("%s: layout: carved %s at %u", device, c->job, c->start);
			changed = true;
		} else if (ret == -ENOSPC || ret == -EAGAIN || ret == -EEXIST) {
			changed = true; /* someone else's carve came first: plan again from what is there now */
		} else {
			remember_failed(p, c->job, why);
		}
	}
	return changed;
}

/* Lines the plan says are being carved, when a carve of this pass failed: its words, not "carving". */
static void explain(const struct accel_layout *l, struct pass *p, struct accel_layout_plan *plan)
{
	for (size_t i = 0; i < l->n_lines; i++) {
		if (l->lines[i].kind == ACCEL_LAYOUT_MODE && p->mode_why[0] && plan->state[i] == ACCEL_LAYOUT_PENDING)
			snprintf(plan->why[i], sizeof(plan->why[i]), "%s", p->mode_why);
		if (strcmp(plan->why[i], "carving") || !p->n_failed)
			continue;
		snprintf(plan->why[i], sizeof(plan->why[i]), "carving %s failed: %.200s; tried again on the next pass",
		         p->failed[0].job, p->failed[0].why);
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int accel_layout_apply(struct accel_node *node, struct accel_attach *reg, const char *device,
                       const struct accel_layout *l, accel_layout_held_fn held, void *held_ctx,
                       struct accel_layout_memory *mem, unsigned retry_ms, struct accel_layout_plan *out)
{
	struct pass *p = calloc(1, sizeof(*p));
	int ret = 0;

	if (!p)
		return -ENOMEM;
	p->reg = reg;
	p->uid = l->uid;
	p->gid = l->gid;
	p->held = held;
	p->held_ctx = held_ctx;
	p->mem = mem;
	p->now = now_ms();
	p->retry_ms = retry_ms;
	/* Busy ones whose time is up are asked again. */
	for (size_t i = 0; i < mem->n_busy; i++)
		if (mem->busy[i].until <= p->now)
			mem->busy[i--] = mem->busy[--mem->n_busy];
	for (unsigned round = 0;; round++) {
		struct accel_snapshot *s = accel_node_snapshot(node);
		const struct accel_device *d = s ? accel_snapshot_device(s, device) : NULL;
		bool changed;

		if (!d) {
			accel_snapshot_unref(s);
			ret = -ENOENT;
			break;
		}
		ret = accel_layout_plan(l, d, pass_held, p, out);
		accel_snapshot_unref(s);
		if (ret)
			break;
		if (round == APPLY_ROUNDS || (!out->n_reclaims && !out->n_carves && out->set_mode < 0))
			break;
		/* A mode this pass failed to set, and carves that failed: not again until the next pass. */
		if (p->mode_why[0])
			out->set_mode = -1;
		for (size_t i = 0; i < out->n_carves; i++)
			for (size_t f = 0; f < p->n_failed; f++)
				if (!strcmp(out->carves[i].job, p->failed[f].job)) {
					out->carves[i--] = out->carves[--out->n_carves];
					break;
				}
		changed = act(node, device, p, out);
		if (!changed)
			break;
	}
	if (!ret)
		explain(l, p, out);
	free(p);
	return ret;
}
