/* SPDX-License-Identifier: MIT */
/*
 * <dev>/mig/layout, layout_status, cordon, last_error and the writes to
 * mode: the tree's side of core/engine/layouts.h and of core/engine/node_mode.c.  The
 * rows are fs/tree_files.c's; what they say and do is here.
 */
#include "fs/layout_files.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/attach.h"
#include "core/state/delegation.h"
#include "core/engine/layouts.h"
#include "core/model/log.h"
#include "core/engine/node.h"
#include "fs/accelfs.h"
#include "fs/deferred.h"
#include "fs/render.h"
#include "fs/text.h"
#include "fs/lock_order.h"
#include "fs/shown.h"

/* ---- what they say ------------------------------------------------------- */

static int adopt(struct fs_text *t, char *text)
{
	if (!text)
		return -ENOMEM;
	fs_put(t, "%s", text);
	free(text);
	return 0;
}

int fs_layout_render(struct fs_text *t, const struct fs_view *v)
{
	if (!v->n->mount->layouts)
		return 0;
	return adopt(t, accel_layouts_text(v->n->mount->layouts, v->n->dev->name));
}

int fs_mig_mode_render(struct fs_text *t, const struct fs_view *v)
{
	const struct accel_device *d = v->n->dev;

	if (d->mig_enabled == d->mig_pending_enabled)
		fs_put(t, "%s\n", d->mig_enabled ? "enabled" : "disabled");
	else
		fs_put(t, "%s (pending: %s)\n", d->mig_enabled ? "enabled" : "disabled",
		       d->mig_pending_enabled ? "enabled" : "disabled");
	return 0;
}

int fs_layout_status_render(struct fs_text *t, const struct fs_view *v)
{
	if (!v->n->mount->layouts)
		return 0;
	return adopt(t, accel_layouts_status(v->n->mount->layouts, v->n->dev->name));
}

int fs_cordon_render(struct fs_text *t, const struct fs_view *v)
{
	fs_put(t, "%d\n", v->n->mount->layouts && accel_layouts_cordoned(v->n->mount->layouts, v->n->dev->name));
	return 0;
}

int fs_mig_last_error_render(struct fs_text *t, const struct fs_view *v)
{
	char key[64], buf[ACCEL_TEXT_MAX];

	snprintf(key, sizeof(key), "%s/mig", v->n->dev->name);
	fs_shown_last_error(v->shown, key, buf, sizeof(buf));
	fs_put(t, "%s%s", buf, buf[0] ? "\n" : "");
	return 0;
}

/* ---- what a container's attachment holds ---------------------------------- */

bool fs_layout_held(void *ctx, const struct accel_device *d, const struct accel_job *j, char *why, size_t whylen)
{
	struct accel_attach *reg = ctx;
	struct accel_attachment *c = NULL;
	size_t n = 0;

	(void)d;
	if (!reg || accel_attach_list(reg, j->name, j->uuid, &c, &n) || !n) {
		free(c);
		return false;
	}
	snprintf(why, whylen, "in use by container %.20s, pid %d%s", c[0].id, (int)c[0].pid, n > 1 ? " and more" : "");
	free(c);
	return true;
}

/* ---- writes ------------------------------------------------------------------ */

bool fs_layout_owner(struct accelfs *fs, const char *device, uid_t *uid, gid_t *gid)
{
	struct accel_perm perm;

	if (!fs->deleg ||
	    (!accel_delegation_get(fs->deleg, device, &perm) && !accel_delegation_get(fs->deleg, "", &perm)))
		return false;
	*uid = perm.uid;
	*gid = perm.gid;
	return true;
}

/* Root, or whoever the device is delegated to. */
static bool may_write(struct accelfs *fs, const char *device, uid_t who)
{
	uid_t uid;
	gid_t gid;

	return who == 0 || (fs_layout_owner(fs, device, &uid, &gid) && uid == who);
}

static bool named(const struct fs_node *n, const char *name)
{
	return n->kind == FS_FILE && n->entry && n->dev && !n->profile && !n->job && !strcmp(n->entry->name, name);
}

bool fs_layout_writes(const struct fs_node *n)
{
	return named(n, "cordon") || named(n, "mode") || named(n, "health") || named(n, "foreign") || named(n, "adopt");
}

bool fs_layout_deferred(const struct fs_node *n)
{
	return named(n, "layout");
}

static int refuse(struct accelfs *fs, const char *device, const char *why, int ret)
{
	char key[64];

	snprintf(key, sizeof(key), "%s/mig", device);
	log_warn("%s/mig/layout: %s", device, why);
	accel_node_set_last_error(fs->node, key, why);
	return ret;
}

