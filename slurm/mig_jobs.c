/* SPDX-License-Identifier: MIT */
/* A Slurm job's partitions through the accelfs mount (see mig_jobs.h). */
#include "mig_jobs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

long am_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got + 1 < len) {
		ssize_t r = read(fd, buf + got, len - 1 - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	close(fd);
	return (long)got;
}

/* A name accelfs would accept: [A-Za-z0-9][A-Za-z0-9_.-]*, short enough for a job name. */
static int valid_segment(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= AM_NAME_MAX - 16 || !isalnum((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return 0;
	return 1;
}

static int parse_spec(char *item, struct am_spec *spec, char *err, size_t len)
{
	memset(spec, 0, sizeof(*spec));
	char *colon = strchr(item, ':');
	spec->count = 1;
	if (colon) {
		*colon = '\0';
		char *end;
		errno = 0;
		unsigned long c = strtoul(colon + 1, &end, 10);
		if (errno || *end || end == colon + 1 || c < 1 || c > AM_MAX_PER_JOB) {
			snprintf(err, len, "bad count '%s' in --accel-mig: a number from 1 to %d", colon + 1,
			         AM_MAX_PER_JOB);
			return -1;
		}
		spec->count = (unsigned)c;
	}
	char *slash = strchr(item, '/');
	const char *profile = item;
	if (slash) {
		*slash = '\0';
		if (!valid_segment(item) || (strncmp(item, "ppu", 3) && strncmp(item, "gpu", 3))) {
			snprintf(err, len, "bad device '%s' in --accel-mig: a device of /accel such as ppu0 or gpu0",
			         item);
			return -1;
		}
		snprintf(spec->device, sizeof(spec->device), "%s", item);
		profile = slash + 1;
	}
	if (!valid_segment(profile)) {
		snprintf(err, len, "bad profile '%s' in --accel-mig: a profile name such as 4g.48gb", profile);
		return -1;
	}
	snprintf(spec->profile, sizeof(spec->profile), "%s", profile);
	return 0;
}

int am_parse_request(const char *text, struct am_request *req, char *err, size_t len)
{
	memset(req, 0, sizeof(*req));
	if (!text || !*text) {
		snprintf(err, len, "--accel-mig needs a value: [DEVICE/]PROFILE[:COUNT][,...], e.g. 4g.48gb:2");
		return -1;
	}
	char copy[512];
	if (strlen(text) >= sizeof(copy)) {
		snprintf(err, len, "--accel-mig value too long");
		return -1;
	}
	snprintf(copy, sizeof(copy), "%s", text);
	char *save = NULL;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		if (req->nspecs == AM_MAX_SPECS) {
			snprintf(err, len, "--accel-mig lists more than %d items", AM_MAX_SPECS);
			return -1;
		}
		if (parse_spec(item, &req->specs[req->nspecs], err, len) < 0)
			return -1;
		req->total += req->specs[req->nspecs].count;
		req->nspecs++;
	}
	if (req->nspecs == 0) {
		snprintf(err, len, "--accel-mig=%s names no profile", text);
		return -1;
	}
	if (req->total > AM_MAX_PER_JOB) {
		snprintf(err, len, "--accel-mig asks for %u partitions; at most %d per node", req->total,
		         AM_MAX_PER_JOB);
		return -1;
	}
	return 0;
}

/* Decimal without sign or leading zero (so one job id has exactly one spelling). */
static int parse_decimal(const char *s, size_t n, unsigned long *out)
{
	if (n == 0 || n > 10 || (n > 1 && s[0] == '0'))
		return 0;
	unsigned long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return 0;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = v;
	return 1;
}

int am_parse_name(const char *name, uint32_t *jobid, unsigned *index)
{
	if (strncmp(name, "slurm-", 6) != 0)
		return 0;
	const char *id = name + 6;
	const char *dash = strchr(id, '-');
	if (!dash)
		return 0;
	unsigned long j, i;
	if (!parse_decimal(id, (size_t)(dash - id), &j) || !parse_decimal(dash + 1, strlen(dash + 1), &i))
		return 0;
	if (j == 0 || j > UINT32_MAX || i >= 1000)
		return 0;
	*jobid = (uint32_t)j;
	*index = (unsigned)i;
	return 1;
}

/* device: and uuid: from MOUNT/mig/<profile>/<name>/status. */
static void read_status(const char *mount, struct am_part *p)
{
	char path[4096], buf[2048];
	snprintf(path, sizeof(path), "%s/mig/%s/%s/status", mount, p->profile, p->name);
	if (am_read_file(path, buf, sizeof(buf)) < 0)
		return;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "device: ", 8))
			snprintf(p->device, sizeof(p->device), "%s", line + 8);
		else if (!strncmp(line, "uuid: ", 6))
			snprintf(p->uuid, sizeof(p->uuid), "%s", line + 6);
	}
}

