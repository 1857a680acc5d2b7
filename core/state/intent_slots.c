/* SPDX-License-Identifier: MIT */
#include "core/state/intent_slots.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/state/fileio.h"

#define HEADER 21 /* "%016llx %03u\n" */
#define BODY_MAX (ACCEL_SLOT_BYTES - HEADER)
#define FILE_MAX (ACCEL_SLOTS_MAX * ACCEL_SLOT_BYTES)
/* The file as first made: one page of free slots, so that the first intents overwrite blocks already there. */
#define FIRST_SLOTS 8

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The body of a whole slot (key, '\n', text) into body, NUL-terminated: false for a free or torn one. */
static bool slot_body(const char *slot, char body[BODY_MAX + 1])
{
	char head[HEADER + 1], *end;
	unsigned long long hash;
	unsigned long len;

	if (!slot[0])
		return false;
	memcpy(head, slot, HEADER);
	head[HEADER] = '\0';
	if (head[16] != ' ' || head[20] != '\n')
		return false;
	head[16] = head[20] = '\0';
	hash = strtoull(head, &end, 16);
	if (*end)
		return false;
	len = strtoul(head + 17, &end, 10);
	if (*end || len > BODY_MAX || !memchr(slot + HEADER, '\n', len))
		return false;
	if (fnv1a(slot + HEADER, len) != hash || memchr(slot + HEADER, '\0', len))
		return false;
	memcpy(body, slot + HEADER, len);
	body[len] = '\0';
	return true;
}

/* Does the whole slot hold key? */
static bool slot_holds(const char *slot, const char *key)
{
	char body[BODY_MAX + 1];
	size_t n = strlen(key);

	return slot_body(slot, body) && !strncmp(body, key, n) && body[n] == '\n';
}

/* The file's slots into buf (FILE_MAX bytes, the rest zeroed: free): 0 or -errno. */
static int read_slots(int fd, char *buf)
{
	size_t got = 0;

	memset(buf, 0, FILE_MAX);
	while (got < FILE_MAX) {
		ssize_t n = pread(fd, buf + got, FILE_MAX - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return 0;
}

static int write_slot(int fd, size_t i, const char *slot, bool durable)
{
	ssize_t n;

	do
		n = pwrite(fd, slot, ACCEL_SLOT_BYTES, (off_t)(i * ACCEL_SLOT_BYTES));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != ACCEL_SLOT_BYTES)
		return -EIO;
	/* Data only: the file's name and its first slots are durable since it was made; a grown size is data here. */
	return durable && fdatasync(fd) ? -errno : 0;
}

static int open_slots(const char *path, bool make)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && make) {
		char zeros[FIRST_SLOTS * ACCEL_SLOT_BYTES] = { 0 };
		int ret = accel_durable_write(path, zeros, sizeof(zeros), 0600);
		if (ret)
			return ret;
		fd = open(path, O_RDWR | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

int accel_slots_put(const char *path, const char *key, const char *text)
{
	char slot[ACCEL_SLOT_BYTES], *buf;
	size_t klen = strlen(key), tlen = strlen(text), i;
	int fd, ret;

	if (klen + 1 + tlen > BODY_MAX || memchr(key, '\n', klen))
		return -ENOSPC;
	buf = malloc(FILE_MAX);
	if (!buf)
		return -ENOMEM;
	fd = open_slots(path, true);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	ret = read_slots(fd, buf);
	for (i = 0; !ret && i < ACCEL_SLOTS_MAX; i++) {
		char body[BODY_MAX + 1];
		if (!slot_body(buf + i * ACCEL_SLOT_BYTES, body))
			break; /* free, or torn by a crash: never was */
	}
	if (!ret && i == ACCEL_SLOTS_MAX)
		ret = -ENOSPC;
	if (!ret) {
		char head[32];
		memset(slot, 0, sizeof(slot));
		memcpy(slot + HEADER, key, klen);
		slot[HEADER + klen] = '\n';
		memcpy(slot + HEADER + klen + 1, text, tlen);
		if (snprintf(head, sizeof(head), "%016llx %03u\n",
		             (unsigned long long)fnv1a(slot + HEADER, klen + 1 + tlen),
		             (unsigned)(klen + 1 + tlen)) != HEADER)
			ret = -EINVAL;
		memcpy(slot, head, HEADER);
		if (!ret)
			ret = write_slot(fd, i, slot, false);
	}
	close(fd);
	free(buf);
	return ret;
}

int accel_slots_clear(const char *path, const char *key, bool durable)
{
	char zeros[ACCEL_SLOT_BYTES] = { 0 }, *buf = malloc(FILE_MAX);
	int fd, ret;
	size_t i;

	if (!buf)
		return -ENOMEM;
	fd = open_slots(path, false);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	ret = read_slots(fd, buf);
	for (i = 0; !ret && i < ACCEL_SLOTS_MAX; i++)
		if (slot_holds(buf + i * ACCEL_SLOT_BYTES, key))
			break;
	if (!ret)
		ret = i < ACCEL_SLOTS_MAX ? write_slot(fd, i, zeros, durable) : -ENOENT;
	close(fd);
	free(buf);
	return ret;
}

int accel_slots_each(const char *path, int (*each)(void *ctx, const char *key, const char *text), void *ctx)
{
	char body[BODY_MAX + 1], *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	buf = malloc(FILE_MAX);
	ret = buf ? read_slots(fd, buf) : -ENOMEM;
	close(fd);
	for (size_t i = 0; !ret && i < ACCEL_SLOTS_MAX; i++) {
		char *nl;
		if (!slot_body(buf + i * ACCEL_SLOT_BYTES, body))
			continue;
		nl = strchr(body, '\n');
		*nl = '\0';
		ret = each(ctx, body, nl + 1);
	}
	free(buf);
	return ret;
}
