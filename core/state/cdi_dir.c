/* SPDX-License-Identifier: MIT */
#include "core/state/cdi_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/state/fileio.h"
#include "core/model/log.h"

void accel_cdi_tag(const char *state_dir, char tag[ACCEL_CDI_TAG_LEN + 1])
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)state_dir; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	snprintf(tag, ACCEL_CDI_TAG_LEN + 1, "%08x", (unsigned)((h >> 32) ^ h));
}

int accel_cdi_path(const char *dir, const char *tag, const char *job, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/" ACCEL_CDI_PREFIX "%s-%s.json", dir, tag, job);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int accel_cdi_put(const char *dir, const char *tag, const char *job, const char *text)
{
	char path[PATH_MAX];
	int ret = accel_cdi_path(dir, tag, job, path, sizeof(path));

	if (ret)
		return ret;
	ret = accel_atomic_write(path, text, strlen(text), 0644);
	if (ret == -ENOENT) { /* the directory went (or never was): make it once, not at every write */
		ret = accel_mkdirs(dir, 0755);
		if (!ret)
			ret = accel_atomic_write(path, text, strlen(text), 0644);
	}
	return ret;
}

int accel_cdi_drop(const char *dir, const char *tag, const char *job)
{
	char path[PATH_MAX];
	int ret = accel_cdi_path(dir, tag, job, path, sizeof(path));

	if (ret)
		return ret;
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

/* The job a file of ours publishes ("accelfs-<tag>-job1.json" -> "job1"); false for anything else of ours. */
static bool job_of(const char *name, size_t skip, char *job, size_t len)
{
	const char *rest = name + skip;
	size_t n = strlen(rest);

	if (n <= 5 || strcmp(rest + n - 5, ".json") || n - 5 >= len)
		return false;
	memcpy(job, rest, n - 5);
	job[n - 5] = '\0';
	return true;
}

/* A file named as a daemon's ("accelfs-" eight hex digits "-"), of whichever tag. */
static bool tagged(const char *name)
{
	const char *t = name + strlen(ACCEL_CDI_PREFIX);

	if (strncmp(name, ACCEL_CDI_PREFIX, strlen(ACCEL_CDI_PREFIX)))
		return false;
	for (size_t i = 0; i < ACCEL_CDI_TAG_LEN; i++)
		if (!t[i] || !strchr("0123456789abcdef", t[i]))
			return false;
	return t[ACCEL_CDI_TAG_LEN] == '-';
}

/* Remove one file: false (and the failure counted) when it could not be. */
static bool remove_one(struct accel_cdi_sweep *out, const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		errno = ENAMETOOLONG;
	else if (!unlink(path) || errno == ENOENT)
		return true;
	out->failed++;
	if (!out->error)
		out->error = -errno;
	return false;
}

int accel_cdi_sweep(const char *dir, const char *tag, bool (*keep)(void *ctx, const char *job), void *ctx,
                    struct accel_cdi_sweep *out)
{
	char ours[sizeof(ACCEL_CDI_PREFIX) + ACCEL_CDI_TAG_LEN + 2], job[NAME_MAX + 1];
	size_t skip = (size_t)snprintf(ours, sizeof(ours), ACCEL_CDI_PREFIX "%s-", tag);
	struct dirent *e;
	DIR *d;

	memset(out, 0, sizeof(*out));
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ACCEL_CDI_LEGACY_FILE)) {
			out->legacy = remove_one(out, dir, e->d_name);
		} else if (!strncmp(e->d_name, ours, skip)) {
			if ((!job_of(e->d_name, skip, job, sizeof(job)) || !keep(ctx, job)) &&
			    remove_one(out, dir, e->d_name))
				out->removed++;
		} else if (tagged(e->d_name) && job_of(e->d_name, skip, job, sizeof(job))) {
			if (!out->foreign++)
				snprintf(out->foreign_tag, sizeof(out->foreign_tag), "%.8s",
				         e->d_name + strlen(ACCEL_CDI_PREFIX));
		}
	}
	closedir(d);
	return 0;
}

/* ---- one daemon per directory -------------------------------------------- */

/* What the holder wrote: "<pid>\n<state dir>\n<mountpoint>\n" (accel_cdi_claim_note). */
static void holder(int fd, const char *dir, char *err, size_t errlen)
{
	char text[2 * PATH_MAX + 32], *state = NULL, *mnt = NULL;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	int pid = 0;

	text[n > 0 ? n : 0] = '\0';
	state = strchr(text, '\n');
	if (state) {
		*state++ = '\0';
		pid = atoi(text);
		mnt = strchr(state, '\n');
	}
	if (mnt) {
		*mnt++ = '\0';
		mnt[strcspn(mnt, "\n")] = '\0';
	}
	if (pid > 0 && mnt && *mnt)
		snprintf(err, errlen,
		         "the CDI directory %s is in use by accelfs pid %d (state directory %s, mounted on %s): one "
		         "daemon per CDI directory, since a runtime refuses a job name that two daemons both publish. "
		         "Stop that one first (umount %s), or give this one its own --cdi-dir",
		         dir, pid, state, mnt, mnt);
	else
		snprintf(err, errlen,
		         "the CDI directory %s is in use by another accelfs that has not written its name yet (it is "
		         "starting): one daemon per CDI directory. Wait for it and stop it, or give this one its own "
		         "--cdi-dir",
		         dir);
}

int accel_cdi_claim(const char *dir, const char *state_dir, const char *mountpoint, int *out, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int fd, ret;

	if (snprintf(path, sizeof(path), "%s/" ACCEL_CDI_CLAIM_FILE, dir) >= (int)sizeof(path)) {
		snprintf(err, errlen, "the CDI directory's path is too long: %s", dir);
		return -ENAMETOOLONG;
	}
	ret = accel_mkdirs(dir, 0755);
	fd = ret ? -1 : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = ret ? ret : -errno;
		snprintf(err, errlen, "cannot open %s: %s: check the CDI directory (--cdi-dir), its owner and mode",
		         path, strerror(-ret));
		return ret;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		if (ret == -EWOULDBLOCK) {
			holder(fd, dir, err, errlen);
			ret = -EBUSY;
		} else {
			snprintf(err, errlen, "cannot lock %s: %s", path, strerror(-ret));
		}
		close(fd);
		return ret;
	}
	accel_cdi_claim_note(fd, state_dir, mountpoint);
	*out = fd;
	return 0;
}

void accel_cdi_claim_note(int fd, const char *state_dir, const char *mountpoint)
{
	char text[2 * PATH_MAX + 32];
	int n = snprintf(text, sizeof(text), "%d\n%s\n%s\n", (int)getpid(), state_dir, mountpoint);

	if (n < 0 || (size_t)n >= sizeof(text))
		n = snprintf(text, sizeof(text), "%d\n?\n?\n", (int)getpid());
	/* Overwrite, then cut: a reader never finds the file empty while we hold it. */
	if (pwrite(fd, text, (size_t)n, 0) != n || ftruncate(fd, n))
		log_warn("cannot write this daemon's name in the CDI directory's lock file: %s (the lock still holds)",
		         strerror(errno));
}

void accel_cdi_claim_release(int fd)
{
	if (fd < 0)
		return;
	if (ftruncate(fd, 0))
		log_debug("cannot empty the CDI directory's lock file: %s", strerror(errno));
	close(fd);
}
