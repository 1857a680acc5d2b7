/* SPDX-License-Identifier: MIT */
#include "core/driver/holders.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/model/model.h"
#include "core/driver/proc_files.h"

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
	/*
	 * A process names itself: comm and argv are any bytes it likes.  A
	 * newline or other control byte would forge lines in holders and in
	 * last_error (a fake "pid=1" holder), so each becomes '?'; cmdline's
	 * NULs between arguments become spaces first.
	 */
	for (ssize_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\0' && nul_to_space)
			buf[i] = ' ';
		else if (c < 0x20 || c == 0x7f)
			buf[i] = '?';
	}
}

struct wanted {
	const struct node_id *nodes;
	size_t n;
	bool same_file_only;
};

static bool wanted(void *ctx, const struct stat *st)
{
	const struct wanted *w = ctx;

	return matches(st, w->nodes, w->n, w->same_file_only);
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
		nfds = accel_proc_count_files(proc_root, de->d_name, wanted,
		                              &(struct wanted){ nodes, n_nodes, same_file_only }, false);
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
		accel_proc_owner_read(proc_root, de->d_name, &h->owner);
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

int accel_card_holders(const struct accel_devnode *nodes, size_t n, bool control_blocks, struct accel_holder **out,
                       size_t *n_out)
{
	struct accel_devnode *own = calloc(n ? n : 1, sizeof(*own));
	size_t n_own = 0;
	int ret;

	*out = NULL;
	*n_out = 0;
	if (!own)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (control_blocks || !nodes[i].control)
			own[n_own++] = nodes[i];
	ret = accel_device_nodes_holders(own, n_own, out, n_out);
	free(own);
	return ret;
}

int accel_control_holders(const struct accel_devnode *nodes, size_t n, struct accel_control_holder **out, size_t *n_out)
{
	struct accel_control_holder *list = NULL;
	size_t n_list = 0;

	*out = NULL;
	*n_out = 0;
	for (size_t i = 0; i < n; i++) {
		struct accel_holder *h;
		size_t nh;
		int ret;

		if (!nodes[i].control)
			continue;
		ret = accel_device_nodes_holders(&nodes[i], 1, &h, &nh);
		if (ret) {
			free(list);
			return ret;
		}
		if (nh) {
			struct accel_control_holder *grown = realloc(list, (n_list + nh) * sizeof(*grown));

			if (!grown) {
				free(h);
				free(list);
				return -ENOMEM;
			}
			list = grown;
			for (size_t k = 0; k < nh; k++) {
				list[n_list].h = h[k];
				snprintf(list[n_list].node, sizeof(list[n_list].node), "%s", nodes[i].path);
				n_list++;
			}
		}
		free(h);
	}
	*out = list;
	*n_out = n_list;
	return 0;
}

/* The daemons NVIDIA's MIG manager stops before a mode change (its hooks), and their kin on T-Head nodes. */
static const struct {
	const char *name; /* the program's name: argv[0]'s last component, or comm (cut at 15 bytes) */
	const char *advice;
} known_daemons[] = {
	{ "nvidia-persistenced", "systemctl stop nvidia-persistenced (start it again after the change)" },
	{ "nv-hostengine", "systemctl stop nvidia-dcgm (DCGM's host engine; dcgm on older installs)" },
	{ "dcgm-exporter", "stop dcgm-exporter (its pod or unit)" },
	{ "nvidia-device-plugin", "stop the Kubernetes device plugin (its DaemonSet pod)" },
	{ "gpu-feature-discovery", "stop gpu-feature-discovery (its DaemonSet pod)" },
	{ "nvsm", "systemctl stop nvsm (NVSM, on DGX systems)" },
	{ "Xorg", "stop the display server (systemctl isolate multi-user.target)" },
	{ "nvidia-smi", "let nvidia-smi finish" },
	{ "ppu-smi", "let ppu-smi finish" },
};

static bool is_named(const struct accel_holder *h, const char *name)
{
	char argv0[256];
	const char *base;
	size_t len = strcspn(h->cmdline, " ");
	size_t cut = strlen(name) < 15 ? strlen(name) : 15;

	snprintf(argv0, sizeof(argv0), "%.*s", (int)len, h->cmdline);
	base = strrchr(argv0, '/');
	base = base ? base + 1 : argv0;
	/* comm is the name cut at 15 bytes: nvidia-persistenced reads "nvidia-persiste" there. */
	return !strcmp(base, name) || (strlen(h->comm) == cut && !strncmp(h->comm, name, cut));
}

const char *accel_holder_advice(const struct accel_holder *h)
{
	for (size_t i = 0; i < sizeof(known_daemons) / sizeof(known_daemons[0]); i++)
		if (is_named(h, known_daemons[i].name))
			return known_daemons[i].advice;
	return NULL;
}

void accel_holders_describe(const struct accel_holder *h, size_t n, char *buf, size_t len)
{
	size_t at = 0;
	bool advised = false;
	struct accel_proc_hiding hiding;

	buf[0] = '\0';
	accel_proc_hiding_read("/proc", &hiding);
	if (hiding.hides) {
		/* last_error is read by anyone: the kernel hides these processes' names from most of them. */
		for (size_t i = 0; i < n && at < len; i++) {
			int w = snprintf(buf + at, len - at, "%spid %d", i ? ", " : "", (int)h[i].pid);
			if (w < 0)
				return;
			at += (size_t)w;
		}
		if (at < len)
			snprintf(buf + at, len - at,
			         " (/proc hides processes: holders names them to whoever /proc shows them to)");
		return;
	}
	for (size_t i = 0; i < n && at < len; i++) {
		/* The command as ps shows it, cut short: the whole of it is in holders. */
		int w = snprintf(buf + at, len - at, "%spid %d (%.60s)", i ? ", " : "", (int)h[i].pid,
		                 accel_holder_advice(&h[i]) || !h[i].cmdline[0] ? h[i].comm : h[i].cmdline);
		if (w < 0)
			return;
		at += (size_t)w;
	}
	for (size_t i = 0; i < n && at < len; i++) {
		const char *advice = accel_holder_advice(&h[i]);
		int w;

		bool said = false;

		for (size_t k = 0; k < i && advice && !said; k++)
			said = accel_holder_advice(&h[k]) == advice;
		if (!advice || said)
			continue;
		w = snprintf(buf + at, len - at, "%s%s", advised ? "; " : " (to free it: ", advice);
		if (w < 0)
			return;
		at += (size_t)w;
		advised = true;
	}
	if (advised && at < len)
		snprintf(buf + at, len - at, ", as NVIDIA's MIG manager does before a mode change)");
}