static int cmp_part(const void *a, const void *b)
{
	const struct am_part *x = a, *y = b;
	if (x->jobid != y->jobid)
		return x->jobid < y->jobid ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return strcmp(x->profile, y->profile);
}

/*
 * Call fn for every profile directory under <mount>/mig (the node-level
 * view: every profile of every device, each once).  fn answers 0 to go on,
 * < 0 to stop with an error it has written into err.
 */
typedef int (*profile_fn)(void *ctx, const char *mount, const char *profile, char *err, size_t len);

static int each_profile(const char *mount, profile_fn fn, void *ctx, char *err, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/mig", mount);
	DIR *top = opendir(path);
	if (!top) {
		snprintf(err, len, "cannot list %s (%s): is accelfs mounted there?", path, strerror(errno));
		return -1;
	}
	struct dirent *pe;
	int rc = 0;
	while (!rc && (pe = readdir(top)))
		if (pe->d_name[0] != '.' && strlen(pe->d_name) < AM_NAME_MAX)
			rc = fn(ctx, mount, pe->d_name, err, len);
	closedir(top);
	return rc < 0 ? -1 : 0;
}

struct list_ctx {
	uint32_t jobid;
	int with_status;
	struct am_part *out;
	size_t max, *n;
};

/* The partitions of a job (or of every job) in one profile directory. */
static int list_profile(void *ctx, const char *mount, const char *profile, char *err, size_t len)
{
	struct list_ctx *l = ctx;
	char path[4096];
	snprintf(path, sizeof(path), "%s/mig/%s", mount, profile);
	DIR *pd = opendir(path);
	if (!pd)
		return 0; /* the profile went away with a mode change: nothing of ours there now */
	struct dirent *je;
	int rc = 0;
	while ((je = readdir(pd))) {
		uint32_t id;
		unsigned idx;
		if (!am_parse_name(je->d_name, &id, &idx) || (l->jobid && id != l->jobid))
			continue;
		if (*l->n == l->max) {
			snprintf(err, len, "more than %zu Slurm partitions under %s/mig", l->max, mount);
			rc = -1;
			break;
		}
		struct am_part *p = &l->out[(*l->n)++];
		memset(p, 0, sizeof(*p));
		p->jobid = id;
		p->index = idx;
		snprintf(p->profile, sizeof(p->profile), "%s", profile);
		snprintf(p->name, sizeof(p->name), "%s", je->d_name);
		if (l->with_status)
			read_status(mount, p);
	}
	closedir(pd);
	return rc;
}

int am_list(const char *mount, uint32_t jobid, int with_status, struct am_part *out, size_t max, size_t *n, char *err,
            size_t len)
{
	struct list_ctx l = { jobid, with_status, out, max, n };
	*n = 0;
	int rc = each_profile(mount, list_profile, &l, err, len);
	qsort(out, *n, sizeof(*out), cmp_part);
	return rc;
}

