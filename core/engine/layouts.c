/* SPDX-License-Identifier: MIT */
/*
 * The declared layouts, kept on disk and applied again and again
 * (core/engine/layouts.h).
 */
#include "core/engine/layouts.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state/fileio.h"
#include "core/engine/layout_apply.h"
#include "core/model/log.h"
#include "core/model/timed_wait.h"

/* The kept layout's first line: who wrote it (a comment to the parse). */
#define WRITER_LINE "# written by uid:gid "

#define STATUS_MAX (ACCEL_LAYOUT_MAX_LINES * (ACCEL_LAYOUT_WHY_MAX + 100))

struct layout_entry {
	char device[16];
	/*
	 * One write of this card's layout at a time, from its check to its
	 * apply: what is kept on disk and what the table says are always the
	 * same write's.  Before apply_lock.
	 */
	pthread_mutex_t set_lock;
	pthread_mutex_t apply_lock; /* one apply of this card at a time; before every lock of the node */
	/* The rest: ls->lock. */
	bool declared;
	struct accel_layout l;
	bool cordon_user, cordon_drain;
	bool mode_wait;                 /* a mode line is pending: the card takes no new job meanwhile */
	unsigned pending, impossible;   /* lines, as layout_status counts them */
	struct accel_layout_memory mem; /* apply_lock */
	bool applying;                  /* apply_lock is held for an apply */
	bool again;                     /* a pass found it being applied: its applier goes round once more */
	char *status;
};

struct accel_layouts {
	struct accel_node *node;
	struct accel_layouts_options opt;
	char dir[PATH_MAX];
	pthread_mutex_t lock; /* a leaf: the table and what entries say */
	pthread_cond_t cond;
	struct layout_entry **entries;
	size_t n_entries;
	bool kicked, stop, started;
	pthread_t thread;
};

/* The entry of device, made if needed: ls->lock held.  NULL when out of memory. */
static struct layout_entry *entry_of(struct accel_layouts *ls, const char *device)
{
	struct layout_entry *e, **grown;

