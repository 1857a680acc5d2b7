/* SPDX-License-Identifier: MIT */
#include "barswap/fd_probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

bool accel_proc_has_file(pid_t pid, dev_t dev, uint64_t ino)
{
	char path[64];
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return false; /* gone, or exiting (its fd table is already detached) */
	while (!found && (de = readdir(d))) {
		struct statx sx;
		if (de->d_name[0] == '.')
			continue;
		/* Follows the magic link to the open file itself; DONT_SYNC: cached attributes only. */
		if (statx(dirfd(d), de->d_name, AT_STATX_DONT_SYNC, STATX_INO, &sx))
			continue;
		found = sx.stx_ino == ino && makedev(sx.stx_dev_major, sx.stx_dev_minor) == dev;
	}
	closedir(d);
	return found;
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
