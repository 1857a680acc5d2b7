/* SPDX-License-Identifier: MIT */
#include "core/holders.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/model.h"

struct node_id {
	dev_t rdev;
	dev_t dev;
	ino_t ino;
};

static bool matches(const struct stat *st, const struct node_id *nodes, size_t n, bool same_file_only)
{
	if (!S_ISCHR(st->st_mode))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (st->st_rdev != nodes[i].rdev)
			continue;
		if (!same_file_only || (st->st_dev == nodes[i].dev && st->st_ino == nodes[i].ino))
			return true;
	}
	return false;
}

static void read_small(const char *path, char *buf, size_t len, bool nul_to_space)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		buf[--n] = '\0';
	if (nul_to_space)
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
}

/*
 * What a descriptor of /proc/<pid>/fd is open on: the magic link is followed
 * to the open file itself.  AT_STATX_DONT_SYNC: the attributes the kernel
 * has, never a request to the file's filesystem.  A descriptor open on this
 * daemon's own mount would otherwise send it a GETATTR from inside one of
 * its own request threads: a few holders readers at once, each waiting for
 * a thread the others hold, and the whole mount waits for good.
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

/* Count this process's descriptors on the nodes; -1 if it vanished. */
static int count_fds(const char *proc_root, const char *pid, const struct node_id *nodes, size_t n, bool same_file_only)
{
	char path[512];
	struct dirent *de;
	DIR *d;
	int count = 0;

	snprintf(path, sizeof(path), "%s/%s/fd", proc_root, pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (!stat_open_file(dirfd(d), de->d_name, &st) && matches(&st, nodes, n, same_file_only))
			count++;
	}
	closedir(d);
	return count;
}

int accel_holders_scan(const char *proc_root, const char *const *node_paths, size_t n_paths, bool same_file_only,
                       struct accel_holder **out, size_t *n_out)
{
	struct node_id *nodes = calloc(n_paths ? n_paths : 1, sizeof(*nodes));
	struct accel_holder *list = NULL;
	size_t n_nodes = 0, n_list = 0, cap = 0;
	char self[32];
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*n_out = 0;
	if (!nodes)
		return -ENOMEM;
	for (size_t i = 0; i < n_paths; i++) {
		struct stat st;

		if (stat(node_paths[i], &st) == 0 && S_ISCHR(st.st_mode))
			nodes[n_nodes++] = (struct node_id){ st.st_rdev, st.st_dev, st.st_ino };
	}
	if (!n_nodes) {
		free(nodes);
		return 0;
	}
	d = opendir(proc_root);
	if (!d) {
		int err = errno;
		free(nodes);
		return -err;
	}
	snprintf(self, sizeof(self), "%d", (int)getpid());
	while ((de = readdir(d))) {
		char path[512];
		int nfds;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || !strcmp(de->d_name, self))
			continue;
		nfds = count_fds(proc_root, de->d_name, nodes, n_nodes, same_file_only);
		if (nfds <= 0)
			continue;
		if (n_list == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct accel_holder *nl = realloc(list, ncap * sizeof(*nl));
			if (!nl) {
				free(list);
				free(nodes);
				closedir(d);
				return -ENOMEM;
			}
			list = nl;
			cap = ncap;
		}
		struct accel_holder *h = &list[n_list++];
		memset(h, 0, sizeof(*h));
		h->pid = (pid_t)atoi(de->d_name);
		h->nfds = (unsigned)nfds;
		snprintf(path, sizeof(path), "%s/%s/comm", proc_root, de->d_name);
		read_small(path, h->comm, sizeof(h->comm), false);
		snprintf(path, sizeof(path), "%s/%s/cmdline", proc_root, de->d_name);
		read_small(path, h->cmdline, sizeof(h->cmdline), true);
	}
	closedir(d);
	free(nodes);
	*out = list;
	*n_out = n_list;
	return 0;
}

int accel_device_nodes_holders(const struct accel_devnode *nodes, size_t n, struct accel_holder **out, size_t *n_out)
{
	const char **paths = calloc(n + 1, sizeof(*paths));
	bool simulated = false;
	int ret;

	*out = NULL;
	*n_out = 0;
	if (!paths)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		paths[i] = nodes[i].host_path;
		simulated = simulated || strcmp(nodes[i].host_path, nodes[i].path) != 0;
	}
	ret = accel_holders_scan("/proc", paths, n, simulated, out, n_out);
	free(paths);
	return ret;
}
