/* SPDX-License-Identifier: MIT */
#include "sim/locate.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where meson installs things (absolute; sim/meson.build passes them). */
#ifndef ACCELFS_PKGLIBDIR
#define ACCELFS_PKGLIBDIR "/usr/local/lib/accelfs"
#endif
#ifndef ACCELFS_DATADIR
#define ACCELFS_DATADIR "/usr/local/share"
#endif
#ifndef ACCELFS_BINDIR
#define ACCELFS_BINDIR "/usr/local/bin"
#endif
#ifndef ACCELFS_SBINDIR
#define ACCELFS_SBINDIR "/usr/local/sbin"
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
		snprintf(err, errlen,
		         "the simulated node's state directory %s is not a directory: give the "
		         "--state-dir of an `accelfs --sim`",
		         state_dir);
		return -ENOTDIR;
	}
	if (errno == ENOENT) {
		snprintf(err, errlen,
		         "the simulated node's state directory %s does not exist: start `accelfs --sim "
		         "--state-dir=%s MOUNTPOINT` first, create it (mkdir -p %s), or pass %s for a fresh node "
		         "driven by this tool alone",
		         state_dir, state_dir, state_dir, create_option);
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

/* The directory of the running executable ("" when /proc cannot say). */
static void exe_dir(char *dir, size_t len)
{
	ssize_t r = readlink("/proc/self/exe", dir, len - 1);
	char *slash;

	dir[r > 0 ? r : 0] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
}

/*
 * The root the running executable was installed under: "" for a plain
 * install, the DESTDIR for a staged one (meson install --destdir puts
 * <prefix>/sbin/accelfs at DESTDIR<prefix>/sbin/accelfs).  -1 when the
 * executable is not in an installed bin or sbin directory (the build tree).
 */
static int install_root(char *root, size_t len)
{
	static const char *const dirs[] = { ACCELFS_SBINDIR, ACCELFS_BINDIR };
	char dir[PATH_MAX];

	exe_dir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t dl = strlen(dir), il = strlen(dirs[i]);
		if (dl >= il && !strcmp(dir + dl - il, dirs[i])) {
			int w = snprintf(root, len, "%.*s", (int)(dl - il), dir);
			return w < 0 || (size_t)w >= len ? -1 : 0;
		}
	}
	return -1;
}

/*
 * The places a file of the simulated node is looked for, in order: the
 * directory the environment names (tests), the build tree next to the
 * executable (<exe>/../sim/<sub>), and the installed location under the
 * executable's own install root (so a DESTDIR install finds its own files,
 * not the system's) or, failing that, where meson installs it.
 */
static size_t candidates(const char *env, const char *build_sub, const char *installed, const char *leaf,
                         char tried[][PATH_MAX])
{
	const char *envdir = getenv(env);
	char dir[PATH_MAX], root[PATH_MAX];
	size_t n = 0;

	if (envdir && *envdir && fmt_path(tried[n], PATH_MAX, envdir, "/", leaf) == 0)
		n++;
	exe_dir(dir, sizeof(dir));
	if (dir[0] && fmt_path(tried[n], PATH_MAX, dir, build_sub, leaf) == 0)
		n++;
	if (install_root(root, sizeof(root)) == 0 && root[0] &&
	    fmt_path(tried[n], PATH_MAX, root, installed, leaf) == 0)
		n++;
	if (fmt_path(tried[n], PATH_MAX, installed, "", leaf) == 0)
		n++;
	return n;
}

#define MAX_CANDIDATES 4

/* "a, b, c": the places tried, for a message. */
static void list_tried(char tried[][PATH_MAX], size_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", tried[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* A file of the simulators' library directory (relpath below sim/), found as the libraries are. */
static int locate_sim_file(const char *relpath, const char *what, char *path, size_t len, char *err, size_t errlen)
{
	char tried[MAX_CANDIDATES][PATH_MAX], installed[PATH_MAX], leaf[PATH_MAX], list[4 * PATH_MAX];
	size_t n;

	if (fmt_path(installed, sizeof(installed), ACCELFS_PKGLIBDIR, "/sim", "") ||
	    fmt_path(leaf, sizeof(leaf), "/", relpath, ""))
		return -ENAMETOOLONG;
	n = candidates("ACCELFS_SIM_LIBDIR", "/../sim", installed, leaf, tried);
	for (size_t i = 0; i < n; i++)
		if (exists(tried[i]))
			return fmt_path(path, len, tried[i], "", "") ? -ENAMETOOLONG : 0;
	list_tried(tried, n, list, sizeof(list));
	snprintf(err, errlen,
	         "no simulated %s found (tried %s); an install configured with -Dsimulators=false has none: "
	         "--sim needs a build tree or an install with them",
	         what, list);
	return -ENOENT;
}

int accel_sim_locate_lib(const struct accel_family *f, char *path, size_t len, char *err, size_t errlen)
{
	char what[64];

	snprintf(what, sizeof(what), "%s driver", f->vendor);
	return locate_sim_file(accel_sim_lib_relpath(f), what, path, len, err, errlen);
}

int accel_sim_locate_barswap(char *path, size_t len, char *err, size_t errlen)
{
	return locate_sim_file(ACCEL_SIM_BARSWAP_RELPATH, "barswap slot", path, len, err, errlen);
}

/* Is this a name (default, small) rather than a path (./x.json, /etc/x.json, x.json)? */
static int is_name(const char *arg)
{
	size_t l = strlen(arg);

	return !strchr(arg, '/') && !(l > 5 && !strcmp(arg + l - 5, ".json"));
}

int accel_sim_find_topology(const char *arg, char *path, size_t len, char *err, size_t errlen)
{
	char tried[MAX_CANDIDATES][PATH_MAX], installed[PATH_MAX], leaf[PATH_MAX], list[4 * PATH_MAX];
	size_t n;

	if (!is_name(arg) || exists(arg)) {
		/* A path (or a file of that name here): it must be readable, and is taken as given. */
		if (access(arg, R_OK)) {
			int e = errno;
			snprintf(err, errlen, "cannot read the topology %s: %s", arg, strerror(e));
			return -e;
		}
		return fmt_path(path, len, arg, "", "") ? -ENAMETOOLONG : 0;
	}
	if (fmt_path(installed, sizeof(installed), ACCELFS_DATADIR, "/accelfs/topologies", "") ||
	    fmt_path(leaf, sizeof(leaf), "/", arg, ".json"))
		return -ENAMETOOLONG;
	n = candidates("ACCELFS_SIM_TOPOLOGIES", "/../sim/topologies", installed, leaf, tried);
	for (size_t i = 0; i < n; i++)
		if (exists(tried[i]))
			return fmt_path(path, len, tried[i], "", "") ? -ENAMETOOLONG : 0;
	list_tried(tried, n, list, sizeof(list));
	snprintf(err, errlen,
	         "no topology named %s (tried %s); give a name installed there or the path of a "
	         "JSON file",
	         arg, list);
	return -ENOENT;
}

static int vendor_subdir(const char *state_dir, const struct accel_family *f, const char *leaf, char *buf, size_t len)
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
