/* SPDX-License-Identifier: MIT */
#include "fs/inode.h"
#include "fs/lock_order.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>

#define BUCKETS 1024

struct fs_inodes {
	pthread_mutex_t lock;
	uint64_t next_ino;
	struct fs_inode *by_ino[BUCKETS];
	struct fs_inode *by_path[BUCKETS];
	struct fs_inode *by_top[BUCKETS];
	struct fs_inode *by_dir[BUCKETS];
	struct fs_inode root;
};

/* The hash of a path's first component ("ppu3" of "ppu3/mig/..."). */
static size_t hash_top(const char *path)
{
	size_t h = 5381;

	while (*path && *path != '/')
		h = h * 33 + (unsigned char)*path++;
	return h % BUCKETS;
}

static bool under_top(const char *path, const char *top)
{
	size_t n = strlen(top);

	return !strncmp(path, top, n) && (path[n] == '\0' || path[n] == '/');
}

/* The length of a path's first three components ("mig/p/job1" of "mig/p/job1/status"), 0 when it has fewer. */
static size_t dir_len(const char *path)
{
	unsigned components = 1;
	const char *p;

	if (!*path)
		return 0;
	for (p = path; *p; p++)
		if (*p == '/' && ++components == 4)
			break;
	return components >= 3 ? (size_t)(p - path) : 0;
}

static size_t hash_len(const char *s, size_t n)
{
	size_t h = 5381;

	while (n--)
		h = h * 33 + (unsigned char)*s++;
	return h % BUCKETS;
}

static size_t hash_str(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % BUCKETS;
}

static size_t hash_ino(uint64_t ino)
{
	return (size_t)(ino * 0x9E3779B97F4A7C15ULL >> 40) % BUCKETS;
}

struct fs_inodes *fs_inodes_new(void)
{
	struct fs_inodes *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->next_ino = FUSE_ROOT_ID + 1;
	t->root.ino = FUSE_ROOT_ID;
	t->root.path = strdup("");
	t->root.name = t->root.path;
	t->root.nlookup = 1; /* the root is never forgotten */
	if (!t->root.path) {
		free(t);
		return NULL;
	}
	return t;
}

