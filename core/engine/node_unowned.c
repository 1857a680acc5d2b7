/* SPDX-License-Identifier: MIT */
/*
 * Instances no job owns (core/policy/reconcile.h): the card's foreign policy as kept
 * in <state-dir>/foreign/<card uuid>, intents that are spent, and foreign
 * instances destroyed when the operator asked.  Called by the refresh and by
 * node_foreign.c; calls nothing above them.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/carve.h"
#include "core/state/fileio.h"
#include "core/model/log.h"
#include "core/engine/metrics.h"

static int policy_path(const struct accel_node *node, const struct node_card *nc, char *buf, size_t len)
{
	return snprintf(buf, len, "%s/foreign/%s", node->state_dir, nc->ident.uuid) >= (int)len ? -ENAMETOOLONG : 0;
}

void node_foreign_load(struct accel_node *node, struct node_card *nc)
{
	char path[PATH_MAX], text[32] = "";
	FILE *f;

	nc->foreign = NODE_FOREIGN_DEFAULT;
	if (policy_path(node, nc, path, sizeof(path)) || !(f = fopen(path, "re")))
		return;
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	text[strcspn(text, "\n")] = '\0';
	if (!strcmp(text, "keep"))
		nc->foreign = NODE_FOREIGN_KEEP;
	else if (!strcmp(text, "reclaim"))
		nc->foreign = NODE_FOREIGN_RECLAIM;
	else /* the safe reading of a file nobody should have written so */
		log_error("%s: %s says '%s', neither keep nor reclaim: foreign instances are kept", nc->card.name, path,
		          text);
	if (!strcmp(text, "reclaim"))
		log_notice("%s: foreign instances are reclaimed on this card (%s)", nc->card.name, path);
}

bool node_foreign_reclaim(const struct accel_node *node, const struct node_card *nc)
{
	if (nc->foreign == NODE_FOREIGN_DEFAULT)
		return node->opt.foreign_reclaim;
	return nc->foreign == NODE_FOREIGN_RECLAIM;
}

int node_foreign_store(struct accel_node *node, struct node_card *nc, enum node_foreign_policy p, char *why,
                       size_t whylen)
{
	char path[PATH_MAX], dir[PATH_MAX];
	const char *text = p == NODE_FOREIGN_RECLAIM ? "reclaim\n" : "keep\n";
	int ret;

	snprintf(dir, sizeof(dir), "%s/foreign", node->state_dir);
	ret = policy_path(node, nc, path, sizeof(path));
	if (!ret && p == NODE_FOREIGN_DEFAULT)
		ret = accel_durable_unlink(path);
	else if (!ret) {
		ret = accel_durable_write(path, text, strlen(text), 0644);
		if (ret == -ENOENT && !(ret = accel_mkdirs(dir, 0755)))
			ret = accel_durable_write(path, text, strlen(text), 0644);
	}
	if (ret && ret != -ENOENT)
		snprintf(why, whylen, "cannot keep the setting in %s: %s", path, strerror(-ret));
	return ret == -ENOENT ? 0 : ret;
}

/*
 * Destroy an instance accelfs did not make, which the operator asked for
 * (--foreign=reclaim, <dev>/mig/foreign): said at notice, with what it was.
 */
int node_reclaim_foreign(struct accel_node *node, struct node_card *nc, const struct accel_card *once,
                         const struct accel_action *act, const char *profile)
{
	struct accel_expect expect = { .profile_id = act->profile_id,
		                       .placement = act->placement,
		                       .uuid = act->n_ci == 1 ? act->uuid : NULL,
		                       .ci = act->ci,
		                       .mig_index = UINT_MAX };
	char why[ACCEL_TEXT_MAX], ci[32] = "no compute instance";
	int ret = accel_reclaim(once, act->gi, &expect, NULL, why, sizeof(why));

	accel_metrics_orphan(ret);
	if (ret == 0 || ret == -ENOENT) /* what it raised is its own from now on (node_tombs.c) */
		node_tomb_add(node, nc, NODE_TOMB_FOREIGN, act->gi, act->n_ci == 1 ? act->ci : MIG_EVENT_NO_INSTANCE,
		              "", act->uuid);
	if (act->n_ci == 1)
		snprintf(ci, sizeof(ci), "compute instance %u", act->ci);
	if (ret == 0) {
		log_notice(
			"%s: destroyed foreign GPU instance %u (%s, profile %s id %u, placement %u:%u, %s): not made "
			"by accelfs; destroyed because foreign instances are to be reclaimed (mig/foreign: reclaim)",
			nc->card.name, act->gi, ci, profile, act->profile_id, act->placement.start, act->placement.size,
			act->uuid[0] ? act->uuid : "no MIG device");
		return 1;
	}
	if (ret == -EBUSY)
		log_info("%s: foreign GPU instance %u is in use; left alone, rechecked next pass: %s", nc->card.name,
		         act->gi, why);
	else if (ret != -ENOENT && ret != -ESTALE)
		log_warn("%s: reclaiming foreign GPU instance %u failed: %s", nc->card.name, act->gi, why);
	return 0;
}

/*
 * The intents that name no live instance nobody else owns: a carve that
 * never reached the driver, an instance reclaimed or since recorded.  Read
 * before any action, so indices hold; a card whose records cannot all be
 * read keeps them (what is whose is unknown there).
 */
void node_drop_spent_intents(struct accel_node *node, struct node_card *nc, const struct accel_reconcile_out *rec)
{
	struct accel_intent *spent;
	size_t n = 0;

	if (!nc->n_intents || nc->n_bad)
		return;
	spent = calloc(nc->n_intents, sizeof(*spent));
	if (!spent)
		return;
	for (size_t i = 0; i < nc->n_intents; i++)
		if (!rec->intent_live[i])
			spent[n++] = nc->intents[i];
	for (size_t i = 0; i < n; i++) {
		log_debug("%s: intent of job %s at %u names no instance without a record now: dropped", nc->card.name,
		          spent[i].job, spent[i].placement.start);
		node_drop_intent(node, nc, spent[i].job, spent[i].placement.start, true);
	}
	free(spent);
}
