/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/common/sim_faults.h"
#include "sim/common/sim_state_json.h"

/*
 * The descriptor of <root>/locks for this process.  OFD locks belong to the
 * open file description, which a forked child shares with its parent: the
 * child would hold whatever its parent holds.  So each process opens the
 * file itself (closing the inherited copy drops nothing: the parent's
 * descriptor still refers to the description).
 */
static int lock_fd(struct sim_ctx *ctx)
{
	pid_t pid = getpid();
	int fd;

	if (__atomic_load_n(&ctx->lock_pid, __ATOMIC_ACQUIRE) == pid && ctx->lock_fd >= 0)
		return ctx->lock_fd;
	pthread_mutex_lock(&ctx->lock_fd_mutex);
	if (ctx->lock_fd >= 0 && ctx->lock_pid != pid) {
		close(ctx->lock_fd);
		ctx->lock_fd = -1;
	}
	if (ctx->lock_fd < 0) {
		ctx->lock_fd = open(ctx->paths.lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (ctx->lock_fd >= 0)
			__atomic_store_n(&ctx->lock_pid, pid, __ATOMIC_RELEASE);
	}
	fd = ctx->lock_fd >= 0 ? ctx->lock_fd : -errno;
	pthread_mutex_unlock(&ctx->lock_fd_mutex);
	return fd;
}

static int byte_lock(struct sim_ctx *ctx, off_t byte, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };
	int fd = lock_fd(ctx);

	if (fd < 0)
		return fd;
	while (fcntl(fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl) != 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int sim_store_lock_node(struct sim_ctx *ctx)
{
	return byte_lock(ctx, 0, F_WRLCK);
}

void sim_store_unlock_node(struct sim_ctx *ctx)
{
	byte_lock(ctx, 0, F_UNLCK);
}

int sim_store_lock_card(struct sim_ctx *ctx, unsigned ordinal)
{
	return byte_lock(ctx, 1 + (off_t)ordinal, F_WRLCK);
}

void sim_store_unlock_card(struct sim_ctx *ctx, unsigned ordinal)
{
	byte_lock(ctx, 1 + (off_t)ordinal, F_UNLCK);
}

/*
 * The whole file in one buffer: jansson's json_loadfd reads a descriptor one
 * byte per read(2).  NUL-terminated; *len excludes the NUL.  0 or -errno.
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
			/* Grew since the fstat (it cannot under the lock, but a reader never trusts a size). */
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

int sim_store_load_json(const char *path, json_t **out, char *err, size_t errlen)
{
	json_error_t jerr;
	char *text = NULL;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-ret));
		return ret;
	}
	ret = slurp(fd, &text, &len);
	close(fd);
	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	*out = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!*out) {
		snprintf(err, errlen, "%s: %s (line %d)", path, jerr.text, jerr.line);
		return -EINVAL;
	}
	return 0;
}

/*
 * A state file that fits is exactly one page: its JSON, then spaces, then a
 * newline (JSON allows trailing whitespace).  Such a file is replaced by one
 * pwrite of one page at offset 0, in place.
 */
#define STATE_PAGE 4096

static int put_all(int fd, const char *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t put = pwrite(fd, buf + done, len - done, off + (off_t)done);

		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return put < 0 ? -errno : -EIO;
		done += (size_t)put;
	}
	return 0;
}

/* The one-page file at path, overwritten in place; -EAGAIN when there is none to overwrite. */
static int overwrite_page(const char *path, const char *page)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return errno == ENOENT ? -EAGAIN : -errno;
	ret = fstat(fd, &st) != 0 ? -errno : st.st_size != STATE_PAGE ? -EAGAIN : put_all(fd, page, STATE_PAGE, 0);
	if (close(fd) != 0 && !ret)
		ret = -errno;
	return ret;
}

static int replace_by_rename(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX + 32];
	int fd, ret;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = put_all(fd, text, len, 0);
	if (close(fd) != 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) != 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

