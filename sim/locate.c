/* SPDX-License-Identifier: MIT */
#include "sim/locate.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ACCELFS_PKGLIBDIR
#define ACCELFS_PKGLIBDIR "/usr/local/lib/accelfs"
#endif

const char *accel_sim_vendor_dir(const struct accel_family *f)
{
	return !strcmp(f->sym_prefix, "hgml") ? "thead" : "nvidia";
}

const char *accel_sim_lib_relpath(const struct accel_family *f)
{
	return !strcmp(f->sym_prefix, "hgml") ? "thead/lib64/libhgml.so" : "nvidia/libnvidia-ml.so.1";
}

static int fmt_path(char *buf, size_t len, const char *a, const char *b, const char *c)
{
	int n = snprintf(buf, len, "%s%s%s", a, b, c);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int accel_sim_setup_env(const char *state_dir, const char *topology, char *err, size_t errlen)
{
	char root[PATH_MAX], abs_topology[PATH_MAX];

	if (fmt_path(root, sizeof(root), state_dir, "/sim", "")) {
		snprintf(err, errlen, "state directory path too long");
		return -ENAMETOOLONG;
	}
	/* mkdir -p of <state_dir>/sim, one level at a time. */
	for (char *p = root + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(root, 0755) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", root, strerror(errno));
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(root, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", root, strerror(errno));
		return -errno;
	}
	if (topology) {
		if (!realpath(topology, abs_topology)) {
			snprintf(err, errlen, "topology %s: %s", topology, strerror(errno));
			return -errno;
		}
		setenv("ACCELFS_SIM_TOPOLOGY", abs_topology, 1);
	} else {
		unsetenv("ACCELFS_SIM_TOPOLOGY");
	}
	setenv("ACCELFS_SIM_ROOT", root, 1);
	return 0;
}

int accel_sim_state_dir_check(const char *state_dir, const char *create_option, char *err, size_t errlen)
{
	struct stat st;

	if (stat(state_dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		snprintf(err, errlen, "the simulated node's state directory %s is not a directory: give the "
			 "--state-dir of an `accelfs --sim`", state_dir);
		return -ENOTDIR;
	}
	if (errno == ENOENT) {
		snprintf(err, errlen, "the simulated node's state directory %s does not exist: start `accelfs --sim "
			 "--state-dir=%s MOUNTPOINT` first, create it (mkdir -p %s), or pass %s for a fresh node "
			 "driven by this tool alone", state_dir, state_dir, state_dir, create_option);
		return -ENOENT;
	}
	{
		int e = errno;

		snprintf(err, errlen, "the simulated node's state directory %s: %s", state_dir, strerror(e));
		return -e;
	}
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int accel_sim_locate_lib(const struct accel_family *f, char *path, size_t len, char *err, size_t errlen)
{
	const char *rel = accel_sim_lib_relpath(f);
	const char *libdir = getenv("ACCELFS_SIM_LIBDIR");
	char exe[PATH_MAX], tried[3][PATH_MAX];
	size_t n = 0;
	ssize_t r;

	if (libdir && *libdir && fmt_path(tried[n], PATH_MAX, libdir, "/", rel) == 0)
		n++;
	r = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (r > 0) {
		char *slash;

		exe[r] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			if (fmt_path(tried[n], PATH_MAX, exe, "/../sim/", rel) == 0)
				n++;
		}
	}
	if (fmt_path(tried[n], PATH_MAX, ACCELFS_PKGLIBDIR, "/sim/", rel) == 0)
		n++;
	for (size_t i = 0; i < n; i++)
		if (exists(tried[i])) {
			if (fmt_path(path, len, tried[i], "", ""))
				return -ENAMETOOLONG;
			return 0;
		}
	snprintf(err, errlen, "no simulated %s driver found (tried %s%s%s%s%s)", f->vendor, n > 0 ? tried[0] : "",
		 n > 1 ? ", " : "", n > 1 ? tried[1] : "", n > 2 ? ", " : "", n > 2 ? tried[2] : "");
	return -ENOENT;
}

static int vendor_subdir(const char *state_dir, const struct accel_family *f, const char *leaf, char *buf,
			 size_t len)
{
	int n = snprintf(buf, len, "%s/sim/%s/%s", state_dir, accel_sim_vendor_dir(f), leaf);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int accel_sim_dev_root(const char *state_dir, const struct accel_family *f, char *buf, size_t len)
{
	return vendor_subdir(state_dir, f, "dev", buf, len);
}

int accel_sim_proc_root(const char *state_dir, const struct accel_family *f, char *buf, size_t len)
{
	return vendor_subdir(state_dir, f, "proc", buf, len);
}
