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
	ctx->flocked = true;
	return 0;
}

void sim_store_unlock(struct sim_ctx *ctx)
{
	if (ctx->flocked && ctx->lock_fd >= 0)
		flock(ctx->lock_fd, LOCK_UN);
	ctx->flocked = false;
}

bool sim_store_current(const struct sim_ctx *ctx)
{
	return ctx->state_valid && ctx->counters.map &&
	       sim_counters_generation(&ctx->counters) == ctx->state.generation;
}

void sim_store_forget(struct sim_ctx *ctx)
{
	sim_state_free(&ctx->state);
	ctx->state_valid = false;
}

/*
 * The whole file in one buffer: jansson's json_loadfd reads a descriptor one
 * byte per read(2), which made every reload cost tens of thousands of system
 * calls.  NUL-terminated; *len excludes the NUL.  0 or -errno.
 */
static int slurp(int fd, char **out, size_t *len)
{
	struct stat st;
	size_t cap, n = 0;
	char *buf;

	if (fstat(fd, &st) != 0)
		return -errno;
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t got;

		if (n + 1 == cap) {
			/* Grew since the fstat (it cannot under the flock, but a reader never trusts a size). */
			char *bigger = realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int ret = -errno;

			free(buf);
			return ret;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int sim_store_refresh(struct sim_ctx *ctx, char *err, size_t errlen)
{
	struct sim_state fresh;
	json_error_t jerr;
	json_t *root;
	char *text = NULL;
	size_t len = 0;
	int fd, ret;

	/*
	 * Every writer stores the generation it wrote in the shared counters
	 * file, under the flock we hold: equal to ours, the cache is the file.
	 * This is the common case and costs no system call at all.
	 */
	if (sim_store_current(ctx))
		return 0;
	fd = open(ctx->paths.state, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", ctx->paths.state, strerror(errno));
		sim_store_forget(ctx);
		return ret;
	}
	ret = slurp(fd, &text, &len);
	close(fd);
	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s", ctx->paths.state, strerror(-ret));
		sim_store_forget(ctx);
		return ret;
	}
	root = json_loadb(text, len, 0, &jerr);
	free(text);
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
	ctx->state_valid = true;
	/*
	 * The file is the truth: a counters file made after it (new, or started
	 * afresh) learns its generation here, so that the next call needs no
	 * reload.
	 */
	sim_counters_set_generation(&ctx->counters, ctx->state.generation);
	return 0;
}

/*
 * No fsync, of the file or of its directory: this is simulated hardware, and
 * a simulated host crash loses its instances anyway, as a real one does (the
 * product's own records, core/record.c, stay durable).  What a reader must
 * never see is a half-written file, and tmp + rename gives that without a
 * disk flush; each fsync cost milliseconds per change.
 */
int sim_store_save(struct sim_ctx *ctx, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 32];
	char *text;
	json_t *root;
	size_t len, done = 0;
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
	text[len++] = '\n'; /* json_dumps's NUL becomes the file's final newline */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", ctx->paths.state, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	while (done < len) {
		ssize_t put = write(fd, text + done, len - done);

		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0) {
			ret = put < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)put;
	}
	if (close(fd) != 0 && !ret)
		ret = -errno;
	if (ret) {
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, ctx->paths.state) != 0) {
		ret = -errno;
		unlink(tmp);
		goto out;
	}
	/* Only now is the new state the file's: tell every other process its cache is stale. */
	sim_counters_set_generation(&ctx->counters, ctx->state.generation);
out:
	free(text);
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s", ctx->paths.state, strerror(-ret));
		/* Keep the memory (callers still point into it); the next call rereads the file. */
		ctx->state_valid = false;
	}
	return ret;
}