	for (size_t i = 0; i < ls->n_entries; i++)
		if (!strcmp(ls->entries[i]->device, device))
			return ls->entries[i];
	e = calloc(1, sizeof(*e));
	grown = e ? realloc(ls->entries, (ls->n_entries + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(e);
		return NULL;
	}
	ls->entries = grown;
	snprintf(e->device, sizeof(e->device), "%s", device);
	e->l.mode = -1;
	pthread_mutex_init(&e->set_lock, NULL);
	pthread_mutex_init(&e->apply_lock, NULL);
	ls->entries[ls->n_entries++] = e;
	return e;
}

/* The holds the entry lays on its card (ls->lock held). */
static struct accel_card_hold hold_of(const struct layout_entry *e)
{
	return (struct accel_card_hold){ .cordon = e->cordon_user,
		                         .drain = e->cordon_drain,
		                         .mode_wait = e->mode_wait,
		                         .pending = e->pending,
		                         .impossible = e->impossible };
}

/* What a plan says of the card's holds: a mode line waiting, lines pending and impossible (ls->lock held). */
static void plan_holds(struct layout_entry *e, bool declared, const struct accel_layout *l,
                       const struct accel_layout_plan *plan)
{
	e->mode_wait = false;
	e->pending = e->impossible = 0;
	for (size_t i = 0; declared && i < l->n_lines; i++) {
		e->pending += plan->state[i] == ACCEL_LAYOUT_PENDING;
		e->impossible += plan->state[i] == ACCEL_LAYOUT_IMPOSSIBLE;
		if (l->lines[i].kind == ACCEL_LAYOUT_MODE && plan->state[i] == ACCEL_LAYOUT_PENDING)
			e->mode_wait = true;
	}
	e->pending += declared ? (unsigned)plan->n_kept : 0;
}

static void changed(struct accel_layouts *ls)
{
	if (ls->opt.on_change)
		ls->opt.on_change(ls->opt.change_ctx);
}

/*
 * Apply one card's layout and publish what it says now.  A pass of the
 * thread that finds the card being applied (a write, the start) leaves it
 * to that applier, which goes round once more: every published change
 * kicks a pass, and a carve on eight cards would otherwise have eight
 * passes queue on the cards' locks only to find nothing to do.
 */
static void apply_entry(struct accel_layouts *ls, struct layout_entry *e, bool pass)
{
	struct accel_layout *l = malloc(sizeof(*l));
	struct accel_layout_plan *plan = malloc(sizeof(*plan));
	char *status = calloc(1, STATUS_MAX);
	bool declared, moved, moved_any = false;
	struct accel_card_hold hold;
	unsigned rounds = 0;

	if (!l || !plan || !status) {
		free(l);
		free(plan);
		free(status);
		return;
	}
	if (pass && pthread_mutex_trylock(&e->apply_lock)) {
		pthread_mutex_lock(&ls->lock);
		e->again = true;
		pthread_mutex_unlock(&ls->lock);
		free(l);
		free(plan);
		free(status);
		return;
	}
	if (!pass)
		pthread_mutex_lock(&e->apply_lock);
again:
	pthread_mutex_lock(&ls->lock);
	e->applying = true;
	e->again = false;
	declared = e->declared;
	*l = e->l;
	pthread_mutex_unlock(&ls->lock);
	plan->cordon = false;
	/* A busy layout job is asked again every few poll intervals: each try holds the card for its retries. */
	unsigned retry_ms = 5 * (ls->opt.poll_ms ? ls->opt.poll_ms : 2000);
	if (declared && !accel_layout_apply(ls->node, ls->opt.attach, e->device, l, ls->opt.held, ls->opt.held_ctx,
	                                    &e->mem, retry_ms, plan))
		accel_layout_status_format(l, plan, status, STATUS_MAX);
	else if (declared)
		snprintf(status, STATUS_MAX, "%s is not on this node now: the layout waits for it\n", e->device);
	pthread_mutex_lock(&ls->lock);
	e->cordon_drain = declared && plan->cordon;
	plan_holds(e, declared, l, plan);
	hold = hold_of(e);
	moved = !e->status || strcmp(e->status, status);
	moved_any |= moved;
	if (moved) {
		free(e->status);
		e->status = status;
		status = NULL;
	}
	bool more = e->again && !rounds++; /* once more at most: the rest is the next pass's */
	pthread_mutex_unlock(&ls->lock);
	accel_node_set_hold(ls->node, e->device, &hold);
	if (more) {
		if (!status)
			status = calloc(1, STATUS_MAX);
		if (status) {
			status[0] = '\0';
			goto again;
		}
	}
	pthread_mutex_lock(&ls->lock);
	e->applying = false;
	pthread_mutex_unlock(&ls->lock);
	pthread_mutex_unlock(&e->apply_lock);
	if (moved_any)
		changed(ls);
	free(status);
	free(l);
	free(plan);
}

struct apply_job {
	struct accel_layouts *ls;
	struct layout_entry *e;
	pthread_t t;
	bool started, pass;
};

static void *apply_thread(void *arg)
{
	struct apply_job *j = arg;

	apply_entry(j->ls, j->e, j->pass);
	return NULL;
}

static void apply_all(struct accel_layouts *ls, bool pass)
{
	struct apply_job *jobs;
	size_t n;

	pthread_mutex_lock(&ls->lock);
	jobs = calloc(ls->n_entries + 1, sizeof(*jobs));
	n = 0;
	for (size_t i = 0; jobs && i < ls->n_entries; i++) {
		struct layout_entry *e = ls->entries[i];
		if (pass && e->applying) {
			e->again = true; /* its applier goes round once more: no thread for it here */
			continue;
		}
		jobs[n++] = (struct apply_job){ .ls = ls, .e = e, .pass = pass };
	}
	pthread_mutex_unlock(&ls->lock);
	if (!jobs)
		return;
	/* Cards are independent (each its own lock): one thread each, so a node's layout costs its slowest card. */
	for (size_t i = 0; i < n && n > 1; i++) {
		jobs[i].started = !pthread_create(&jobs[i].t, NULL, apply_thread, &jobs[i]);
		if (jobs[i].started)
			pthread_setname_np(jobs[i].t, "layout-apply");
	}
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].t, NULL);
		else
			apply_entry(ls, jobs[i].e, pass);
	}
	free(jobs);
}

void accel_layouts_apply_all(struct accel_layouts *ls)
{
	apply_all(ls, false);
}

static void *run(void *arg)
{
	struct accel_layouts *ls = arg;
	unsigned ms = ls->opt.poll_ms ? ls->opt.poll_ms : 2000;

	pthread_mutex_lock(&ls->lock);
	while (!ls->stop) {
		bool any = false;

		/* Nothing declared and nothing cordoned: no pass to make until a write or a change kicks. */
		for (size_t i = 0; i < ls->n_entries && !any; i++)
			any = ls->entries[i]->declared || ls->entries[i]->cordon_user || ls->entries[i]->cordon_drain;
		if (!ls->kicked && !any) {
			pthread_cond_wait(&ls->cond, &ls->lock);
		} else if (!ls->kicked) {
			struct timespec until = accel_deadline_in_ms(ms);

			pthread_cond_timedwait(&ls->cond, &ls->lock, &until);
		}
		if (ls->stop)
			break;
		ls->kicked = false;
		pthread_mutex_unlock(&ls->lock);
		apply_all(ls, true);
		pthread_mutex_lock(&ls->lock);
	}
	pthread_mutex_unlock(&ls->lock);
	return NULL;
}

