/* SPDX-License-Identifier: MIT */
#include "fs/tree.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/dies_tree.h"

bool fs_kind_is_dir(enum fs_kind kind)
{
	return kind == FS_ROOT || kind == FS_DEVICE || kind == FS_MIG || kind == FS_PROFILE || kind == FS_JOB ||
	       kind == FS_JOB_DEV || kind == FS_NODE_MIG || kind == FS_NODE_PROFILE || kind == FS_NODE_JOB ||
	       kind == FS_DIES || kind == FS_DIE || kind == FS_PLACEMENTS || kind == FS_PLACEMENT ||
	       kind == FS_PLACEMENT_JOB;
}

bool fs_kind_is_delegatable(enum fs_kind kind)
{
	/* dies/ and dies/<n>/ as device directories are: who may use a die's vram (docs/tree.md) */
	return kind == FS_ROOT || kind == FS_DEVICE || kind == FS_MIG || kind == FS_PROFILE || kind == FS_NODE_MIG ||
	       kind == FS_NODE_PROFILE || kind == FS_DIES || kind == FS_DIE;
}

bool fs_kind_takes_delegation(enum fs_kind kind)
{
	/*
	 * placements/ and placements/<start>/ are their profile directory's:
	 * mkdir there carves the same (a die's vram is its directory's too:
	 * fs/attr.c, by its row).
	 */
	return fs_kind_is_delegatable(kind) || kind == FS_PLACEMENTS || kind == FS_PLACEMENT;
}

/* The job of that name (names are the node's: one at most), if it is of that profile, for the node-level view. */
static const struct accel_job *node_job(const struct accel_snapshot *s, const char *profile, const char *name,
                                        const struct accel_device **dev)
{
	const struct accel_job *j = accel_snapshot_job(s, name, dev);

	return j && !strcmp(j->profile, profile) && accel_device_profile(*dev, profile) ? j : NULL;
}

bool fs_node_is_writable(const struct fs_node *n)
{
	return n->entry && (n->entry->flags & FS_ENTRY_WRITABLE);
}

bool fs_node_is_live(const struct fs_node *n)
{
	return n->entry && n->entry->fresh == FS_FRESH_LIVE;
}

