/* SPDX-License-Identifier: MIT */
/*
 * The job names the cards' views show, counted by name in a hash table, so
 * that a mkdir finds whether its name is taken without looking at every
 * job of the node.  Kept by whoever replaces a card's view, under
 * view_lock (node_refresh.c's install, node.c's rescan); read under it too.
 * A name whose entry could not be allocated makes the table incomplete, and
 * then the check looks at every view instead (node_names_taken).  And the
 * names mkdirs in progress have reserved: a new job's name is checked (its
 * rule and the tree's own names, accel_new_job_name_check; the layouts'
 * prefix) and reserved once, by node_claim_name, for mkdir and adoption
 * alike.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy/layout.h"

struct node_name {
	struct node_name *next;
	unsigned count; /* views showing a job of that name (one, unless records disagree) */
	char name[ACCEL_JOB_NAME_MAX + 1];
};

static size_t bucket(const char *name)
{
	size_t h = 5381;

	while (*name)
		h = h * 33 + (unsigned char)*name++;
	return h % NODE_NAME_BUCKETS;
}

static struct node_name **slot(struct accel_node *node, const char *name)
{
	struct node_name **pp = &node->names[bucket(name)];

	while (*pp && strcmp((*pp)->name, name))
		pp = &(*pp)->next;
	return pp;
}

static void add(struct accel_node *node, const char *name)
{
	struct node_name **pp = slot(node, name);

	if (*pp) {
		(*pp)->count++;
		return;
	}
	*pp = calloc(1, sizeof(**pp));
	if (!*pp) {
		node->names_incomplete = true;
		return;
	}
	memcpy((*pp)->name, name, strnlen(name, ACCEL_JOB_NAME_MAX));
	(*pp)->count = 1;
}

static void drop(struct accel_node *node, const char *name)
{
	struct node_name **pp = slot(node, name), *gone = *pp;

	if (!gone || --gone->count)
		return;
	*pp = gone->next;
	free(gone);
}

void node_names_swap(struct accel_node *node, const struct accel_device *old, const struct accel_device *cur)
{
	for (size_t k = 0; cur && k < cur->n_jobs; k++)
		add(node, cur->jobs[k].name);
	for (size_t k = 0; old && k < old->n_jobs; k++)
		drop(node, old->jobs[k].name);
}

bool node_names_taken(struct accel_node *node, const char *job)
{
	if (!node->names_incomplete)
		return *slot(node, job) != NULL;
	for (size_t f = 0; f < node->n_fams; f++)
		for (size_t c = 0; c < node->fams[f].n_cards; c++) {
			const struct accel_device *v = node->fams[f].cards[c]->view;
			if (v && accel_device_job(v, job))
				return true;
		}
	return false;
}

void node_names_free(struct accel_node *node)
{
	for (size_t b = 0; b < NODE_NAME_BUCKETS; b++)
		while (node->names[b]) {
			struct node_name *next = node->names[b]->next;
			free(node->names[b]);
			node->names[b] = next;
		}
}

/* ---- reservations of a mkdir in progress ------------------------------- */

/* Reserved by a mkdir in progress, or a job of some card's view: view_lock held. */
static bool job_name_taken(struct accel_node *node, const char *job)
{
	for (size_t i = 0; i < node->n_reserved; i++)
		if (!strcmp(node->reserved[i], job))
			return true;
	return node_names_taken(node, job);
}

/* Job names are unique on the node: the node-level mig/ view lists every device's jobs together. */
static int reserve_name(struct accel_node *node, const char *job)
{
	int ret = 0;

	node_lock(&node->names_lock, NODE_LOCK_NAMES);
	node_lock(&node->view_lock, NODE_LOCK_VIEW);
	if (job_name_taken(node, job)) {
		ret = -EEXIST;
	} else {
		char(*grown)[ACCEL_JOB_NAME_MAX + 1] = realloc(node->reserved, (node->n_reserved + 1) * sizeof(*grown));
		if (!grown) {
			ret = -ENOMEM;
		} else {
			node->reserved = grown;
			snprintf(grown[node->n_reserved++], sizeof(*grown), "%s", job);
		}
	}
	node_unlock(&node->view_lock, NODE_LOCK_VIEW);
	node_unlock(&node->names_lock, NODE_LOCK_NAMES);
	return ret;
}

static void release_name(struct accel_node *node, const char *job)
{
	node_lock(&node->names_lock, NODE_LOCK_NAMES);
	for (size_t i = 0; i < node->n_reserved; i++) {
		if (strcmp(node->reserved[i], job))
			continue;
		memmove(node->reserved[i], node->reserved[i + 1], (node->n_reserved - i - 1) * sizeof(*node->reserved));
		node->n_reserved--;
		break;
	}
	node_unlock(&node->names_lock, NODE_LOCK_NAMES);
}

int node_claim_name(struct accel_node *node, const char *job, bool layout, char *why, size_t whylen)
{
	int ret = accel_new_job_name_check(job, why, whylen);

	if (ret)
		return ret;
	/* The prefix is how the layout knows its jobs, across crashes: nobody else may take it. */
	if (accel_layout_owns(job) != layout) {
		snprintf(why, whylen,
		         "job names starting with '%s' are the layouts' (<dev>/mig/layout): choose another",
		         ACCEL_LAYOUT_JOB_PREFIX);
		return -EINVAL;
	}
	node_topo_rdlock(node);
	ret = reserve_name(node, job);
	if (ret) {
		node_topo_unlock(node);
		snprintf(why, whylen,
		         ret == -EEXIST ? "a job named '%s' already exists on this node" : "cannot reserve '%s'", job);
	}
	return ret;
}

void node_unclaim_name(struct accel_node *node, const char *job)
{
	node_topo_unlock(node);
	release_name(node, job);
}
