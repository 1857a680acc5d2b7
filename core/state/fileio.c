/* SPDX-License-Identifier: MIT */
#include "core/state/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int accel_mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

static int fsync_dir_of(const char *path)
{
	char buf[PATH_MAX];
	int fd, ret = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	fd = open(dirname(buf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

static int replace_file(const char *path, const void *data, size_t len, mode_t mode, bool durable)
{
	char tmp[PATH_MAX];
	const char *p = data;
	int fd, ret = 0;

	/*
	 * A temporary name of this write's own: two threads replacing one file
	 * at once must never write into one temporary file (the survivor would
	 * be a blend of both), so the name carries the thread and a count, and
	 * O_EXCL refuses one left by a crash rather than share it.
	 */
	static unsigned long serial;
	unsigned long n = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%d.%lu", path, (int)getpid(), (int)gettid(), n) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (!ret && durable && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	return durable ? fsync_dir_of(path) : 0;
}

int accel_durable_write(const char *path, const void *data, size_t len, mode_t mode)
{
	return replace_file(path, data, len, mode, true);
}

int accel_atomic_write(const char *path, const void *data, size_t len, mode_t mode)
{
	return replace_file(path, data, len, mode, false);
}

int accel_durable_unlink(const char *path)
{
	if (unlink(path))
		return -errno;
	(void)fsync_dir_of(path);
	return 0;
}
