/* SPDX-License-Identifier: MIT */
#include "core/driver/proc_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int accel_proc_stat(const char *dir, char *state, unsigned long long *start)
{
	char path[PATH_MAX], buf[1024], *p;
	unsigned long long st = 0;
	char s = 0;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/stat", dir);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* The command may hold spaces and parentheses: the fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &s,
	                 &st) < 1)
		return -EINVAL;
	if (state)
		*state = s;
	if (start)
		*start = st;
	return 0;
}

/*
 * What a descriptor of /proc/<pid>/fd is open on: the magic link is followed
 * to the open file itself.  AT_STATX_DONT_SYNC: the attributes the kernel
 * has, never a request to the file's filesystem.  A descriptor open on this
 * daemon's own mount would otherwise send it a GETATTR from inside one of
 * its own request threads: a few readers at once, each waiting for a thread
 * the others hold, and the whole mount waits for good.
 */
static int stat_open_file(int dir, const char *name, struct stat *st)
{
	struct statx sx;

	if (statx(dir, name, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &sx))
		return -1;
	memset(st, 0, sizeof(*st));
	st->st_mode = sx.stx_mode;
	st->st_ino = sx.stx_ino;
	st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	st->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
	return 0;
}

int accel_proc_count_files(const char *proc_root, const char *pid, bool (*match)(void *ctx, const struct stat *st),
                           void *ctx, bool first_only)
{
	char path[PATH_MAX];
	struct dirent *de;
	int count = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s/fd", proc_root, pid);
	d = opendir(path);
	if (!d)
		return -1; /* gone, or exiting (its fd table is already detached) */
	while ((de = readdir(d)) && !(first_only && count)) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (!stat_open_file(dirfd(d), de->d_name, &st) && match(ctx, &st))
			count++;
	}
	closedir(d);
	return count;
}

struct one_file {
	dev_t dev;
	uint64_t ino;
};

static bool is_file(void *ctx, const struct stat *st)
{
	const struct one_file *f = ctx;

	return st->st_ino == f->ino && st->st_dev == f->dev;
}

bool accel_proc_has_file(pid_t pid, dev_t dev, uint64_t ino)
{
	struct one_file f = { dev, ino };
	char name[16];

	if (pid <= 0)
		return false;
	snprintf(name, sizeof(name), "%d", (int)pid);
	return accel_proc_count_files("/proc", name, is_file, &f, true) > 0;
}

bool accel_proc_same_process(pid_t a, pid_t b)
{
	char path[64];

	if (a == b)
		return true;
	if (a <= 0 || b <= 0)
		return false;
	/* Every thread of a process is listed under any of its threads' task/ */
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)a, (int)b);
	return access(path, F_OK) == 0;
}

void accel_proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t got;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	got = read(fd, buf, len - 1);
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

pid_t accel_proc_tgid(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = tid;
	FILE *f;

	if (tid <= 0)
		return tid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return tid;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int accel_path_dev(const char *path, dev_t *dev)
{
	struct statx sx;

	if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC, STATX_INO, &sx))
		return -errno;
	*dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	return 0;
}
