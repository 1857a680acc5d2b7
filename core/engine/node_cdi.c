/* SPDX-License-Identifier: MIT */
/*
 * The CDI spec files follow the newest snapshot (core/state/cdi_dir.h: one file
 * per ready job), written after the snapshot that shows a change is
 * installed and before the operation that made the change answers.
 *
 * What the files show is a snapshot (cdi_written).  A change is the
 * difference between it and the newest one (cdi_target), looked for only
 * under the devices whose view object differs (one pointer comparison per
 * device: views are shared) and, there, only in the jobs whose spec differs
 * (accel_cdi_same): a carve writes one small file and a reclaim removes one,
 * whatever else the node holds.  Removals go first, so that a name removed
 * from one device and carved on another in between ends up written.
 *
 * The first follow after start, and the next one after a failure, sweeps
 * instead: every file of this daemon's tag whose job is not published goes
 * (what a crash left, jobs removed while the daemon was down), every
 * published job is written.  When the daemon stops, its files go too
 * (node_cdi_withdraw): a job is given by name only while its daemon serves
 * the hooks that record its containers, and a file left behind would make
 * a runtime refuse a job of the same name that another daemon publishes.
 * A crash leaves them: the same daemon's next start sweeps them.  Called
 * under cdi_lock (node_publish.c, node.c), which nothing else is taken
 * under.
 */
#include "core/engine/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/cdi.h"
#include "core/state/cdi_dir.h"
#include "core/model/log.h"

/* The first failure of one follow, for the log. */
struct failure {
	int error;
	char job[ACCEL_JOB_NAME_MAX + 1];
	const char *what; /* "write" or "remove" */
};

static void failed(struct failure *f, int error, const char *job, const char *what)
{
	if (f->error)
		return;
	f->error = error;
	f->what = what;
	snprintf(f->job, sizeof(f->job), "%s", job);
}

static void put(struct accel_node *node, const struct accel_device *d, const struct accel_job *j, struct failure *f)
{
	char *text = accel_cdi_node_job_spec(d, j);
	int ret = text ? accel_cdi_put(node->opt.cdi_dir, node->cdi_tag, j->name, text) : -ENOMEM;

	free(text);
	if (ret)
		failed(f, ret, j->name, "write");
}

static void drop(struct accel_node *node, const char *job, struct failure *f)
{
	int ret = accel_cdi_drop(node->opt.cdi_dir, node->cdi_tag, job);

	if (ret)
		failed(f, ret, job, "remove");
}

/* The device of that name in s, looked for first where it was in the other snapshot (cards keep their order). */
static const struct accel_device *device_in(const struct accel_snapshot *s, size_t hint, const char *name)
{
	if (hint < s->n_devices && !strcmp(s->devices[hint]->name, name))
		return s->devices[hint];
	for (size_t i = 0; i < s->n_devices; i++)
		if (!strcmp(s->devices[i]->name, name))
			return s->devices[i];
	return NULL;
}

static const struct accel_job *listed_job(const struct accel_device *d, const char *name)
{
	const struct accel_job *j = d ? accel_device_job(d, name) : NULL;

	return j && accel_cdi_listed(j) ? j : NULL;
}

static void follow_changes(struct accel_node *node, const struct accel_snapshot *w, const struct accel_snapshot *t,
                           struct failure *f)
{
	for (size_t i = 0; i < w->n_devices; i++) {
		const struct accel_device *old = w->devices[i], *cur;

		if (i < t->n_devices && t->devices[i] == old)
			continue; /* the same view where it was: one pointer comparison per unchanged device */
		cur = device_in(t, i, old->name);
		if (cur == old)
			continue;
		for (size_t k = 0; k < old->n_jobs; k++)
			if (accel_cdi_listed(&old->jobs[k]) && !listed_job(cur, old->jobs[k].name))
				drop(node, old->jobs[k].name, f);
	}
	for (size_t i = 0; i < t->n_devices; i++) {
		const struct accel_device *cur = t->devices[i], *old;

		if (i < w->n_devices && w->devices[i] == cur)
			continue;
		old = device_in(w, i, cur->name);
		if (cur == old)
			continue;
		for (size_t k = 0; k < cur->n_jobs; k++) {
			const struct accel_job *j = &cur->jobs[k], *was;

			if (!accel_cdi_listed(j))
				continue;
			was = listed_job(old, j->name);
			if (!was || !accel_cdi_same(old, was, cur, j))
				put(node, cur, j, f);
		}
	}
}

/* ---- the sweep ------------------------------------------------------------ */

