/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_fs.h"

#include "core/state/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int sim_path_join(char *buf, size_t len, const char *dir, const char *rel)
{
	int n = snprintf(buf, len, "%s/%s", dir, rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int sim_paths_init(struct sim_paths *p, const char *sim_root, const char *vendor_dir)
{
	if (sim_path_join(p->root, sizeof(p->root), sim_root, vendor_dir) ||
	    sim_path_join(p->dev, sizeof(p->dev), p->root, "dev") ||
	    sim_path_join(p->proc, sizeof(p->proc), p->root, "proc") ||
	    sim_path_join(p->kmsg, sizeof(p->kmsg), p->root, "kmsg") ||
	    sim_path_join(p->node, sizeof(p->node), p->root, "node.json") ||
	    sim_path_join(p->cards, sizeof(p->cards), p->root, "cards") ||
	    sim_path_join(p->lock, sizeof(p->lock), p->root, "locks") ||
	    sim_path_join(p->counters, sizeof(p->counters), p->root, "counters") ||
	    sim_path_join(p->health, sizeof(p->health), p->root, "health") ||
	    sim_path_join(p->health_wake, sizeof(p->health_wake), p->root, "health.wake") ||
	    sim_path_join(p->legacy_state, sizeof(p->legacy_state), p->root, "state.json"))
		return -ENAMETOOLONG;
	return 0;
}

int sim_card_path(const struct sim_paths *p, unsigned ordinal, bool hw, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%u%s", p->cards, ordinal, hw ? ".hw.json" : ".json");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * mkdir -p from the bottom up: the directory a record goes in is usually
 * the only one missing (a GPU instance's), so one mkdir, where walking
 * down from the root tried every component of a ten-deep path.
 */
static int mkdirs_up(char *dir)
{
	char *slash;
	int ret;

	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return 0;
	slash = strrchr(dir, '/');
	if (errno != ENOENT || !slash || slash == dir)
		return -errno;
	*slash = '\0';
	ret = mkdirs_up(dir);
	*slash = '/';
	if (!ret && mkdir(dir, 0755) != 0 && errno != EEXIST)
		ret = -errno;
	return ret;
}

static int mkdirs_parent(const char *path)
{
	char buf[PATH_MAX];
	char *slash;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	return mkdirs_up(buf);
}

/*
 * The parent directories are made only when an operation finds them
 * missing: a carve makes a record and a node in directories that mostly
 * exist already, and walking every component with mkdir first cost about
 * ten system calls per change.
 */
int sim_make_chr(const char *path, mode_t perm, unsigned major, unsigned minor)
{
	dev_t want = makedev(major, minor);
	struct stat st;
	int ret;

	if (lstat(path, &st) == 0) {
		if (S_ISCHR(st.st_mode) && st.st_rdev == want) {
			if ((st.st_mode & 07777) != perm && chmod(path, perm) != 0)
				return -errno;
			return 0;
		}
		if (unlink(path) != 0)
			return -errno;
	}
	if (mknod(path, S_IFCHR | perm, want) != 0) {
		if (errno != ENOENT)
			return -errno;
		ret = mkdirs_parent(path);
		if (ret)
			return ret;
		if (mknod(path, S_IFCHR | perm, want) != 0)
			return -errno;
	}
	/* mknod honours the umask; the record's mode is what a reader expects. */
	if (chmod(path, perm) != 0)
		return -errno;
	return 0;
}

int sim_write_text(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, ret;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0 && errno == ENOENT) {
		ret = mkdirs_parent(path);
		if (ret)
			return ret;
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	}
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len) {
		ret = errno ? -errno : -EIO;
		close(fd);
		unlink(tmp);
		return ret;
	}
	close(fd);
	if (rename(tmp, path) != 0) {
		ret = -errno;
		unlink(tmp);
		return ret;
	}
	return 0;
}

int sim_remove_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int ret = 0;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char child[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (sim_path_join(child, sizeof(child), path, de->d_name) == 0) {
			int r = sim_remove_tree(child);
			if (r && !ret)
				ret = r;
		}
	}
	closedir(d);
	if (rmdir(path) != 0 && errno != ENOENT && !ret)
		ret = -errno;
	return ret;
}

int sim_verbose(void)
{
	const char *v = getenv("ACCELFS_SIM_VERBOSE");

	return v && *v && strcmp(v, "0") != 0;
}

void sim_kmsg(const char *kmsg_path, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n, fd;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = '\0';
	if (sim_verbose())
		fputs(line, stderr);
	fd = open(kmsg_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		errno = 0; /* nowhere left to report it */
	close(fd);
}
