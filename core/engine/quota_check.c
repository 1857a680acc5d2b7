/* SPDX-License-Identifier: MIT */
/*
 * Quotas at carve time, exact under concurrency.  A carve takes a hold on
 * its cost (node_quota_hold) under its card's lock, once the profile, and
 * so the slices, are known: under names_lock and view_lock, the use of the
 * job's owner and group is what the cards' views show plus the holds of
 * carves in progress whose job no view shows yet.  A job in a view and
 * still held is counted once (its name is in the views: node_names.c).  A
 * hold is let go (node_quota_release) once the view shows the job or the
 * carve failed.  So the jobs that exist plus those being carved never pass
 * a limit, and a carve is refused only when they would: one that fits
 * without the holds of carves in progress waits for those to finish
 * (quota_cond) instead of answering EDQUOT for a carve that may fail.
 *
 * The table itself is kept in <state-dir>/quota, written durably before
 * a write answers, read at start.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/fileio.h"
#include "core/model/log.h"

struct node_quota_hold {
	char job[ACCEL_JOB_NAME_MAX + 1];
	uid_t uid;
	gid_t gid;
	char profile[ACCEL_NAME_MAX];
	unsigned slices;
};

struct node_quota {
	atomic_int refs;
	struct accel_quota_table t;
};

static void quota_unref(struct node_quota *q)
{
	if (q && atomic_fetch_sub(&q->refs, 1) == 1) {
		accel_quota_table_free(&q->t);
		free(q);
	}
}

/* Make q the node's table (names_lock held, or nothing else runs yet): readers see it from their next reference. */
static void quota_install(struct accel_node *node, struct node_quota *q)
{
	struct node_quota *old;

	node_lock(&node->quota_lock, NODE_LOCK_LEAF);
	old = node->quota;
	node->quota = q;
	node_unlock(&node->quota_lock, NODE_LOCK_LEAF);
	quota_unref(old);
	node_shown_moved(node);
}

static struct node_quota *quota_new(struct accel_quota_table *t)
{
	struct node_quota *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	atomic_init(&q->refs, 1);
	q->t = *t;
	t->entries = NULL;
	t->n = 0;
	return q;
}

static void quota_path(const struct accel_node *node, char *buf, size_t len)
{
	snprintf(buf, len, "%s/quota", node->state_dir);
}

int node_quota_load(struct accel_node *node, char *err, size_t errlen)
{
	char path[PATH_MAX + 8], why[ACCEL_TEXT_MAX];
	struct accel_quota_table t;
	struct node_quota *q;
	FILE *f;
	char *text;
	long len;
	size_t n;
	int ret;

	quota_path(node, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return 0; /* no quota yet: nothing is limited */
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) || len > ACCEL_QUOTA_TEXT_MAX ||
	    !(text = calloc(1, (size_t)len + 1)) || fread(text, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		snprintf(err, errlen, "cannot read the quotas in %s: move it away to start without quotas", path);
		return -EIO;
	}
	fclose(f);
	ret = accel_quota_parse(text, true, &t, why, sizeof(why));
	free(text);
	if (ret) {
		snprintf(err, errlen, "the quotas in %s do not parse (%s): fix or remove the file", path, why);
		return ret;
	}
	n = t.n;
	if (!(q = quota_new(&t))) {
		accel_quota_table_free(&t);
		snprintf(err, errlen, "out of memory reading %s", path);
		return -ENOMEM;
	}
	quota_install(node, q); /* nothing else runs yet */
	if (n)
		log_info("quotas: %zu principal(s) from %s", n, path);
	return 0;
}

void node_quota_free(struct accel_node *node)
{
	quota_unref(node->quota);
	node->quota = NULL;
	free(node->quota_holds);
	pthread_cond_destroy(&node->quota_cond);
	pthread_mutex_destroy(&node->quota_lock);
}

/* Every job the views show, and the holds whose job they do not show yet (view_lock held). */
static int gather(struct accel_node *node, bool with_holds, struct accel_quota_charge **out, size_t *n)
{
	size_t total = node->n_quota_holds, k = 0;

	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t i = 0; i < node->fams[f].n_cards; i++)
			if (node->fams[f].cards[i]->view)
				total += node->fams[f].cards[i]->view->n_jobs;
	*out = calloc(total + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t i = 0; i < node->fams[f].n_cards; i++) {
			const struct accel_device *v = node->fams[f].cards[i]->view;
			for (size_t j = 0; v && j < v->n_jobs; j++)
				(*out)[k++] =
					(struct accel_quota_charge){ v->jobs[j].name, v->jobs[j].uid, v->jobs[j].gid,
					                             v->jobs[j].profile, v->jobs[j].placement.size };
		}
	for (size_t h = 0; with_holds && h < node->n_quota_holds; h++) {
		const struct node_quota_hold *q = &node->quota_holds[h];
		if (!node_names_taken(node, q->job))
			(*out)[k++] = (struct accel_quota_charge){ q->job, q->uid, q->gid, q->profile, q->slices };
	}
	*n = k;
	return 0;
}

