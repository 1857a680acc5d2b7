/* SPDX-License-Identifier: MIT */
#include "fs/startup.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/model/log.h"
#include "core/driver/mountinfo.h"

extern char **environ;

/* statfs(2)'s f_type for any FUSE filesystem (linux/magic.h does not carry it). */
#define FUSE_SUPER_MAGIC 0x65735546

/* The filesystem type of the topmost mount at exactly this path ("" when nothing is mounted there). */
static void mount_type_at(const char *path, char *type, size_t len)
{
	struct accel_mount_entry m;

	accel_mount_at(path, &m);
	snprintf(type, len, "%s", m.type);
}

/*
 * An absolute path without stat()ing the last component: realpath() of a
 * dead FUSE mount fails (ENOTCONN), but its parent is an ordinary directory.
 */
static int absolute_through_parent(const char *arg, char *out, size_t len)
{
	char copy[PATH_MAX], dir[PATH_MAX], real_dir[PATH_MAX], *slash, *base;
	int n = snprintf(copy, sizeof(copy), "%s", arg);

	if (n <= 0 || (size_t)n >= sizeof(copy))
		return -1;
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0';
	slash = strrchr(copy, '/');
	if (!slash) {
		base = copy;
		snprintf(dir, sizeof(dir), ".");
	} else {
		*slash = '\0';
		base = slash + 1;
		snprintf(dir, sizeof(dir), "%s", slash == copy ? "/" : copy);
	}
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -1;
	if (!realpath(dir, real_dir))
		return -1;
	n = snprintf(out, len, "%s%s%s", real_dir, strcmp(real_dir, "/") ? "/" : "", base);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A mount at path whose daemon is gone: ours to detach only if it was an accelfs. */
static int dead_mount(const char *path, struct startup_mountpoint *mp)
{
	char type[64];

	mount_type_at(path, type, sizeof(type));
	if (strcmp(type, "fuse.accelfs")) {
		/* Someone else's dead mount (sshfs, ...): not ours to throw away. */
		fprintf(stderr,
		        "accelfs: %s is a dead mount (%s, transport endpoint is not connected) that accelfs "
		        "did not make: unmount it (fusermount3 -u -z %s) and start again\n",
		        path, *type ? type : "type unknown", path);
		return STARTUP_REFUSED;
	}
	mp->stale = true;
	return 0;
}

int startup_check_mountpoint(const char *arg, struct startup_mountpoint *mp)
{
	char type[64];
	struct statfs sfs;
	struct stat st;

	mp->stale = false;
	mp->live = false;
	if (stat(arg, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr,
			        "accelfs: the mountpoint %s is not a directory: mount on an empty directory "
			        "(mkdir -p DIR)\n",
			        arg);
			return STARTUP_USAGE;
		}
		if (!realpath(arg, mp->path)) {
			fprintf(stderr, "accelfs: cannot resolve the mountpoint %s: %s\n", arg, strerror(errno));
			return STARTUP_REFUSED;
		}
		/*
		 * stat() can be answered from the kernel's attribute cache for a
		 * second after the daemon died; statfs always asks the daemon,
		 * so it tells a live mount from a dead one.
		 */
		if (statfs(mp->path, &sfs) == 0) {
			if (sfs.f_type != FUSE_SUPER_MAGIC)
				return 0;
			mount_type_at(mp->path, type, sizeof(type));
			mp->live = !strcmp(type, "fuse.accelfs");
			return 0;
		}
		if (errno != ENOTCONN && errno != ECONNABORTED) {
			fprintf(stderr, "accelfs: cannot use the mountpoint %s: %s\n", mp->path, strerror(errno));
			return STARTUP_REFUSED;
		}
		return dead_mount(mp->path, mp);
	}
	switch (errno) {
	case ENOENT:
		fprintf(stderr, "accelfs: the mountpoint %s does not exist: create it first (mkdir -p %s)\n", arg, arg);
		return STARTUP_USAGE;
	case ENOTDIR:
		fprintf(stderr,
		        "accelfs: the mountpoint %s is not a directory (a component of the path is not "
		        "one): mount on an empty directory\n",
		        arg);
		return STARTUP_USAGE;
	case ENOTCONN:
	case ECONNABORTED:
		break; /* a FUSE mount whose daemon is gone: below */
	default:
		fprintf(stderr, "accelfs: cannot use the mountpoint %s: %s\n", arg, strerror(errno));
		return STARTUP_REFUSED;
	}
	if (absolute_through_parent(arg, mp->path, sizeof(mp->path))) {
		fprintf(stderr,
		        "accelfs: %s is a dead FUSE mount and its path cannot be resolved: unmount it "
		        "(fusermount3 -u -z %s) and start again\n",
		        arg, arg);
		return STARTUP_REFUSED;
	}
	return dead_mount(mp->path, mp);
}

