/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_nodes.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* <proc>/<caps dir>/mig, and below it gi<G>[/ci<C>] */
static int record_dir(struct sim_ctx *ctx, const struct sim_device *d, int gi, int ci, char *buf, size_t len)
{
	char rel[160];
	int n;

	ctx->vendor->caps_dir(d, rel, sizeof(rel));
	if (gi < 0)
		n = snprintf(buf, len, "%s/%s/mig", ctx->paths.proc, rel);
	else if (ci < 0)
		n = snprintf(buf, len, "%s/%s/mig/gi%d", ctx->paths.proc, rel, gi);
	else
		n = snprintf(buf, len, "%s/%s/mig/gi%d/ci%d", ctx->paths.proc, rel, gi, ci);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* DeviceFileMode 256 is 0400: what nvidia-modprobe gives the node it makes. */
static int make_record(struct sim_ctx *ctx, const char *dir, unsigned minor)
{
	char path[PATH_MAX], rel[96], text[128];
	int ret = sim_path_join(path, sizeof(path), dir, "access");

	if (ret)
		return ret;
	snprintf(text, sizeof(text), "DeviceFileMinor: %u\nDeviceFileMode: 256\nDeviceFileModify: 1\n", minor);
	ret = sim_write_text(path, text);
	if (ret)
		return ret;
	ctx->vendor->cap_node(minor, rel, sizeof(rel));
	ret = sim_path_join(path, sizeof(path), ctx->paths.dev, rel);
	return ret ? ret : sim_make_chr(path, 0400, ctx->vendor->cap_major, minor);
}

int sim_nodes_gi_created(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi)
{
	char dir[PATH_MAX];
	int ret = record_dir(ctx, d, (int)gi->id, -1, dir, sizeof(dir));

	return ret ? ret : make_record(ctx, dir, ctx->vendor->gi_cap_minor(d, gi->id));
}

int sim_nodes_ci_created(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi,
                         const struct sim_ci *ci)
{
	char dir[PATH_MAX];
	int ret = record_dir(ctx, d, (int)gi->id, (int)ci->id, dir, sizeof(dir));

	return ret ? ret : make_record(ctx, dir, ctx->vendor->ci_cap_minor(d, gi->id, ci->id));
}

void sim_nodes_gi_removed(struct sim_ctx *ctx, const struct sim_device *d, unsigned gi)
{
	char dir[PATH_MAX];

	if (record_dir(ctx, d, (int)gi, -1, dir, sizeof(dir)) == 0)
		sim_remove_tree(dir);
}

void sim_nodes_ci_removed(struct sim_ctx *ctx, const struct sim_device *d, unsigned gi, unsigned ci)
{
	char dir[PATH_MAX];

	if (record_dir(ctx, d, (int)gi, (int)ci, dir, sizeof(dir)) == 0)
		sim_remove_tree(dir);
}

/* "gi3" -> 3; -1 for anything else. */
static int parse_id(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	char *end;
	long v;

	if (strncmp(name, prefix, n) != 0 || !name[n])
		return -1;
	v = strtol(name + n, &end, 10);
	return *end || v < 0 || v > 1000 ? -1 : (int)v;
}

/* Remove records under dir (named prefix<N>) for which keep() says no. */
static void prune(const char *dir, const char *prefix, bool (*keep)(void *arg, int id), void *arg)
{
	DIR *dh = opendir(dir);
	struct dirent *de;

	if (!dh)
		return;
	while ((de = readdir(dh))) {
		char child[PATH_MAX];
		int id = parse_id(de->d_name, prefix);

		if (id < 0 || keep(arg, id))
			continue;
		if (sim_path_join(child, sizeof(child), dir, de->d_name) == 0)
			sim_remove_tree(child);
	}
	closedir(dh);
}

static bool gi_is_live(void *arg, int id)
{
	return sim_gi_by_id(arg, (unsigned)id) != NULL;
}

static bool ci_is_live(void *arg, int id)
{
	return sim_ci_by_id(arg, (unsigned)id) != NULL;
}

int sim_nodes_sync_static(struct sim_ctx *ctx, const struct sim_device *const *devs, unsigned n, char *err,
                          size_t errlen)
{
	if (accel_mkdirs(ctx->paths.dev, 0755) || accel_mkdirs(ctx->paths.proc, 0755)) {
		snprintf(err, errlen, "cannot create %s and %s", ctx->paths.dev, ctx->paths.proc);
		return -EIO;
	}
	return ctx->vendor->make_static_nodes(&ctx->paths, devs, n, err, errlen);
}

int sim_nodes_sync_card(struct sim_ctx *ctx, struct sim_device *d, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int ret;

	if (record_dir(ctx, d, -1, -1, dir, sizeof(dir)) == 0)
		prune(dir, "gi", gi_is_live, d);
	for (unsigned g = 0; g < d->n_gis; g++) {
		struct sim_gi *gi = &d->gis[g];

		if (record_dir(ctx, d, (int)gi->id, -1, dir, sizeof(dir)) == 0)
			prune(dir, "ci", ci_is_live, gi);
		ret = sim_nodes_gi_created(ctx, d, gi);
		for (unsigned c = 0; c < gi->n_cis && !ret; c++)
			ret = sim_nodes_ci_created(ctx, d, gi, &gi->cis[c]);
		if (ret) {
			snprintf(err, errlen, "cannot write the capability records of %s %u GPU instance %u",
			         ctx->vendor->device_word, d->ordinal, gi->id);
			return ret;
		}
	}
	return 0;
}
