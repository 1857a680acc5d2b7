/* SPDX-License-Identifier: MIT */
#include "core/policy/reconcile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void accel_reconcile_clear(struct accel_reconcile_out *out)
{
	free(out->state);
	free(out->reason);
	free(out->owner);
	free(out->note);
	free(out->seen);
	free(out->foreign);
	free(out->intent_live);
	free(out->actions);
	memset(out, 0, sizeof(*out));
}

static bool same_span(struct accel_span a, struct accel_span b)
{
	return a.start == b.start && a.size == b.size;
}

static bool gi_has_uuid(const struct accel_live_gi *g, const char *uuid)
{
	for (unsigned i = 0; i < g->n_ci; i++)
		if (!strcmp(g->ci[i].uuid, uuid))
			return true;
	return false;
}

static int add_action(struct accel_reconcile_out *out, struct accel_action a)
{
	struct accel_action *n = realloc(out->actions, (out->n_actions + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	out->actions = n;
	out->actions[out->n_actions++] = a;
	return 0;
}

static const struct accel_orphan_seen *find_seen(const struct accel_reconcile_in *in, const struct accel_live_gi *g)
{
	for (size_t i = 0; i < in->n_seen; i++)
		if (in->seen[i].gi == g->id && in->seen[i].profile_id == g->profile_id &&
		    same_span(in->seen[i].placement, g->placement))
			return &in->seen[i];
	return NULL;
}

/* The first intent not taken yet that names this instance; -1: none (the instance is foreign). */
static long find_intent(const struct accel_reconcile_in *in, const struct accel_reconcile_out *out,
                        const struct accel_live_gi *g)
{
	for (size_t i = 0; i < in->n_intents; i++)
		if (!out->intent_live[i] && accel_intent_matches(&in->intents[i], g))
			return (long)i;
	return -1;
}

static void refuse(struct accel_reconcile_out *out, const struct accel_live_gi *g)
{
	size_t l = strlen(out->refusal);

	snprintf(out->refusal + l, sizeof(out->refusal) - l,
	         "%sGPU instance %u has %u compute instances (subdivided by hand): accelfs hands out whole instances "
	         "only; destroy the extra compute instances to resume",
	         l ? "; " : "", g->id, g->n_ci);
	out->refused = true;
}

int accel_reconcile(const struct accel_reconcile_in *in, struct accel_reconcile_out *out)
{
	const struct accel_inventory *inv = in->inv;
	size_t n_gis = inv ? inv->n_gis : 0;

	memset(out, 0, sizeof(*out));
	out->state = calloc(in->n_records + 1, sizeof(*out->state));
	out->reason = calloc(in->n_records + 1, sizeof(*out->reason));
	out->owner = calloc(n_gis + 1, sizeof(*out->owner));
	out->note = calloc(n_gis + 1, sizeof(*out->note));
	out->seen = calloc(n_gis + 1, sizeof(*out->seen));
	out->foreign = calloc(n_gis + 1, sizeof(*out->foreign));
	out->intent_live = calloc(in->n_intents + 1, sizeof(*out->intent_live));
	if (!out->state || !out->reason || !out->owner || !out->note || !out->seen || !out->foreign ||
	    !out->intent_live)
		goto nomem;
	for (size_t g = 0; g < n_gis; g++)
		out->owner[g] = -1;

	for (size_t r = 0; r < in->n_records; r++) {
		const struct accel_record *rec = &in->records[r];
		const struct accel_live_gi *match = NULL;
		bool removing = rec->phase == ACCEL_RECORD_REMOVING;
		size_t gi_index = 0;

		for (size_t g = 0; g < n_gis && !match; g++) {
			const struct accel_live_gi *live = &inv->gis[g];
			if (live->id != rec->gi || live->profile_id != rec->profile_id ||
			    !same_span(live->placement, rec->placement))
				continue;
			/*
			 * A removal destroys the compute instance first: a removing
			 * record still owns its GPU instance once that is gone.
			 */
			if (!gi_has_uuid(live, rec->uuid) && !(removing && live->n_ci == 0)) {
				if (live->n_ci == 0)
					snprintf(
						out->reason[r], sizeof(out->reason[r]),
						"GPU instance %u lost its compute instance (destroyed outside accelfs)",
						rec->gi);
				else
					snprintf(
						out->reason[r], sizeof(out->reason[r]),
						"GPU instance %u exists but no longer carries MIG device %s (the id was "
						"reused)",
						rec->gi, rec->uuid);
				continue;
			}
			match = live;
			gi_index = g;
		}
		if (match)
			out->owner[gi_index] = (long)r;

		if (rec->phase == ACCEL_RECORD_REMOVING) {
			struct accel_action a = { .kind = match ? ACCEL_ACTION_FINISH_REMOVAL
				                                : ACCEL_ACTION_DELETE_RECORD,
				                  .record = r,
				                  .gi = rec->gi,
				                  .profile_id = rec->profile_id,
				                  .placement = rec->placement };
			if (add_action(out, a))
				goto nomem;
			out->state[r] = ACCEL_JOB_REMOVING;
			if (match)
				snprintf(out->note[gi_index], sizeof(out->note[gi_index]), "being removed (job %s)",
				         rec->job);
			continue;
		}
		if (match) {
			out->state[r] = ACCEL_JOB_READY;
			out->reason[r][0] = '\0';
			if (match->n_ci > 1)
				refuse(out, match);
			else if (match->n_ci == 0)
				snprintf(out->note[gi_index], sizeof(out->note[gi_index]),
				         "its compute instance is gone");
		} else {
			size_t l;

			out->state[r] = ACCEL_JOB_LOST;
			if (!out->reason[r][0])
				snprintf(out->reason[r], sizeof(out->reason[r]),
				         "GPU instance %u (placement %u:%u) no longer exists", rec->gi,
				         rec->placement.start, rec->placement.size);
			/* The record keeps the name: a mkdir of it answers EEXIST until rmdir removes the record. */
			l = strlen(out->reason[r]);
			snprintf(out->reason[r] + l, sizeof(out->reason[r]) - l,
			         "; the name %s stays taken until rmdir removes the job, then mkdir makes it again",
			         rec->job);
		}
	}

	for (size_t g = 0; g < n_gis; g++) {
		const struct accel_live_gi *live = &inv->gis[g];
		const struct accel_orphan_seen *prev;
		long intent = find_intent(in, out, live);
		const char *kind = intent >= 0 ? "orphan" : "foreign";
		struct accel_action act;
		int64_t first;

		if (out->owner[g] >= 0)
			continue;
		if (intent >= 0)
			out->intent_live[intent] = true;
		else
			out->foreign[g] = true;
		if (accel_live_gi_subdivided(live)) {
			/*
			 * Someone's compute instances, not one device: shown and taken
			 * (its slices count as used), never destroyed, whatever the
			 * foreign setting, and the rest of the card works as usual.
			 */
			if (live->n_ci > 1)
				snprintf(out->note[g], sizeof(out->note[g]),
				         "%s: subdivided by hand: %u compute instances; kept, never reclaimed", kind,
				         live->n_ci);
			else
				snprintf(out->note[g], sizeof(out->note[g]),
				         "%s: subdivided by hand: compute instance %u covers part of it; kept, never "
				         "reclaimed",
				         kind, live->ci[0].id);
			continue;
		}
		if (intent < 0 && !in->foreign_reclaim) {
			/* Not ours, and nobody asked: kept for good, so no grace is counted (nor holders scanned). */
			snprintf(out->note[g], sizeof(out->note[g]),
			         "foreign: not made by accelfs; kept (mig/foreign: keep); mig/adopt makes it a job");
			continue;
		}
		prev = find_seen(in, live);
		first = prev ? prev->first_seen_ms : in->now_ms;
		out->seen[out->n_seen++] =
			(struct accel_orphan_seen){ live->id, live->profile_id, live->placement, first };
		if (in->records_unreadable) {
			snprintf(out->note[g], sizeof(out->note[g]),
			         "unmanaged; kept: a record of this card is unreadable, so ownership is unknown");
			continue;
		}
		if (!in->card_idle) {
			snprintf(out->note[g], sizeof(out->note[g]),
			         "%s: kept while the card is held open (see holders)", kind);
			continue;
		}
		if (in->read_only) {
			/* Nothing happens to it here: say what a managing daemon would do, not what this one does. */
			snprintf(out->note[g], sizeof(out->note[g]),
			         "%s: not reclaimed (read-only); a managing accelfs would reclaim it once idle", kind);
			continue;
		}
		if (in->now_ms - first < in->grace_ms) {
			snprintf(out->note[g], sizeof(out->note[g]), "%s: reclaimed in %" PRId64 " ms if still unused",
			         kind, in->grace_ms - (in->now_ms - first));
			continue;
		}
		snprintf(out->note[g], sizeof(out->note[g]), "%s: reclaiming", kind);
		memset(&act, 0, sizeof(act));
		act.kind = intent >= 0 ? ACCEL_ACTION_RECLAIM_ORPHAN : ACCEL_ACTION_RECLAIM_FOREIGN;
		act.record = intent >= 0 ? (size_t)intent : 0;
		act.gi = live->id;
		act.profile_id = live->profile_id;
		act.placement = live->placement;
		act.n_ci = live->n_ci;
		if (live->n_ci == 1) {
			act.ci = live->ci[0].id;
			snprintf(act.uuid, sizeof(act.uuid), "%s", live->ci[0].uuid);
		}
		if (add_action(out, act))
			goto nomem;
	}
	/* Nothing is reclaimed on a refused card: the operator sorts it out first. */
	if (out->refused) {
		size_t w = 0;
		for (size_t a = 0; a < out->n_actions; a++)
			if (out->actions[a].kind != ACCEL_ACTION_RECLAIM_ORPHAN &&
			    out->actions[a].kind != ACCEL_ACTION_RECLAIM_FOREIGN)
				out->actions[w++] = out->actions[a];
		out->n_actions = w;
		for (size_t g = 0; g < n_gis; g++)
			if (!strcmp(out->note[g], "orphan: reclaiming") || !strcmp(out->note[g], "foreign: reclaiming"))
				snprintf(out->note[g], sizeof(out->note[g]),
				         "unmanaged; kept while the card is refused");
	}
	return 0;
nomem:
	accel_reconcile_clear(out);
	return -ENOMEM;
}