struct names {
	const char **v;
	size_t n;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool published(void *ctx, const char *job)
{
	const struct names *names = ctx;

	return names->n && bsearch(&job, names->v, names->n, sizeof(*names->v), cmp_name);
}

static void say_sweep(struct accel_node *node, const struct accel_cdi_sweep *sw)
{
	const char *dir = node->opt.cdi_dir;

	if (sw->removed)
		log_info("%s: removed %u CDI spec file(s) of this daemon's whose jobs are gone (removed while it was "
		         "down, or left by a crash)",
		         dir, sw->removed);
	if (sw->legacy)
		log_info("removed %s/" ACCEL_CDI_LEGACY_FILE ", the node spec of an older accelfs: every job now has "
		         "a file of its own (" ACCEL_CDI_PREFIX "%s-<job>.json)",
		         dir, node->cdi_tag);
	if (node->cdi_swept)
		return;
	node->cdi_swept = true;
	log_info("CDI specs: one file per ready job, %s/" ACCEL_CDI_PREFIX "%s-<job>.json", dir, node->cdi_tag);
	if (sw->foreign)
		log_warn("%s holds %u CDI spec file(s) of another accelfs (" ACCEL_CDI_PREFIX "%s-*.json, one that "
		         "does not run on this directory now): left alone. A runtime refuses a job name that both "
		         "publish ('conflicting device'): remove them (rm %s/" ACCEL_CDI_PREFIX
		         "%s-*.json) once that daemon is gone for good",
		         dir, sw->foreign, sw->foreign_tag, dir, sw->foreign_tag);
}

static void sweep(struct accel_node *node, const struct accel_snapshot *t, struct failure *f)
{
	struct names names = { 0 };
	struct accel_cdi_sweep sw;
	size_t total = 0;
	int ret;

	for (size_t i = 0; i < t->n_devices; i++)
		total += t->devices[i]->n_jobs;
	names.v = calloc(total + 1, sizeof(*names.v));
	if (!names.v) {
		failed(f, -ENOMEM, "", "sweep");
		return;
	}
	for (size_t i = 0; i < t->n_devices; i++)
		for (size_t k = 0; k < t->devices[i]->n_jobs; k++)
			if (accel_cdi_listed(&t->devices[i]->jobs[k]))
				names.v[names.n++] = t->devices[i]->jobs[k].name;
	qsort(names.v, names.n, sizeof(*names.v), cmp_name);
	ret = accel_cdi_sweep(node->opt.cdi_dir, node->cdi_tag, published, &names, &sw);
	free(names.v);
	if (ret) {
		failed(f, ret, "", "sweep");
		return;
	}
	say_sweep(node, &sw);
	if (sw.failed)
		failed(f, sw.error, "", "sweep");
	for (size_t i = 0; i < t->n_devices; i++)
		for (size_t k = 0; k < t->devices[i]->n_jobs; k++)
			if (accel_cdi_listed(&t->devices[i]->jobs[k]))
				put(node, t->devices[i], &t->devices[i]->jobs[k], f);
}

/* ---- following ------------------------------------------------------------ */

static void say_failure(struct accel_node *node, const struct failure *f)
{
	const char *dir = node->opt.cdi_dir;

	if (!f->error) {
		if (node->cdi_failing)
			log_info("%s: the CDI spec files are current again", dir);
		node->cdi_failing = false;
		return;
	}
	if (node->cdi_failing)
		return; /* said once; tried again at every publication and every poll */
	node->cdi_failing = true;
	if (f->job[0])
		log_error("cannot %s the CDI spec of job %s in %s: %s. Until it is done, a runtime %s it by name "
		          "(accelfs.io/mig=%s): free space in %s or fix its owner and mode; accelfs tries again at "
		          "every change and every poll",
		          f->what, f->job, dir, strerror(-f->error),
		          strcmp(f->what, "write") ? "may still be given" : "cannot be given", f->job, dir);
	else
		log_error("cannot update the CDI spec files in %s: %s: fix the directory (--cdi-dir), its owner and "
		          "mode; accelfs tries again at every change and every poll",
		          dir, strerror(-f->error));
}

void node_cdi_follow(struct accel_node *node, struct accel_snapshot *s)
{
	struct failure f = { 0 };

	if (!node->cdi_target || s->generation > node->cdi_target->generation) {
		accel_snapshot_unref(node->cdi_target);
		node->cdi_target = accel_snapshot_ref(s);
	}
	if (node->cdi_written == node->cdi_target)
		return; /* written already, or a newer one was */
	if (node->cdi_written)
		follow_changes(node, node->cdi_written, node->cdi_target, &f);
	else
		sweep(node, node->cdi_target, &f);
	accel_snapshot_unref(node->cdi_written);
	/* After a failure what the files show is not known: the next follow sweeps. */
	node->cdi_written = f.error ? NULL : accel_snapshot_ref(node->cdi_target);
	say_failure(node, &f);
}

static bool none(void *ctx, const char *job)
{
	(void)ctx;
	(void)job;
	return false;
}

void node_cdi_withdraw(struct accel_node *node)
{
	struct accel_cdi_sweep sw;
	int ret;

	if (!node->cdi_swept)
		return; /* nothing was published */
	ret = accel_cdi_sweep(node->opt.cdi_dir, node->cdi_tag, none, NULL, &sw);
	if (ret || sw.failed)
		log_error("cannot withdraw the CDI spec files of this daemon from %s: %s: remove them by hand (rm "
		          "%s/" ACCEL_CDI_PREFIX "%s-*.json) or start accelfs again, which replaces them",
		          node->opt.cdi_dir, strerror(-(ret ? ret : sw.error)), node->opt.cdi_dir, node->cdi_tag);
	else if (sw.removed)
		log_info("%s: withdrew the CDI spec files of %u job(s): the jobs stay, and are published again when "
		         "accelfs starts",
		         node->opt.cdi_dir, sw.removed);
	node_cdi_forget(node);
}

void node_cdi_forget(struct accel_node *node)
{
	accel_snapshot_unref(node->cdi_written);
	accel_snapshot_unref(node->cdi_target);
	node->cdi_written = node->cdi_target = NULL;
}