/* fusermount3 -u -z PATH: the way an unprivileged user detaches its own FUSE mount. */
static int run_fusermount(const char *path)
{
	char *argv[] = { "fusermount3", "-u", "-z", (char *)path, NULL };
	pid_t pid;
	int status;

	if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ))
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int startup_detach_stale(struct startup_mountpoint *mp)
{
	/* Mounts can be stacked: detach dead accelfs mounts until a directory shows (a few at most). */
	for (int i = 0; mp->stale && i < 8; i++) {
		char path[PATH_MAX];
		int ret;

		if (umount2(mp->path, MNT_DETACH)) {
			int e = errno; /* EPERM when not root: fusermount3 is how a user unmounts its own */

			if (run_fusermount(mp->path)) {
				log_error(
					"%s is a dead accelfs mount that cannot be detached (umount2: %s; fusermount3 "
					"-u -z failed too): run fusermount3 -u -z %s (as root: umount -l %s) and "
					"start accelfs again",
					mp->path, strerror(e), mp->path, mp->path);
				return STARTUP_REFUSED;
			}
		}
		log_warn("%s was still mounted by an accelfs that is gone (transport endpoint is not connected): "
		         "detached it",
		         mp->path);
		snprintf(path, sizeof(path), "%s", mp->path);
		ret = startup_check_mountpoint(path, mp);
		if (ret)
			return ret;
	}
	if (mp->stale) {
		log_error("%s: dead accelfs mounts keep appearing under each other; unmount them by hand "
		          "(fusermount3 -u -z %s, repeatedly)",
		          mp->path, mp->path);
		return STARTUP_REFUSED;
	}
	return 0;
}

int startup_lock_read(int fd, struct startup_lock_holder *h)
{
	char text[PATH_MAX + 64], *line, *save = NULL;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	memset(h, 0, sizeof(*h));
	text[n > 0 ? n : 0] = '\0';
	line = strtok_r(text, "\n", &save);
	if (!line || (h->pid = atoi(line)) <= 0)
		return -1;
	line = strtok_r(NULL, "\n", &save);
	if (line)
		snprintf(h->mountpoint, sizeof(h->mountpoint), "%s", line);
	line = strtok_r(NULL, "\n", &save);
	if (line)
		h->conn = (unsigned)strtoul(line, NULL, 10);
	line = strtok_r(NULL, "\n", &save);
	if (line)
		h->conn_id = strtoul(line, NULL, 10);
	return 0;
}

/* Who holds the lock, in a sentence that says what to do. */
static void report_holder(int fd, const char *state_dir)
{
	struct startup_lock_holder h;

	if (!startup_lock_read(fd, &h) && *h.mountpoint && strcmp(h.mountpoint, "?"))
		fprintf(stderr,
		        "accelfs: state directory %s is in use by accelfs pid %d (mounted on %s): one daemon "
		        "per state directory. Stop that one first (umount %s), or give this one its own "
		        "--state-dir\n",
		        state_dir, h.pid, h.mountpoint, h.mountpoint);
	else
		fprintf(stderr,
		        "accelfs: state directory %s is in use by another accelfs that has not written its pid "
		        "yet (it is starting): one daemon per state directory. Wait for it and stop it "
		        "(umount its mountpoint), or give this one its own --state-dir\n",
		        state_dir);
}

int startup_refuse_live(const char *state_dir, const struct startup_mountpoint *mp)
{
	char path[PATH_MAX], real[PATH_MAX];
	int fd;

	if (!realpath(state_dir, real))
		snprintf(real, sizeof(real), "%s", state_dir);
	snprintf(path, sizeof(path), "%s/accelfs.lock", real);
	fd = open(path, O_RDWR | O_CLOEXEC); /* no O_CREAT: a refusal creates nothing */
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK)
		report_holder(fd, real);
	else
		fprintf(stderr,
		        "accelfs: %s is already mounted by a running accelfs: stop it first (umount %s) "
		        "or choose another mountpoint\n",
		        mp->path, mp->path);
	if (fd >= 0)
		close(fd); /* lets go of the lock if we took it: we change nothing */
	return STARTUP_REFUSED;
}

int startup_lock_state_dir(const char *state_dir, const char *mountpoint, int *out)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/accelfs.lock", state_dir) >= (int)sizeof(path)) {
		fprintf(stderr, "accelfs: state directory path too long: %s\n", state_dir);
		return STARTUP_REFUSED;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "accelfs: cannot open %s: %s: check the state directory's owner and mode\n", path,
		        strerror(errno));
		return STARTUP_REFUSED;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EWOULDBLOCK)
			report_holder(fd, state_dir);
		else
			fprintf(stderr, "accelfs: cannot lock %s: %s\n", path, strerror(errno));
		close(fd);
		return STARTUP_REFUSED;
	}
	startup_lock_note(fd, mountpoint, 0, 0);
	*out = fd;
	return 0;
}

void startup_lock_note(int fd, const char *mountpoint, unsigned conn, unsigned long conn_id)
{
	char text[PATH_MAX + 96];
	int n = snprintf(text, sizeof(text), "%d\n%s\n%u\n%lu\n", (int)getpid(), mountpoint, conn, conn_id);

	if (n < 0 || (size_t)n >= sizeof(text))
		n = snprintf(text, sizeof(text), "%d\n?\n%u\n%lu\n", (int)getpid(), conn, conn_id);
	/* Overwrite, then cut: a reader never finds the file empty while we hold it. */
	if (pwrite(fd, text, (size_t)n, 0) != n || ftruncate(fd, n))
		log_warn("cannot write the pid in the state directory's lock file: %s (the lock still holds)",
		         strerror(errno));
}

void startup_lock_release(int fd)
{
	if (fd < 0)
		return;
	if (ftruncate(fd, 0))
		log_debug("cannot empty the lock file: %s", strerror(errno));
	close(fd);
}