/* accelfs's reason for the last failure in a profile directory, or "" */
static void last_error(const char *dir, char *buf, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/last_error", dir);
	if (am_read_file(path, buf, len) < 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

int am_reclaim_one(const char *mount, const char *profile, const char *name, char *err, size_t len)
{
	char dir[4096], path[4200];
	snprintf(dir, sizeof(dir), "%s/mig/%s", mount, profile);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rmdir(path) == 0 || errno == ENOENT)
		return 0;
	int e = errno;
	char why[1024];
	last_error(dir, why, sizeof(why));
	snprintf(err, len, "rmdir %s: %s%s%s", path, strerror(e), why[0] ? ": " : "", why);
	return e;
}

int am_reclaim_job(const char *mount, uint32_t jobid, int tries, char *err, size_t len)
{
	struct am_part parts[AM_MAX_PER_JOB * 2];
	size_t n = 0;
	for (int attempt = 0;; attempt++) {
		if (am_list(mount, jobid, 0, parts, sizeof(parts) / sizeof(parts[0]), &n, err, len) < 0)
			return n ? (int)n : 1;
		int left = 0;
		for (size_t i = 0; i < n; i++)
			if (am_reclaim_one(mount, parts[i].profile, parts[i].name, err, len) != 0)
				left++;
		if (left == 0 || attempt + 1 >= tries)
			return left;
		/* Something still runs on it (accelfs answered EBUSY after its own retries):
		 * the job's processes are being killed, give them a moment. */
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/*
 * mkdir as the job's user in the filesystem's eyes, so that accelfs records
 * the user as the partition's owner and charges it to the user's quota
 * (docs/tree.md, Quotas), while keeping root's right to carve in any
 * directory: the thread's filesystem uid and gid become the user's, which
 * drops the capabilities that override file permissions from the effective
 * set, and CAP_DAC_OVERRIDE is raised again from the permitted set (the
 * kernel checks the directory's mode before accelfs is asked).  Both are
 * the calling thread's alone, and are given back before it returns.
 */
static int mkdir_as(const char *path, uid_t uid, gid_t gid)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	int ret, e;

	if (uid == 0 || geteuid() != 0)
		return mkdir(path, 0755);
	setfsgid(gid);
	setfsuid(uid);
	if (syscall(SYS_capget, &hdr, caps) == 0) {
		caps[CAP_DAC_OVERRIDE / 32].effective |= 1u << (CAP_DAC_OVERRIDE % 32);
		caps[CAP_DAC_READ_SEARCH / 32].effective |= 1u << (CAP_DAC_READ_SEARCH % 32);
		if (syscall(SYS_capset, &hdr, caps) != 0)
			caps[0].effective = 0; /* mkdir answers what the user alone may do */
	}
	ret = mkdir(path, 0755);
	e = errno;
	setfsuid(0); /* back to 0: the kernel gives the effective capabilities back from the permitted set */
	setfsgid(0);
	errno = e;
	return ret;
}

int am_carve(const char *mount, uint32_t jobid, uid_t uid, gid_t gid, const struct am_request *req, char *err,
             size_t len)
{
	unsigned index = 0;
	for (unsigned s = 0; s < req->nspecs; s++) {
		const struct am_spec *spec = &req->specs[s];
		char dir[4096];
		if (spec->device[0])
			snprintf(dir, sizeof(dir), "%s/%s/mig/%s", mount, spec->device, spec->profile);
		else
			snprintf(dir, sizeof(dir), "%s/mig/%s", mount, spec->profile);
		for (unsigned c = 0; c < spec->count; c++, index++) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/slurm-%u-%u", dir, jobid, index);
			if (mkdir_as(path, uid, gid) == 0 || errno == EEXIST)
				continue;
			int e = errno;
			char why[1024], left[512];
			last_error(dir, why, sizeof(why));
			snprintf(err, len, "mkdir %s: %s%s%s", path, strerror(e), why[0] ? ": " : "", why);
			if (am_reclaim_job(mount, jobid, 3, left, sizeof(left)) != 0) {
				size_t used = strlen(err);
				snprintf(err + used, len - used, "; and giving back what was carved failed: %s", left);
			}
			return e;
		}
	}
	return 0;
}

struct avail_ctx {
	struct am_avail *out;
	size_t max, *n;
};

static int avail_profile(void *ctx, const char *mount, const char *profile, char *err, size_t len)
{
	struct avail_ctx *a = ctx;
	char path[4096], buf[64];
	snprintf(path, sizeof(path), "%s/mig/%s/available", mount, profile);
	if (am_read_file(path, buf, sizeof(buf)) < 0)
		return 0; /* gone with a mode change since the listing */
	char *end;
	long v = strtol(buf, &end, 10);
	if (end == buf || v < 0) {
		snprintf(err, len, "%s says '%s', not a count", path, buf);
		return -1;
	}
	if (*a->n == a->max) {
		snprintf(err, len, "more than %zu profiles under %s/mig", a->max, mount);
		return -1;
	}
	snprintf(a->out[*a->n].profile, sizeof(a->out[*a->n].profile), "%s", profile);
	a->out[(*a->n)++].available = v;
	return 0;
}

int am_available(const char *mount, struct am_avail *out, size_t max, size_t *n, char *err, size_t len)
{
	struct avail_ctx a = { out, max, n };
	*n = 0;
	return each_profile(mount, avail_profile, &a, err, len);
}