/*
 * Replace a state file's content.  Only the simulators read these files,
 * and only under the lock the writer holds, so what a write must guarantee
 * is that a writer killed half-way leaves the old state or the new one,
 * never a mix:
 *
 *   - a state that fits one page (almost every card: a card carved full
 *     with one compute instance per GPU instance is 2 KiB) is written over
 *     the file's one page with one pwrite: the kernel copies a page whole
 *     or not at all (a fatal signal is seen only between pages);
 *   - a longer one, or a file that is not one page yet, goes to
 *     <path>.tmp.<pid> and is renamed over it.
 *
 * Why not always tmp + rename: ext4 starts writing a file's data out when
 * a rename replaces it or a truncation empties it (auto_da_alloc), which
 * cost a change some 150-400 us; an overwrite in place costs 2.
 *
 * No fsync either, of the file or of its directory: this is simulated
 * hardware, and a simulated host crash loses its instances anyway, as a
 * real one does (the product's own records, core/state/record.c, stay durable).
 * The tmp name carries the pid: threads of one process never write one
 * file at once (its card's mutex, or the node's, is held).
 */
static int write_json(const char *path, json_t *root, char *err, size_t errlen)
{
	char *text = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
	char *page = NULL;
	size_t len;
	int ret;

	if (!text) {
		snprintf(err, errlen, "cannot serialize %s", path);
		return -ENOMEM;
	}
	len = strlen(text);
	if (len + 1 <= STATE_PAGE && (page = malloc(STATE_PAGE))) {
		memcpy(page, text, len);
		memset(page + len, ' ', STATE_PAGE - len - 1);
		page[STATE_PAGE - 1] = '\n';
		ret = overwrite_page(path, page);
		if (ret == -EAGAIN)
			ret = replace_by_rename(path, page, STATE_PAGE);
	} else {
		text[len++] = '\n'; /* json_dumps's NUL becomes the file's final newline */
		ret = replace_by_rename(path, text, len);
	}
	free(page);
	free(text);
	if (ret)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
	return ret;
}

int sim_store_node_refresh(struct sim_ctx *ctx, char *err, size_t errlen)
{
	struct sim_node fresh;
	json_t *root = NULL;
	char detail[512];
	int ret;

	if (ctx->node_valid && sim_counters_node_generation(&ctx->counters) == ctx->node.generation)
		return 0;
	ret = sim_store_load_json(ctx->paths.node, &root, err, errlen);
	if (!ret) {
		ret = sim_json_read_node(root, ctx->vendor->dir, &fresh, detail, sizeof(detail));
		if (ret)
			snprintf(err, errlen, "%s: %s", ctx->paths.node, detail);
		json_decref(root);
	}
	if (ret) {
		ctx->node_valid = false;
		return ret;
	}
	ctx->node = fresh;
	ctx->node_valid = true;
	/*
	 * The file is the truth, and we hold the node's lock: a counters file
	 * made after it (new, or started afresh) learns its generation and its
	 * fault mask here.
	 */
	sim_counters_set_node_generation(&ctx->counters, ctx->node.generation);
	sim_counters_set_fault_mask(&ctx->counters, sim_faults_mask(&ctx->node));
	return 0;
}

int sim_store_node_save(struct sim_ctx *ctx, char *err, size_t errlen)
{
	json_t *root;
	int ret;

	ctx->node.generation++;
	root = sim_json_node(&ctx->node, ctx->vendor->dir);
	ret = write_json(ctx->paths.node, root, err, errlen);
	json_decref(root);
	if (ret) {
		ctx->node_valid = false;
		return ret;
	}
	/* Only now is the new node the file's: tell every other process. */
	sim_counters_set_fault_mask(&ctx->counters, sim_faults_mask(&ctx->node));
	sim_counters_set_node_generation(&ctx->counters, ctx->node.generation);
	return 0;
}

/* A card's file into d: its fixed part (hw) or its changing part and generation. */
static int load_card_file(struct sim_ctx *ctx, unsigned ordinal, bool hw, struct sim_device *d, uint64_t *generation,
                          char *err, size_t errlen)
{
	char path[PATH_MAX], detail[512];
	json_t *root = NULL;
	int ret;

	if (sim_card_path(&ctx->paths, ordinal, hw, path, sizeof(path)) != 0) {
		snprintf(err, errlen, "the path of card %u is too long", ordinal);
		return -ENAMETOOLONG;
	}
	ret = sim_store_load_json(path, &root, err, errlen);
	if (ret)
		return ret;
	if (hw)
		ret = sim_json_read_card_hw(root, ctx->vendor->dir, ordinal, d, detail, sizeof(detail));
	else
		ret = sim_json_read_card(root, ctx->vendor->dir, ordinal, d, generation, detail, sizeof(detail));
	json_decref(root);
	if (ret)
		snprintf(err, errlen, "%s: %s", path, detail);
	return ret;
}

