/* SPDX-License-Identifier: MIT */
/*
 * What a job's holders, containers and reclaim files say, and the lines
 * its status adds (their rows in fs/tree_files.c): from the attachment
 * registry's view (core/state/attach.h), a pointer copy, so that a read never
 * waits for the registry, reads /proc for it or writes its file.  A
 * container whose process died shows until the reclaimer's sweep clears it.
 */
#include "fs/containers_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state/attach.h"
#include "core/driver/holders.h"
#include "core/model/utc.h"
#include "fs/holder_text.h"

/*
 * One line per container the registry's view gives job j (reg NULL: none):
 * lead, the id, its pid and since when.  A pointer copy and no more: a
 * read never waits for the registry, reads /proc or writes its file.
 */
static void put_containers(struct fs_text *t, const struct accel_attach_job *e, const char *lead)
{
	char since[ACCEL_UTC_MAX];

	for (size_t i = 0; e && i < e->n; i++) {
		accel_utc(e->c[i].since, since, sizeof(since));
		fs_put(t, "%s%s pid=%d since=%s\n", lead, e->c[i].id, (int)e->c[i].pid, since);
	}
}

/* The job's own nodes: its capability nodes; the card and control nodes are shared with other jobs. */
static void put_processes(struct fs_text *t, const struct accel_device *d, const struct accel_job *j)
{
	struct accel_devnode *own = calloc(j->n_nodes ? j->n_nodes : 1, sizeof(*own));
	struct accel_holder *h = NULL;
	struct accel_proc_gate g;
	size_t n_own = 0, n = 0;

	if (!own) {
		t->oom = true;
		return;
	}
	for (size_t i = 0; i < j->n_nodes; i++) {
		bool shared = false;
		for (size_t k = 0; k < d->n_card_nodes && !shared; k++)
			shared = !strcmp(d->card_nodes[k].path, j->nodes[i].path);
		if (!shared)
			own[n_own++] = j->nodes[i];
	}
	fs_text_proc_gate(t, &g);
	if (!accel_device_nodes_holders(own, n_own, &h, &n))
		for (size_t i = 0; i < n; i++)
			fs_put_holder(t, &g, "", &h[i]);
	free(h);
	free(own);
}

int fs_holders_text(struct fs_text *t, const struct fs_view *v)
{
	struct accel_attach_view *av = accel_attach_view(v->n->mount->attach);

	put_processes(t, v->n->dev, v->n->job);
	put_containers(t, accel_attach_view_job(av, v->n->job->name, v->n->job->uuid), "container=");
	accel_attach_view_unref(av);
	return 0;
}

int fs_containers_text(struct fs_text *t, const struct fs_view *v)
{
	struct accel_attach_view *av = accel_attach_view(v->n->mount->attach);

	put_containers(t, accel_attach_view_job(av, v->n->job->name, v->n->job->uuid), "id=");
	accel_attach_view_unref(av);
	return 0;
}

int fs_reclaim_text(struct fs_text *t, const struct fs_view *v)
{
	struct accel_attach_view *av = accel_attach_view(v->n->mount->attach);
	const struct accel_attach_job *e = accel_attach_view_job(av, v->n->job->name, v->n->job->uuid);

	fs_put(t, "%s\n", accel_reclaim_str(e ? e->reclaim : ACCEL_RECLAIM_MANUAL));
	accel_attach_view_unref(av);
	return 0;
}

void fs_attach_status_lines(struct fs_text *t, struct accel_attach *reg, const struct accel_job *j)
{
	struct accel_attach_view *v = accel_attach_view(reg);
	const struct accel_attach_job *e = accel_attach_view_job(v, j->name, j->uuid);

	if (v) {
		/* Both from one view: the policy and the containers at one instant. */
		fs_put(t, "reclaim: %s\n", accel_reclaim_str(e ? e->reclaim : ACCEL_RECLAIM_MANUAL));
		put_containers(t, e, "container: ");
	}
	accel_attach_view_unref(v);
}
