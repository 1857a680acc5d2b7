/* SPDX-License-Identifier: MIT */
#include "fs/foreign_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/log.h"
#include "core/engine/node.h"
#include "fs/accelfs.h"
#include "fs/layout_files.h"
#include "fs/text.h"

int fs_foreign_render(struct fs_text *t, const struct fs_view *v)
{
	fs_put(t, "%s\n", v->n->dev->foreign_reclaim ? "reclaim" : "keep");
	return 0;
}

/* What a job could take over: an instance no job owns, with one compute instance covering it (a MIG device). */
static bool adoptable(const struct accel_instance *in)
{
	return !in->job[0] && in->n_ci == 1 && !in->subdivided && in->uuid[0];
}

int fs_adopt_render(struct fs_text *t, const struct fs_view *v)
{
	for (size_t i = 0; i < v->n->dev->n_instances; i++) {
		const struct accel_instance *in = &v->n->dev->instances[i];
		if (adoptable(in))
			fs_put(t, "gi=%u uuid=%s profile=%s placement=%u:%u %s\n", in->gi, in->uuid, in->profile_name,
			       in->placement.start, in->placement.size, in->foreign ? "foreign" : "orphan");
	}
	return 0;
}

/* The words of one line, each "key=value" (or the bare word a listed line ends with). */
struct adopt_line {
	long gi;
	char uuid[ACCEL_UUID_MAX];
	char name[ACCEL_JOB_NAME_MAX + 2];
	char profile[ACCEL_NAME_MAX];
	char placement[32];
};

static int parse_adopt(const char *buf, size_t size, struct adopt_line *l, char *why, size_t whylen)
{
	char text[512], *save = NULL;

	memset(l, 0, sizeof(*l));
	l->gi = -1;
	if (size >= sizeof(text) || memchr(buf, '\0', size)) {
		snprintf(why, whylen, "adopt: one line, gi=<G> [uuid=<MIG-...>] name=<job>");
		return -EINVAL;
	}
	memcpy(text, buf, size);
	text[size] = '\0';
	if (size && text[size - 1] == '\n')
		text[--size] = '\0';
	if (strchr(text, '\n')) {
		snprintf(why, whylen, "adopt: one instance a write");
		return -EINVAL;
	}
	for (char *w = strtok_r(text, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(w, '='), *end;
		const char *v = eq ? eq + 1 : NULL;
		size_t klen = eq ? (size_t)(eq - w) : strlen(w);
		int ok = 1;

		if (!eq && (!strcmp(w, "foreign") || !strcmp(w, "orphan")))
			continue; /* a line of the listing, pasted back */
		if (v && klen == 2 && !strncmp(w, "gi", 2)) {
			l->gi = strtol(v, &end, 10);
			ok = *v && !*end && l->gi >= 0 && l->gi < 1 << 20;
		} else if (v && klen == 4 && !strncmp(w, "uuid", 4)) {
			ok = snprintf(l->uuid, sizeof(l->uuid), "%s", v) < (int)sizeof(l->uuid);
		} else if (v && klen == 4 && !strncmp(w, "name", 4)) {
			ok = snprintf(l->name, sizeof(l->name), "%s", v) < (int)sizeof(l->name);
		} else if (v && klen == 7 && !strncmp(w, "profile", 7)) {
			ok = snprintf(l->profile, sizeof(l->profile), "%s", v) < (int)sizeof(l->profile);
		} else if (v && klen == 9 && !strncmp(w, "placement", 9)) {
			ok = snprintf(l->placement, sizeof(l->placement), "%s", v) < (int)sizeof(l->placement);
		} else {
			snprintf(why, whylen, "adopt: unknown word '%.40s': write gi=<G> [uuid=<MIG-...>] name=<job>",
			         w);
			return -EINVAL;
		}
		if (!ok) {
			snprintf(why, whylen, "adopt: '%.60s' is not a value it takes", w);
			return -EINVAL;
		}
	}
	if (l->gi < 0 || !l->name[0]) {
		snprintf(why, whylen, "adopt: write gi=<G> [uuid=<MIG-...>] name=<job> (gi and name are needed)");
		return -EINVAL;
	}
	return 0;
}

/* profile= and placement=, when given, must be what the instance is in the snapshot the writer saw. */
static int check_seen(const struct fs_node *n, const struct adopt_line *l, char *why, size_t whylen)
{
	for (size_t i = 0; i < n->dev->n_instances; i++) {
		const struct accel_instance *in = &n->dev->instances[i];
		char pl[32];

		if (in->gi != (unsigned)l->gi)
			continue;
		snprintf(pl, sizeof(pl), "%u:%u", in->placement.start, in->placement.size);
		if ((l->profile[0] && strcmp(l->profile, in->profile_name)) ||
		    (l->placement[0] && strcmp(l->placement, pl))) {
			snprintf(why, whylen, "GPU instance %ld is %s at %s now: nothing was adopted", l->gi,
			         in->profile_name, pl);
			return -ESTALE;
		}
	}
	return 0;
}

static int adopt(struct fs_write *wr, const struct fs_node *n, char *why, size_t whylen)
{
	struct fuse_ctx const *ctx = fuse_req_ctx(wr->req);
	struct adopt_line l;
	int ret = parse_adopt(wr->buf, wr->size, &l, why, whylen);

	if (!ret)
		ret = check_seen(n, &l, why, whylen);
	if (!ret)
		ret = accel_node_adopt(wr->fs->node, n->dev->name, (unsigned)l.gi, l.uuid, l.name, ctx->uid, ctx->gid,
		                       why, whylen);
	return ret;
}

int fs_foreign_write(struct fs_write *wr, const struct fs_node *n)
{
	const char *file = n->entry->name;
	char why[ACCEL_TEXT_MAX] = "", key[64];
	uid_t uid;
	gid_t gid;
	int ret;

	snprintf(key, sizeof(key), "%s/mig", n->dev->name);
	if (wr->uid != 0 && !(fs_layout_owner(wr->fs, n->dev->name, &uid, &gid) && uid == wr->uid)) {
		snprintf(why, sizeof(why), "%s/mig/%s: only root and the device's delegate may write it", n->dev->name,
		         file);
		ret = -EPERM;
	} else if (wr->off != 0) {
		snprintf(why, sizeof(why), "%s/mig/%s: write the whole of it at once, from the start", n->dev->name,
		         file);
		ret = -EINVAL;
	} else if (!strcmp(file, "adopt")) {
		ret = adopt(wr, n, why, sizeof(why));
	} else {
		char w[16] = "";
		size_t len = wr->size;

		while (len && (wr->buf[len - 1] == '\n' || wr->buf[len - 1] == ' '))
			len--;
		if (len < sizeof(w))
			memcpy(w, wr->buf, len);
		ret = accel_node_set_foreign(wr->fs->node, n->dev->name, w, why, sizeof(why));
	}
	if (ret) {
		log_notice("%s/mig/%s: %s", n->dev->name, file, why);
		accel_node_set_last_error(wr->fs->node, key, why);
		return ret;
	}
	accel_node_set_last_error(wr->fs->node, key, "");
	return (int)wr->size;
}