int sim_store_card_refresh(struct sim_ctx *ctx, struct sim_card *card, char *err, size_t errlen)
{
	unsigned ordinal = (unsigned)(card - ctx->cards);
	struct sim_device *fresh;
	uint64_t generation = 0;
	int ret;

	if (!card->loaded) {
		sim_device_free(&card->dev);
		memset(&card->dev, 0, sizeof(card->dev));
		ret = load_card_file(ctx, ordinal, true, &card->dev, NULL, err, errlen);
		if (ret) {
			sim_device_free(&card->dev);
			return ret;
		}
		card->loaded = true;
		card->valid = false;
	}
	if (card->valid && sim_counters_card_generation(&ctx->counters, ordinal) == card->generation)
		return 0;
	/* Parsed aside, so that a bad file leaves the copy as it was (marked stale). */
	fresh = malloc(sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	*fresh = card->dev;
	ret = load_card_file(ctx, ordinal, false, fresh, &generation, err, errlen);
	if (!ret) {
		card->dev = *fresh; /* the profile tables are the same pointers */
		card->generation = generation;
		card->valid = true;
		/* The file is the truth, and we hold the card's lock (see sim_store_node_refresh). */
		sim_counters_set_card_generation(&ctx->counters, ordinal, generation);
	} else {
		card->valid = false;
	}
	free(fresh);
	return ret;
}

static int write_card(struct sim_ctx *ctx, const struct sim_device *d, bool hw, uint64_t generation, char *err,
                      size_t errlen)
{
	char path[PATH_MAX];
	json_t *root;
	int ret;

	if (sim_card_path(&ctx->paths, d->ordinal, hw, path, sizeof(path)) != 0) {
		snprintf(err, errlen, "the path of card %u is too long", d->ordinal);
		return -ENAMETOOLONG;
	}
	root = hw ? sim_json_card_hw(d, ctx->vendor->dir) : sim_json_card(d, generation, ctx->vendor->dir);
	ret = write_json(path, root, err, errlen);
	json_decref(root);
	return ret;
}

int sim_store_card_save(struct sim_ctx *ctx, struct sim_card *card, char *err, size_t errlen)
{
	int ret = write_card(ctx, &card->dev, false, card->generation + 1, err, errlen);

	if (ret) {
		/* Keep the memory (callers still point into it); the next call rereads the file. */
		card->valid = false;
		return ret;
	}
	card->generation++;
	/* Only now is the new state the file's: tell every other process its copy is stale. */
	sim_counters_set_card_generation(&ctx->counters, card->dev.ordinal, card->generation);
	return 0;
}

int sim_store_write_all(struct sim_ctx *ctx, const struct sim_state *s, char *err, size_t errlen)
{
	struct sim_node node = s->node;
	json_t *root;
	int ret = 0;

	if (accel_mkdirs(ctx->paths.cards, 0755) != 0) {
		snprintf(err, errlen, "cannot create %s", ctx->paths.cards);
		return -EIO;
	}
	/*
	 * Generations continue from what the counters file last published, so
	 * that no process could mistake a new file for one it has read.
	 */
	for (unsigned i = 0; i < s->n_devices && !ret; i++) {
		uint64_t generation = sim_counters_card_generation(&ctx->counters, i) + 1;

		ret = write_card(ctx, &s->devices[i], true, 0, err, errlen);
		if (!ret)
			ret = write_card(ctx, &s->devices[i], false, generation, err, errlen);
		if (!ret)
			sim_counters_set_card_generation(&ctx->counters, i, generation);
	}
	if (ret)
		return ret;
	node.n_devices = s->n_devices;
	node.generation = sim_counters_node_generation(&ctx->counters) + 1;
	root = sim_json_node(&node, ctx->vendor->dir);
	ret = write_json(ctx->paths.node, root, err, errlen);
	json_decref(root);
	return ret;
}