void fs_inodes_free(struct fs_inodes *t)
{
	if (!t)
		return;
	for (size_t b = 0; b < BUCKETS; b++) {
		struct fs_inode *in = t->by_ino[b];
		while (in) {
			struct fs_inode *next = in->next_by_ino;
			free(in->path);
			free(in->ident);
			free(in->memo);
			free(in);
			in = next;
		}
	}
	free(t->root.path);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Called with the lock held. */
static struct fs_inode *find_ino(struct fs_inodes *t, uint64_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &t->root;
	for (struct fs_inode *in = t->by_ino[hash_ino(ino)]; in; in = in->next_by_ino)
		if (in->ino == ino)
			return in;
	return NULL;
}

static struct fs_inode *find_path(struct fs_inodes *t, const char *path)
{
	if (!*path)
		return &t->root;
	for (struct fs_inode *in = t->by_path[hash_str(path)]; in; in = in->next_by_path)
		if (!strcmp(in->path, path))
			return in;
	return NULL;
}

static bool same_ident(const struct fs_inode *in, const char *ident)
{
	return !strcmp(in->ident ? in->ident : "", ident ? ident : "");
}

/* Called with the lock held: take in out of the path, top and dir chains (a live inode is in each it fits). */
static void unchain(struct fs_inodes *t, struct fs_inode *in)
{
	struct fs_inode **pp;

	for (pp = &t->by_path[hash_str(in->path)]; *pp; pp = &(*pp)->next_by_path)
		if (*pp == in) {
			*pp = in->next_by_path;
			break;
		}
	for (pp = &t->by_top[hash_top(in->path)]; *pp; pp = &(*pp)->next_by_top)
		if (*pp == in) {
			*pp = in->next_by_top;
			break;
		}
	if (dir_len(in->path))
		for (pp = &t->by_dir[hash_len(in->path, dir_len(in->path))]; *pp; pp = &(*pp)->next_by_dir)
			if (*pp == in) {
				*pp = in->next_by_dir;
				break;
			}
}

/* Called with the lock held. */
static void kill(struct fs_inodes *t, struct fs_inode *in)
{
	if (in == &t->root || in->dead)
		return;
	unchain(t, in);
	in->dead = true;
}

uint64_t fs_inodes_lookup(struct fs_inodes *t, uint64_t parent, const char *name, const char *ident)
{
	struct fs_inode *p, *in;
	uint64_t ino = 0;
	char *path;

	fs_lock(&t->lock, FS_LOCK_LEAF);
	p = find_ino(t, parent);
	if (!p || p->dead)
		goto out;
	if (asprintf(&path, "%s%s%s", p->path, *p->path ? "/" : "", name) < 0)
		goto out;
	in = find_path(t, path);
	if (in && !same_ident(in, ident)) {
		kill(t, in); /* the path names something else now: never hand its number to that */
		in = NULL;
	}
	if (in) {
		free(path);
	} else {
		size_t hp, hi;

		in = calloc(1, sizeof(*in));
		if (!in || (ident && *ident && !(in->ident = strdup(ident)))) {
			free(in);
			free(path);
			goto out;
		}
		in->ino = t->next_ino++;
		in->parent = parent;
		in->path = path;
		in->name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		hp = hash_str(path);
		hi = hash_ino(in->ino);
		in->next_by_path = t->by_path[hp];
		t->by_path[hp] = in;
		in->next_by_ino = t->by_ino[hi];
		t->by_ino[hi] = in;
		in->next_by_top = t->by_top[hash_top(path)];
		t->by_top[hash_top(path)] = in;
		if (dir_len(path)) {
			size_t hd = hash_len(path, dir_len(path));
			in->next_by_dir = t->by_dir[hd];
			t->by_dir[hd] = in;
		}
	}
	in->nlookup++;
	ino = in->ino;
out:
	fs_unlock(&t->lock, FS_LOCK_LEAF);
	return ino;
}

void fs_inodes_forget(struct fs_inodes *t, uint64_t ino, uint64_t n)
{
	struct fs_inode *in, **pp;

	if (ino == FUSE_ROOT_ID)
		return;
	fs_lock(&t->lock, FS_LOCK_LEAF);
	in = find_ino(t, ino);
	if (!in)
		goto out;
	in->nlookup = in->nlookup > n ? in->nlookup - n : 0;
	if (in->nlookup)
		goto out;
	for (pp = &t->by_ino[hash_ino(ino)]; *pp; pp = &(*pp)->next_by_ino)
		if (*pp == in) {
			*pp = in->next_by_ino;
			break;
		}
	if (!in->dead)
		unchain(t, in);
	free(in->path);
	free(in->ident);
	free(in->memo);
	free(in);
out:
	fs_unlock(&t->lock, FS_LOCK_LEAF);
}

int fs_inodes_get(struct fs_inodes *t, uint64_t ino, char *buf, size_t len, char *ident, size_t identlen)
{
	struct fs_inode *in;
	int ret = 0;

	fs_lock(&t->lock, FS_LOCK_LEAF);
	in = find_ino(t, ino);
	if (!in)
		ret = -ESTALE;
	else if (in->dead)
		ret = -ENOENT;
	else if (strlen(in->path) >= len || (ident && strlen(in->ident ? in->ident : "") >= identlen))
		ret = -ENAMETOOLONG;
	if (!ret) {
		memcpy(buf, in->path, strlen(in->path) + 1);
		if (ident)
			snprintf(ident, identlen, "%s", in->ident ? in->ident : "");
	}
	fs_unlock(&t->lock, FS_LOCK_LEAF);
	return ret;
}

int fs_inodes_recall(struct fs_inodes *t, uint64_t ino, uint64_t gen, char *buf, size_t len, char *ident,
                     size_t identlen, void *memo, size_t size)
{
	struct fs_inode *in;
	const char *id;
	size_t plen, ilen;
	int ret = 0;

	fs_lock(&t->lock, FS_LOCK_LEAF);
	in = find_ino(t, ino);
	if (!in)
		ret = -ESTALE;
	else if (in->dead)
		ret = -ENOENT;
	else if ((plen = strlen(in->path)) >= len)
		ret = -ENAMETOOLONG;
	if (!ret) {
		memcpy(buf, in->path, plen + 1);
		id = in->ident ? in->ident : "";
		if (gen && in->memo && in->memo_gen == gen) {
			memcpy(memo, in->memo, size);
			ret = 1;
		} else if ((ilen = strlen(id)) >= identlen) {
			ret = -ENAMETOOLONG;
		} else {
			memcpy(ident, id, ilen + 1);
		}
	}
	fs_unlock(&t->lock, FS_LOCK_LEAF);
	return ret;
}

void fs_inodes_remember(struct fs_inodes *t, uint64_t ino, uint64_t gen, const void *memo, size_t size)
{
	struct fs_inode *in;

	if (!gen)
		return;
	fs_lock(&t->lock, FS_LOCK_LEAF);
	in = find_ino(t, ino);
	if (in && !in->dead && in != &t->root) {
		if (!in->memo)
			in->memo = malloc(size); /* out of memory: nothing remembered, resolved again next time */
		if (in->memo) {
			memcpy(in->memo, memo, size);
			in->memo_gen = gen;
		}
	}
	fs_unlock(&t->lock, FS_LOCK_LEAF);
}

bool fs_inodes_path(struct fs_inodes *t, uint64_t ino, char *buf, size_t len)
{
	return fs_inodes_get(t, ino, buf, len, NULL, 0) == 0;
}

void fs_inodes_kill(struct fs_inodes *t, uint64_t ino)
{
	struct fs_inode *in;

	fs_lock(&t->lock, FS_LOCK_LEAF);
	in = find_ino(t, ino);
	if (in)
		kill(t, in);
	fs_unlock(&t->lock, FS_LOCK_LEAF);
}

uint64_t fs_inodes_ino(struct fs_inodes *t, const char *path, uint64_t *parent)
{
	struct fs_inode *in;
	uint64_t ino = 0;

	fs_lock(&t->lock, FS_LOCK_LEAF);
	in = *path ? find_path(t, path) : NULL;
	if (in) {
		ino = in->ino;
		*parent = in->parent;
	}
	fs_unlock(&t->lock, FS_LOCK_LEAF);
	return ino;
}

void fs_inodes_each(struct fs_inodes *t, void (*fn)(void *ctx, const struct fs_inode *in), void *ctx)
{
	fs_lock(&t->lock, FS_LOCK_LEAF);
	for (size_t b = 0; b < BUCKETS; b++)
		for (struct fs_inode *in = t->by_ino[b]; in; in = in->next_by_ino)
			if (!in->dead)
				fn(ctx, in);
	fs_unlock(&t->lock, FS_LOCK_LEAF);
}

void fs_inodes_each_under(struct fs_inodes *t, const char *top, void (*fn)(void *ctx, const struct fs_inode *in),
                          void *ctx)
{
	fs_lock(&t->lock, FS_LOCK_LEAF);
	for (struct fs_inode *in = t->by_top[hash_top(top)]; in; in = in->next_by_top)
		if (under_top(in->path, top))
			fn(ctx, in);
	fs_unlock(&t->lock, FS_LOCK_LEAF);
}

void fs_inodes_each_below(struct fs_inodes *t, const char *dir, void (*fn)(void *ctx, const struct fs_inode *in),
                          void *ctx)
{
	size_t n = strlen(dir);

	if (dir_len(dir) != n)
		return;
	fs_lock(&t->lock, FS_LOCK_LEAF);
	for (struct fs_inode *in = t->by_dir[hash_len(dir, n)]; in; in = in->next_by_dir)
		if (!strncmp(in->path, dir, n) && (in->path[n] == '\0' || in->path[n] == '/'))
			fn(ctx, in);
	fs_unlock(&t->lock, FS_LOCK_LEAF);
}