static void path_of(const struct accel_layouts *ls, const char *device, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.%s", ls->dir, device, ext);
}

/* A kept file, whole, or NULL. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = f ? calloc(1, ACCEL_LAYOUT_TEXT_MAX + 66) : NULL;

	*len = buf ? fread(buf, 1, ACCEL_LAYOUT_TEXT_MAX + 65, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

static void load(struct accel_layouts *ls)
{
	DIR *dir = opendir(ls->dir);
	struct dirent *de;

	while (dir && (de = readdir(dir))) {
		char device[16], path[PATH_MAX + 300], why[ACCEL_LAYOUT_WHY_MAX];
		const char *dot = strrchr(de->d_name, '.');
		size_t len;
		char *text;

		if (!dot || (strcmp(dot, ".layout") && strcmp(dot, ".cordon")) || (size_t)(dot - de->d_name) >= 16)
			continue;
		snprintf(device, sizeof(device), "%.*s", (int)(dot - de->d_name), de->d_name);
		snprintf(path, sizeof(path), "%s/%s", ls->dir, de->d_name);
		text = slurp(path, &len);
		if (!text)
			continue;
		pthread_mutex_lock(&ls->lock);
		struct layout_entry *e = entry_of(ls, device);
		if (e && !strcmp(dot, ".cordon")) {
			e->cordon_user = text[0] == '1';
		} else if (e) {
			struct accel_layout l;
			if (accel_layout_parse(text, len, &l, why, sizeof(why))) {
				log_error("%s: the kept layout %s is not a layout (%s): it is left out", device, path,
				          why);
			} else {
				unsigned uid = 0, gid = 0;
				/* A layout kept before its writer was: root's, as it was carved. */
				if (!strncmp(text, WRITER_LINE, strlen(WRITER_LINE)))
					sscanf(text + strlen(WRITER_LINE), "%u:%u", &uid, &gid);
				l.uid = (uid_t)uid;
				l.gid = (gid_t)gid;
				e->l = l;
				e->declared = true;
			}
		}
		pthread_mutex_unlock(&ls->lock);
		free(text);
	}
	if (dir)
		closedir(dir);
}

struct accel_layouts *accel_layouts_open(struct accel_node *node, const struct accel_layouts_options *opt)
{
	struct accel_layouts *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->node = node;
	ls->opt = *opt;
	snprintf(ls->dir, sizeof(ls->dir), "%s/layouts", opt->state_dir);
	pthread_mutex_init(&ls->lock, NULL);
	accel_cond_init_monotonic(&ls->cond);
	load(ls);
	return ls;
}

int accel_layouts_start(struct accel_layouts *ls)
{
	int ret = pthread_create(&ls->thread, NULL, run, ls);

	ls->started = !ret;
	if (ls->started)
		pthread_setname_np(ls->thread, "layouts");
	return -ret;
}

void accel_layouts_kick(struct accel_layouts *ls)
{
	pthread_mutex_lock(&ls->lock);
	ls->kicked = true;
	pthread_cond_signal(&ls->cond);
	pthread_mutex_unlock(&ls->lock);
}

void accel_layouts_close(struct accel_layouts *ls)
{
	if (!ls)
		return;
	pthread_mutex_lock(&ls->lock);
	ls->stop = true;
	pthread_cond_signal(&ls->cond);
	pthread_mutex_unlock(&ls->lock);
	if (ls->started)
		pthread_join(ls->thread, NULL);
	for (size_t i = 0; i < ls->n_entries; i++) {
		pthread_mutex_destroy(&ls->entries[i]->set_lock);
		pthread_mutex_destroy(&ls->entries[i]->apply_lock);
		free(ls->entries[i]->status);
		free(ls->entries[i]);
	}
	free(ls->entries);
	pthread_cond_destroy(&ls->cond);
	pthread_mutex_destroy(&ls->lock);
	free(ls);
}

static int keep(struct accel_layouts *ls, const char *device, const char *ext, const char *text, size_t len, char *why,
                size_t whylen)
{
	char path[PATH_MAX + 64];
	int ret = accel_mkdirs(ls->dir, 0700);

	path_of(ls, device, ext, path, sizeof(path));
	if (!ret)
		ret = accel_durable_write(path, text, len, 0600);
	if (ret)
		snprintf(why, whylen, "cannot keep %s: %s: nothing was changed", path, strerror(-ret));
	return ret;
}

/* Parse text into l and check it against device as the newest snapshot shows it. */
static int parse_check(struct accel_layouts *ls, const char *device, const char *text, size_t len,
                       struct accel_layout *l, char *why, size_t whylen)
{
	struct accel_snapshot *s = accel_node_snapshot(ls->node);
	const struct accel_device *d = s ? accel_snapshot_device(s, device) : NULL;
	int ret;