/* Apply what the handle's writes brought: the whole layout (fs/deferred.h). */
static int layout_commit(struct accelfs *fs, struct fs_deferred *p)
{
	char why[ACCEL_TEXT_MAX] = "", key[64];
	int ret = 0;

	snprintf(key, sizeof(key), "%s/mig", p->device);
	if (fs->mount.layouts) {
		ret = accel_layouts_set(fs->mount.layouts, p->device, p->text ? p->text : "", p->len, p->uid, p->gid,
		                        why, sizeof(why));
		if (ret)
			refuse(fs, p->device, why, ret);
		else
			accel_node_set_last_error(fs->node, key, "");
	}
	return ret;
}

int fs_layout_write_part(struct accelfs *fs, const struct fs_node *n, uid_t uid, gid_t gid,
                         struct fs_deferred **pending, const char *buf, size_t size, off_t off)
{
	struct fs_deferred *p = *pending;
	char why[ACCEL_TEXT_MAX];
	int ret;

	if (!may_write(fs, n->dev->name, uid))
		return refuse(fs, n->dev->name, "only root and the device's delegate may write the layout", -EPERM);
	if (!fs->mount.layouts)
		return refuse(fs, n->dev->name, "layouts are not kept on this mount", -ENODEV);
	if (!p) {
		p = *pending = fs_deferred_new(n->dev->name, layout_commit);
		if (!p)
			return -ENOMEM;
		p->uid = uid; /* the layout's jobs will be its writer's */
		p->gid = gid;
	}
	if (p->bad)
		return refuse(fs, n->dev->name,
		              "an earlier write of this layout was refused: nothing will be applied; "
		              "write the whole layout again",
		              -EINVAL);
	ret = fs_deferred_add(p, buf, size, off, ACCEL_LAYOUT_TEXT_MAX, "the layout", why, sizeof(why));
	if (ret)
		return refuse(fs, n->dev->name, why, ret);
	/* Each complete line is checked as it comes, so the write that brings a bad one fails. */
	ret = accel_layouts_check(fs->mount.layouts, p->device, p->text, fs_deferred_whole(p), why, sizeof(why));
	if (ret) {
		p->bad = true;
		return refuse(fs, n->dev->name, why, ret);
	}
	return (int)size;
}

int fs_layout_text_write(struct fs_write *w, const struct fs_node *n)
{
	int ret;

	if (!w->pending || !w->handle_lock)
		return -EACCES;
	fs_lock(w->handle_lock, FS_LOCK_FILE);
	ret = fs_layout_write_part(w->fs, n, w->uid, w->gid, w->pending, w->buf, w->size, w->off);
	fs_unlock(w->handle_lock, FS_LOCK_FILE);
	return ret;
}

/*
 * The whole value, trailing blanks and newline dropped: "enabled", "1".  A
 * value longer than out, or holding a NUL or another control byte, is no
 * word: it is refused whole rather than read up to where it stops making
 * sense ("1\0junk" is not "1").
 */
