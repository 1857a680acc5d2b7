/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/common/sim_json.h"

int sim_store_lock(struct sim_ctx *ctx)
{
	/*
	 * flock belongs to the open file description, which a forked child
	 * shares with its parent: the child would take the lock its parent
	 * holds.  Each process opens the lock file itself.
	 */
	if (ctx->lock_fd >= 0 && ctx->lock_pid != getpid()) {
		close(ctx->lock_fd);
		ctx->lock_fd = -1;
	}
	if (ctx->lock_fd < 0) {
		ctx->lock_fd = open(ctx->paths.lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (ctx->lock_fd < 0)
			return -errno;
		ctx->lock_pid = getpid();
	}
	while (flock(ctx->lock_fd, LOCK_EX) != 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

void sim_store_unlock(struct sim_ctx *ctx)
{
	if (ctx->lock_fd >= 0)
		flock(ctx->lock_fd, LOCK_UN);
}

void sim_store_forget(struct sim_ctx *ctx)
{
	sim_state_free(&ctx->state);
	ctx->state_valid = false;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int sim_store_refresh(struct sim_ctx *ctx, char *err, size_t errlen)
{
	struct sim_state fresh;
	json_error_t jerr;
	struct stat st;
	json_t *root;
	int fd, ret;

	fd = open(ctx->paths.state, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", ctx->paths.state, strerror(errno));
		sim_store_forget(ctx);
		return ret;
	}
	if (fstat(fd, &st) != 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (ctx->state_valid && same_file(&st, &ctx->state_stat)) {
		close(fd);
		return 0;
	}
	root = json_loadfd(fd, 0, &jerr);
	close(fd);
	if (!root) {
		snprintf(err, errlen, "%s: %s (line %d)", ctx->paths.state, jerr.text, jerr.line);
		sim_store_forget(ctx);
		return -EINVAL;
	}
	ret = sim_state_from_json(root, ctx->vendor->dir, &fresh, err, errlen);
	json_decref(root);
	if (ret) {
		sim_store_forget(ctx);
		return ret;
	}
	sim_state_free(&ctx->state);
	ctx->state = fresh;
	ctx->state_stat = st;
	ctx->state_valid = true;
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) != 0)
		ret = -errno;
	close(fd);
	return ret;
}

int sim_store_save(struct sim_ctx *ctx, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 32];
	char *text;
	json_t *root;
	size_t len;
	int fd, ret = 0;

	ctx->state.generation++;
	root = sim_state_to_json(&ctx->state, ctx->vendor->dir);
	text = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
	json_decref(root);
	if (!text) {
		snprintf(err, errlen, "cannot serialize the state");
		ctx->state_valid = false;
		return -ENOMEM;
	}
	len = strlen(text);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", ctx->paths.state, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
		ret = errno ? -errno : -EIO;
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, ctx->paths.state) != 0) {
		ret = -errno;
		unlink(tmp);
		goto out;
	}
	fsync_dir(ctx->paths.root);
	if (stat(ctx->paths.state, &ctx->state_stat) != 0)
		ret = -errno;
out:
	free(text);
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s", ctx->paths.state, strerror(-ret));
		/* Keep the memory (callers still point into it); the next call rereads the file. */
		ctx->state_valid = false;
	}
	return ret;
}