	why[0] = '\0';
	if (!d) {
		snprintf(why, whylen, "no device %s", device);
		ret = -ENOENT;
	} else {
		ret = accel_layout_parse(text, len, l, why, whylen);
		if (!ret)
			ret = accel_layout_check(l, d, why, whylen);
	}
	accel_snapshot_unref(s);
	return ret;
}

int accel_layouts_check(struct accel_layouts *ls, const char *device, const char *text, size_t len, char *why,
                        size_t whylen)
{
	struct accel_layout *l = malloc(sizeof(*l));
	int ret = l ? parse_check(ls, device, text, len, l, why, whylen) : -ENOMEM;

	free(l);
	return ret;
}

int accel_layouts_set(struct accel_layouts *ls, const char *device, const char *text, size_t len, uid_t uid, gid_t gid,
                      char *why, size_t whylen)
{
	struct accel_layout *l = malloc(sizeof(*l));
	char canon[ACCEL_LAYOUT_TEXT_MAX + 64];
	struct layout_entry *e = NULL;
	int ret;

	if (!l)
		return -ENOMEM;
	pthread_mutex_lock(&ls->lock);
	e = entry_of(ls, device);
	pthread_mutex_unlock(&ls->lock);
	if (!e) {
		free(l);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	/* Checked, kept and declared as one: a concurrent writer's text is wholly before or after this one. */
	pthread_mutex_lock(&e->set_lock);
	ret = parse_check(ls, device, text, len, l, why, whylen);
	if (!ret) {
		/* The writer first, as a comment the parse skips: a restart carves as the same writer. */
		int head = snprintf(canon, sizeof(canon), WRITER_LINE "%u:%u\n", (unsigned)uid, (unsigned)gid);
		l->uid = uid;
		l->gid = gid;
		accel_layout_format(l, canon + head, sizeof(canon) - (size_t)head);
		ret = keep(ls, device, "layout", canon, strlen(canon), why, whylen);
	}
	if (!ret) {
		pthread_mutex_lock(&ls->lock);
		e->l = *l;
		e->declared = true;
		pthread_mutex_unlock(&ls->lock);
		apply_entry(ls, e, false);
	}
	pthread_mutex_unlock(&e->set_lock);
	free(l);
	return ret;
}

static struct layout_entry *find(struct accel_layouts *ls, const char *device)
{
	for (size_t i = 0; i < ls->n_entries; i++)
		if (!strcmp(ls->entries[i]->device, device))
			return ls->entries[i];
	return NULL;
}

char *accel_layouts_text(struct accel_layouts *ls, const char *device)
{
	char buf[ACCEL_LAYOUT_TEXT_MAX + 1] = "";

	pthread_mutex_lock(&ls->lock);
	struct layout_entry *e = find(ls, device);
	if (e && e->declared)
		accel_layout_format(&e->l, buf, sizeof(buf));
	pthread_mutex_unlock(&ls->lock);
	return strdup(buf);
}

char *accel_layouts_status(struct accel_layouts *ls, const char *device)
{
	char *out;

	pthread_mutex_lock(&ls->lock);
	struct layout_entry *e = find(ls, device);
	out = strdup(e && e->status ? e->status : "");
	pthread_mutex_unlock(&ls->lock);
	return out;
}

int accel_layouts_mode(struct accel_layouts *ls, const char *device)
{
	int mode;

	pthread_mutex_lock(&ls->lock);
	struct layout_entry *e = find(ls, device);
	mode = e && e->declared ? e->l.mode : -1;
	pthread_mutex_unlock(&ls->lock);
	return mode;
}

bool accel_layouts_cordoned(struct accel_layouts *ls, const char *device)
{
	bool on;

	pthread_mutex_lock(&ls->lock);
	struct layout_entry *e = find(ls, device);
	on = e && (e->cordon_user || e->cordon_drain);
	pthread_mutex_unlock(&ls->lock);
	return on;
}

int accel_layouts_set_cordon(struct accel_layouts *ls, const char *device, bool on, char *why, size_t whylen)
{
	struct accel_card_hold hold;
	struct layout_entry *e;
	int ret = keep(ls, device, "cordon", on ? "1\n" : "0\n", 2, why, whylen);

	if (ret)
		return ret;
	pthread_mutex_lock(&ls->lock);
	e = entry_of(ls, device);
	pthread_mutex_unlock(&ls->lock);
	if (!e) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	/* After any apply in flight, which sets the card's cordon from what it read. */
	pthread_mutex_lock(&e->apply_lock);
	pthread_mutex_lock(&ls->lock);
	e->cordon_user = on;
	hold = hold_of(e);
	pthread_mutex_unlock(&ls->lock);
	accel_node_set_hold(ls->node, device, &hold);
	pthread_mutex_unlock(&e->apply_lock);
	changed(ls);
	return 0;
}