static bool word(const char *buf, size_t size, char *out, size_t len)
{
	while (size && (buf[size - 1] == '\n' || buf[size - 1] == ' ' || buf[size - 1] == '\t'))
		size--;
	out[0] = '\0';
	if (size >= len)
		return false;
	for (size_t i = 0; i < size; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			return false;
	memcpy(out, buf, size);
	out[size] = '\0';
	return true;
}

static int write_mode(struct accelfs *fs, const struct fs_node *n, const char *w, char *why, size_t whylen)
{
	int declared = fs->mount.layouts ? accel_layouts_mode(fs->mount.layouts, n->dev->name) : -1;
	bool on = !strcmp(w, "enabled") || !strcmp(w, "1");

	if (!on && strcmp(w, "disabled") && strcmp(w, "0")) {
		snprintf(why, whylen, "mode: write 'enabled' or 'disabled'");
		return -EINVAL;
	}
	if (declared >= 0 && declared != on) {
		snprintf(why, whylen, "%s's layout declares 'mode %s': change the layout (%s/mig/layout), not the mode",
		         n->dev->name, declared ? "enabled" : "disabled", n->dev->name);
		return -EBUSY;
	}
	return accel_node_set_mode(fs->node, n->dev->name, on, why, whylen);
}

int fs_mig_setting_write(struct fs_write *wr, const struct fs_node *n)
{
	struct accelfs *fs = wr->fs;
	const char *buf = wr->buf;
	size_t size = wr->size;
	off_t off = wr->off;
	char w[32], why[ACCEL_TEXT_MAX] = "", key[64];
	const char *file = n->entry->name;
	int ret = 0;

	snprintf(key, sizeof(key), "%s/mig", n->dev->name);
	if (!may_write(fs, n->dev->name, wr->uid)) {
		snprintf(why, sizeof(why), "%s/mig/%s: only root and the device's delegate may write it", n->dev->name,
		         file);
		ret = -EPERM;
	} else if (off != 0) {
		snprintf(why, sizeof(why), "%s/mig/%s: write the whole of it at once, from the start", n->dev->name,
		         file);
		ret = -EINVAL;
	} else if (!fs->mount.layouts && strcmp(file, "mode")) {
		snprintf(why, sizeof(why), "%s/mig/%s: layouts are not kept on this mount", n->dev->name, file);
		ret = -ENODEV;
	} else if (!strcmp(file, "cordon")) {
		if (!word(buf, size, w, sizeof(w)) || (strcmp(w, "0") && strcmp(w, "1"))) {
			snprintf(why, sizeof(why), "cordon: write 1 (no new job lands on %s) or 0", n->dev->name);
			ret = -EINVAL;
		} else {
			ret = accel_layouts_set_cordon(fs->mount.layouts, n->dev->name, w[0] == '1', why, sizeof(why));
		}
	} else if (!word(buf, size, w, sizeof(w))) {
		snprintf(why, sizeof(why), "mode: write 'enabled' or 'disabled', nothing else");
		ret = -EINVAL;
	} else {
		ret = write_mode(fs, n, w, why, sizeof(why));
	}
	if (ret) {
		log_warn("%s/mig/%s: %s", n->dev->name, file, why);
		accel_node_set_last_error(fs->node, key, why);
		return ret;
	}
	accel_node_set_last_error(fs->node, key, "");
	return (int)size;
}

int fs_health_ack_write(struct fs_write *wr, const struct fs_node *n)
{
	char w[32], why[ACCEL_TEXT_MAX] = "", key[64];
	int ret;

	snprintf(key, sizeof(key), "%s/mig", n->dev->name);
	word(wr->buf, wr->size, w, sizeof(w));
	if (!may_write(wr->fs, n->dev->name, wr->uid)) {
		snprintf(why, sizeof(why), "%s/health: only root and the device's delegate may acknowledge it",
		         n->dev->name);
		ret = -EPERM;
	} else if (wr->off != 0) {
		snprintf(why, sizeof(why), "%s/health: write the whole of it at once, from the start", n->dev->name);
		ret = -EINVAL;
	} else if (strcmp(w, "ok") && strcmp(w, "clear")) {
		snprintf(
			why, sizeof(why),
			"%s/health: write ok (or clear) to acknowledge its failure once it is dealt with; nothing else",
			n->dev->name);
		ret = -EINVAL;
	} else {
		ret = accel_node_health_ack(wr->fs->node, n->dev->name, wr->uid, why, sizeof(why));
	}
	if (ret) {
		log_warn("%s", why);
		accel_node_set_last_error(wr->fs->node, key, why);
		return ret;
	}
	accel_node_set_last_error(wr->fs->node, key, "");
	return (int)wr->size;
}

/* ---- the mount's layouts ---------------------------------------------------- */

int fs_layouts_open(struct accelfs *fs, const char *state_dir, unsigned poll_ms, bool read_only,
                    void (*on_change)(void *ctx))
{
	struct accel_layouts_options o = {
		.state_dir = state_dir,
		.poll_ms = poll_ms,
		.held = fs_layout_held,
		.attach = fs->mount.attach,
		.held_ctx = fs->mount.attach,
		.on_change = on_change,
		.change_ctx = fs,
	};
	struct accel_layouts *ls = accel_layouts_open(fs->node, &o);

	if (!ls)
		return -ENOMEM;
	/* After reconciliation, before the mount serves and READY=1: what is declared is there when they come. */
	if (!read_only)
		accel_layouts_apply_all(ls);
	__atomic_store_n(&fs->mount.layouts, ls, __ATOMIC_RELEASE);
	return 0;
}

int fs_layouts_start(struct accelfs *fs)
{
	return fs->mount.layouts ? accel_layouts_start(fs->mount.layouts) : 0;
}

void fs_layouts_kick(struct accelfs *fs)
{
	struct accel_layouts *ls = __atomic_load_n(&fs->mount.layouts, __ATOMIC_ACQUIRE);

	if (ls)
		accel_layouts_kick(ls);
}

void fs_layouts_close(struct accelfs *fs)
{
	struct accel_layouts *ls = __atomic_exchange_n(&fs->mount.layouts, NULL, __ATOMIC_ACQ_REL);

	accel_layouts_close(ls);
}