int fs_tree_check(char *why, size_t whylen)
{
	/* Every kind of directory that has rows. */
	for (int k = FS_ROOT; k <= FS_DIE; k++) {
		const struct fs_entry *rows = fs_tree_files((enum fs_kind)k);

		for (size_t i = 0; rows && rows[i].name; i++) {
			const struct fs_entry *r = &rows[i];

			if (r->fresh != FS_FRESH_SNAPSHOT && r->fresh != FS_FRESH_LIVE) {
				snprintf(why, whylen,
				         "the row %s (fs/tree_files.c) has no freshness class: "
				         "FS_FRESH_SNAPSHOT or FS_FRESH_LIVE",
				         r->name);
				return -EINVAL;
			}
			if (r->fresh == FS_FRESH_LIVE && (r->kind != FS_FILE || (r->flags & FS_ENTRY_CACHED))) {
				snprintf(why, whylen, "the row %s (fs/tree_files.c) is live: a file, never page-cached",
				         r->name);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static bool offered(const struct fs_entry *e, const struct fs_node *dir)
{
	return !e->offered || e->offered(dir);
}

/* The row of that name among dir's, if it is there now. */
static const struct fs_entry *row_named(const struct fs_node *dir, const char *name)
{
	const struct fs_entry *table = fs_tree_files(dir->kind);

	for (size_t i = 0; table && table[i].name; i++)
		if (!strcmp(table[i].name, name))
			return offered(&table[i], dir) ? &table[i] : NULL;
	return NULL;
}

/* The node a row of dir names. */
static void enter_row(struct fs_node *n, const struct fs_entry *row)
{
	n->entry = row;
	n->kind = row->kind;
	n->live = n->live || (row->flags & FS_ENTRY_LIVE);
}

/* A child of dir that is no row's: everything dir knows, but not dir's row. */
static struct fs_node child_of(const struct fs_node *dir)
{
	struct fs_node child = *dir;

	child.entry = NULL;
	return child;
}

static const struct accel_job *profile_job(const struct accel_device *d, const struct accel_profile *p,
                                           const char *name)
{
	const struct accel_job *j = accel_device_job(d, name);

	return j && !strcmp(j->profile, p->name) ? j : NULL;
}

/* The legal placement of p whose start is spelled `name` (decimal, no leading zero): placements/<start>/. */
static bool placement_named(const struct accel_profile *p, const char *name, struct accel_span *out)
{
	char spelled[16];

	for (size_t i = 0; i < p->n_placements; i++) {
		snprintf(spelled, sizeof(spelled), "%u", p->placements[i].start);
		if (!strcmp(spelled, name)) {
			*out = p->placements[i];
			return true;
		}
	}
	return false;
}

static bool at_placement(const struct accel_job *j, struct accel_span at)
{
	return j->placement.start == at.start && j->placement.size == at.size;
}

/* A job a row of its directory hides (made before the name was the tree's) is not listed beside the row. */
static bool hidden_by_row(const struct fs_node *dir, const char *name)
{
	return row_named(dir, name) != NULL;
}

/* A job's node path below dev/: "/dev/alixpu-caps/alixpu-cap7" -> "alixpu-caps/alixpu-cap7". */
static const char *node_rel(const struct accel_devnode *n)
{
	return strncmp(n->path, "/dev/", 5) ? n->path : n->path + 5;
}

/*
 * Within a job's dev/: is `sub` (a path inside dev/) a directory (some node
 * lies below it), a node, or nothing?
 */
static enum fs_kind dev_entry(const struct accel_job *j, const char *sub, const struct accel_devnode **node)
{
	size_t len = strlen(sub);

	for (size_t i = 0; i < j->n_nodes; i++) {
		const char *rel = node_rel(&j->nodes[i]);
		if (!strcmp(rel, sub)) {
			*node = &j->nodes[i];
			return FS_JOB_DEV_NODE;
		}
		if (!strncmp(rel, sub, len) && rel[len] == '/')
			return FS_JOB_DEV;
	}
	return FS_NONE;
}

void fs_node_identity(const struct fs_node *n, char *buf, size_t len)
{
	if (n->job)
		snprintf(buf, len, "%s@%lld", n->job->uuid, (long long)n->job->created);
	else if (n->dev)
		snprintf(buf, len, "%s", n->dev->uuid);
	else if (len)
		buf[0] = '\0';
}

int fs_tree_resolve(const struct accel_snapshot *s, const struct fs_mount *m, const char *path, struct fs_node *out)
{
	char buf[1024], *save = NULL, *comp;
	struct fs_node n;

	memset(&n, 0, sizeof(n));
	n.kind = FS_ROOT;
	n.mount = m;
	if (strlen(path) >= sizeof(buf))
		return -ENOENT;
	strcpy(buf, path);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		enum fs_kind k = FS_NONE;
		const struct fs_entry *row = row_named(&n, comp);

		if (row) {
			enter_row(&n, row);
			continue;
		}
		n.entry = NULL;
		switch (n.kind) {
		case FS_ROOT:
			n.dev = accel_snapshot_device(s, comp);
			k = n.dev ? FS_DEVICE : FS_NONE;
			break;
		case FS_NODE_MIG:
			if (fs_node_profile_devices(s, comp, NULL)) {
				snprintf(n.node_profile, sizeof(n.node_profile), "%s", comp);
				k = FS_NODE_PROFILE;
			}
			break;
		case FS_NODE_PROFILE:
			if ((n.job = node_job(s, n.node_profile, comp, &n.dev))) {
				n.profile = accel_device_profile(n.dev, n.node_profile);
				n.via_node = true;
				k = FS_NODE_JOB;
			}
			break;
		case FS_PLACEMENTS:
			k = placement_named(n.profile, comp, &n.placement) ? FS_PLACEMENT : FS_NONE;
			break;
		case FS_PLACEMENT:
			n.job = profile_job(n.dev, n.profile, comp);
			if (n.job && at_placement(n.job, n.placement)) {
				n.via_placement = true;
				k = FS_PLACEMENT_JOB;
			}
			break;
		case FS_MIG:
			if ((n.profile = accel_device_profile(n.dev, comp)))
				k = FS_PROFILE;
			break;
		case FS_PROFILE:
			if ((n.job = profile_job(n.dev, n.profile, comp)))
				k = FS_JOB;
			break;
		case FS_JOB_DEV: {
			char sub[sizeof(n.dev_sub)];
			snprintf(sub, sizeof(sub), "%s%s%s", n.dev_sub, n.dev_sub[0] ? "/" : "", comp);
			k = dev_entry(n.job, sub, &n.devnode);
			snprintf(n.dev_sub, sizeof(n.dev_sub), "%s", sub);
			break;
		}
		case FS_DIES:
			k = fs_dies_tree_step(&n, comp);
			break;
		default:
			k = FS_NONE; /* files have no children */
		}
		if (k == FS_NONE)
			return -ENOENT;
		n.kind = k;
	}
	*out = n;
	return 0;
}

static void emit_rows(const struct fs_node *dir, fs_emit_fn emit, void *ctx)
{
	const struct fs_entry *table = fs_tree_files(dir->kind);

	for (size_t i = 0; table && table[i].name; i++) {
		struct fs_node child = *dir;
		if (!offered(&table[i], dir))
			continue;
		enter_row(&child, &table[i]);
		emit(ctx, table[i].name, table[i].kind, &child);
	}
}

void fs_tree_list(const struct accel_snapshot *s, const struct fs_node *dir, fs_emit_fn emit, void *ctx)
{
	emit_rows(dir, emit, ctx);
	switch (dir->kind) {
	case FS_ROOT:
		for (size_t i = 0; i < s->n_devices; i++) {
			struct fs_node child = { .kind = FS_DEVICE, .dev = s->devices[i], .mount = dir->mount };
			emit(ctx, s->devices[i]->name, FS_DEVICE, &child);
		}
		break;
	case FS_DIES:
		fs_dies_tree_list(dir, emit, ctx);
		break;
	case FS_NODE_MIG:
		/* Every published name once, in device order. */
		for (size_t i = 0; i < s->n_devices; i++)
			for (size_t k = 0; s->devices[i]->mig_enabled && k < s->devices[i]->n_profiles; k++) {
				const char *name = s->devices[i]->profiles[k].name;
				bool seen = false;
				for (size_t e = 0; e < i && !seen; e++)
					seen = accel_device_profile(s->devices[e], name) != NULL;
				if (seen)
					continue;
				struct fs_node child = { .kind = FS_NODE_PROFILE, .mount = dir->mount };
				snprintf(child.node_profile, sizeof(child.node_profile), "%s", name);
				emit(ctx, name, FS_NODE_PROFILE, &child);
			}
		break;
	case FS_NODE_PROFILE:
		for (size_t i = 0; i < s->n_devices; i++) {
			const struct accel_device *d = s->devices[i];
			if (!accel_device_profile(d, dir->node_profile))
				continue;
			for (size_t k = 0; k < d->n_jobs; k++) {
				struct fs_node child = child_of(dir);
				if (strcmp(d->jobs[k].profile, dir->node_profile))
					continue;
				child.kind = FS_NODE_JOB;
				child.dev = d;
				child.job = &d->jobs[k];
				child.profile = accel_device_profile(d, dir->node_profile);
				child.via_node = true;
				emit(ctx, d->jobs[k].name, FS_NODE_JOB, &child);
			}
		}
		break;
	case FS_PLACEMENTS:
		for (size_t i = 0; i < dir->profile->n_placements; i++) {
			struct fs_node child = child_of(dir);
			char name[16];

			child.kind = FS_PLACEMENT;
			child.placement = dir->profile->placements[i];
			snprintf(name, sizeof(name), "%u", child.placement.start);
			emit(ctx, name, FS_PLACEMENT, &child);
		}
		break;
	case FS_PLACEMENT:
		for (size_t i = 0; i < dir->dev->n_jobs; i++) {
			const struct accel_job *j = &dir->dev->jobs[i];
			struct fs_node child = child_of(dir);

			if (strcmp(j->profile, dir->profile->name) || !at_placement(j, dir->placement) ||
			    hidden_by_row(dir, j->name))
				continue;
			child.kind = FS_PLACEMENT_JOB;
			child.job = j;
			child.via_placement = true;
			emit(ctx, j->name, FS_PLACEMENT_JOB, &child);
		}
		break;
	case FS_MIG:
		for (size_t i = 0; dir->dev->mig_enabled && i < dir->dev->n_profiles; i++) {
			struct fs_node child = child_of(dir);
			child.kind = FS_PROFILE;
			child.profile = &dir->dev->profiles[i];
			emit(ctx, child.profile->name, FS_PROFILE, &child);
		}
		break;
	case FS_PROFILE:
		for (size_t i = 0; i < dir->dev->n_jobs; i++) {
			struct fs_node child = child_of(dir);
			if (strcmp(dir->dev->jobs[i].profile, dir->profile->name) ||
			    hidden_by_row(dir, dir->dev->jobs[i].name))
				continue;
			child.kind = FS_JOB;
			child.job = &dir->dev->jobs[i];
			emit(ctx, child.job->name, FS_JOB, &child);
		}
		break;
	case FS_JOB_DEV: {
		/* The first component below dev_sub of every node, each once. */
		size_t len = strlen(dir->dev_sub);
		for (size_t i = 0; i < dir->job->n_nodes; i++) {
			const char *rel = node_rel(&dir->job->nodes[i]);
			char name[128];
			const char *rest, *slash;
			bool dup = false;

			if (len && (strncmp(rel, dir->dev_sub, len) || rel[len] != '/'))
				continue;
			rest = len ? rel + len + 1 : rel;
			slash = strchr(rest, '/');
			snprintf(name, sizeof(name), "%.*s", slash ? (int)(slash - rest) : (int)strlen(rest), rest);
			for (size_t k = 0; k < i && !dup; k++) {
				const char *r2 = node_rel(&dir->job->nodes[k]);
				const char *rest2 = len ? r2 + len + 1 : r2;
				if ((!len || (!strncmp(r2, dir->dev_sub, len) && r2[len] == '/')) &&
				    !strncmp(rest2, name, strlen(name)) &&
				    (rest2[strlen(name)] == '/' || rest2[strlen(name)] == '\0'))
					dup = true;
			}
			if (dup)
				continue;
			struct fs_node child = child_of(dir);
			child.kind = slash ? FS_JOB_DEV : FS_JOB_DEV_NODE;
			child.devnode = slash ? NULL : &dir->job->nodes[i];
			snprintf(child.dev_sub, sizeof(child.dev_sub), "%s%s%s", dir->dev_sub, len ? "/" : "", name);
			emit(ctx, name, child.kind, &child);
		}
		break;
	}
	default:
		break;
	}
}
