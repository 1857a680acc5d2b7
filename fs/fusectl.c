/* SPDX-License-Identifier: MIT */
#include "fs/fusectl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* fusectl mounted, or mounted now (root only; a second mount of it is harmless but avoided). */
static void ensure_mounted(void)
{
	struct stat dir, parent;

	if (stat(FS_FUSECTL_DIR, &dir) || stat(FS_FUSECTL_DIR "/..", &parent))
		return; /* no fusectl in this kernel: nothing to mount on */
	if (dir.st_dev != parent.st_dev)
		return; /* already a mount of its own */
	if (geteuid() == 0)
		(void)mount("fusectl", FS_FUSECTL_DIR, "fusectl", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

static void conn_path(char *buf, size_t len, unsigned conn, const char *file)
{
	snprintf(buf, len, "%s/%u%s%s", FS_FUSECTL_DIR, conn, file ? "/" : "", file ? file : "");
}

bool fs_fusectl_exists(unsigned conn)
{
	char path[128];

	ensure_mounted();
	conn_path(path, sizeof(path), conn, NULL);
	return access(path, F_OK) == 0;
}

unsigned long fs_fusectl_id(unsigned conn)
{
	char path[128];
	struct stat st;

	ensure_mounted();
	conn_path(path, sizeof(path), conn, NULL);
	return stat(path, &st) ? 0 : (unsigned long)st.st_ino;
}

int fs_fusectl_open_abort(unsigned conn, char *err, size_t len)
{
	char path[128];
	int fd;

	ensure_mounted();
	conn_path(path, sizeof(path), conn, "abort");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		snprintf(err, len,
		         "cannot open %s: %s (fusectl is mounted on " FS_FUSECTL_DIR " by root: mount -t fusectl "
		         "fusectl " FS_FUSECTL_DIR ")",
		         path, strerror(errno));
	return fd;
}

int fs_fusectl_abort(unsigned conn, char *err, size_t len)
{
	int fd = fs_fusectl_open_abort(conn, err, len);

	if (fd < 0)
		return -1;
	if (write(fd, "1", 1) != 1) {
		snprintf(err, len, "aborting FUSE connection %u failed: %s", conn, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}