int node_quota_hold(struct accel_node *node, const char *job, uid_t uid, gid_t gid, const char *profile,
                    unsigned slices, char *why, size_t whylen)
{
	struct accel_quota_charge add = { job, uid, gid, profile, slices };
	int ret = 0;

	node_lock(&node->names_lock, NODE_LOCK_NAMES);
	for (;;) {
		struct accel_quota_charge *c = NULL;
		size_t n = 0;
		bool wait = false;

		if (!node->quota || !node->quota->t.n)
			break; /* nothing is limited: no hold either */
		node_lock(&node->view_lock, NODE_LOCK_VIEW);
		ret = gather(node, true, &c, &n);
		if (!ret)
			ret = accel_quota_check(&node->quota->t, c, n, &add, why, whylen);
		if (ret == -EDQUOT) {
			char ignored[8];
			free(c);
			c = NULL;
			/* Over only with the carves in progress: wait for them, they may fail. */
			wait = !gather(node, false, &c, &n) &&
			       !accel_quota_check(&node->quota->t, c, n, &add, ignored, sizeof(ignored));
		}
		node_unlock(&node->view_lock, NODE_LOCK_VIEW);
		free(c);
		if (ret == -ENOMEM)
			snprintf(why, whylen, "out of memory");
		if (!wait)
			break;
		pthread_cond_wait(&node->quota_cond, &node->names_lock);
	}
	if (!node->quota || !node->quota->t.n) {
		ret = 0;
	} else if (!ret) {
		struct node_quota_hold *grown = realloc(node->quota_holds, (node->n_quota_holds + 1) * sizeof(*grown));
		if (grown) {
			struct node_quota_hold *q = &grown[node->n_quota_holds++];
			node->quota_holds = grown;
			memset(q, 0, sizeof(*q));
			snprintf(q->job, sizeof(q->job), "%s", job);
			q->uid = uid;
			q->gid = gid;
			snprintf(q->profile, sizeof(q->profile), "%s", profile);
			q->slices = slices;
		} else {
			snprintf(why, whylen, "out of memory");
			ret = -ENOMEM;
		}
	}
	node_unlock(&node->names_lock, NODE_LOCK_NAMES);
	return ret;
}

void node_quota_release(struct accel_node *node, const char *job)
{
	node_lock(&node->names_lock, NODE_LOCK_NAMES);
	for (size_t i = 0; i < node->n_quota_holds; i++)
		if (!strcmp(node->quota_holds[i].job, job)) {
			memmove(&node->quota_holds[i], &node->quota_holds[i + 1],
			        (node->n_quota_holds - i - 1) * sizeof(*node->quota_holds));
			node->n_quota_holds--;
			break;
		}
	pthread_cond_broadcast(&node->quota_cond);
	node_unlock(&node->names_lock, NODE_LOCK_NAMES);
}

int accel_node_quota_table(struct accel_node *node, struct accel_quota_table *out)
{
	struct node_quota *q;
	int ret;

	/* A reference for the time of a pointer copy; the copy is made outside any lock. */
	node_lock(&node->quota_lock, NODE_LOCK_LEAF);
	q = node->quota;
	if (q)
		atomic_fetch_add(&q->refs, 1);
	node_unlock(&node->quota_lock, NODE_LOCK_LEAF);
	if (!q) {
		out->entries = NULL;
		out->n = 0;
		return 0;
	}
	ret = accel_quota_table_copy(out, &q->t);
	quota_unref(q);
	return ret;
}

int accel_node_set_quota(struct accel_node *node, const char *text, char *why, size_t whylen)
{
	struct accel_quota_table t;
	struct node_quota *q;
	char path[PATH_MAX + 8];
	char *stored;
	int ret;

	why[0] = '\0';
	ret = node_refuse_read_only(node, "the quotas are not changed", why, whylen);
	if (ret)
		return ret;
	ret = accel_quota_parse(text, false, &t, why, whylen);
	if (ret) {
		log_error("quota: refused: %s", why);
		return ret;
	}
	stored = accel_quota_format(&t);
	q = stored ? quota_new(&t) : NULL;
	if (!q) {
		free(stored);
		accel_quota_table_free(&t);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	quota_path(node, path, sizeof(path));
	/* One writer at a time, and the file and the table change together: under names_lock. */
	node_lock(&node->names_lock, NODE_LOCK_NAMES);
	ret = accel_durable_write(path, stored, strlen(stored), 0644);
	if (!ret) {
		quota_install(node, q);
		q = NULL;
		pthread_cond_broadcast(&node->quota_cond);
	}
	node_unlock(&node->names_lock, NODE_LOCK_NAMES);
	free(stored);
	quota_unref(q);
	if (ret) {
		snprintf(why, whylen, "cannot write %s: %s; the quotas are unchanged", path, strerror(-ret));
		log_error("quota: %s", why);
		return ret;
	}
	log_info("quota: the table is replaced (%s)",
	         text[strspn(text, " \t\n")] ? "see the quota file" : "empty: nothing is limited");
	return 0;
}
