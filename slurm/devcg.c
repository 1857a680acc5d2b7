/* SPDX-License-Identifier: MIT */
/* A Slurm task's device cgroup, confined to its own job's accelerator nodes (devcg.h). */
#include "devcg.h"
#include "mig_jobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MAJORS 64
#define MAX_NODES 256

/* Device drivers accelfs serves, by their name in /proc/devices (the T-Head and NVIDIA families). */
static const char *const accel_drivers[] = {
	"alixpu",      "alixpu_ctl",      "alixpu-caps",   "nvidia",          "nvidiactl", "nvidia-uvm",
	"nvidia-caps", "nvidia-frontend", "nvidia-nvlink", "nvidia-nvswitch", NULL,
};

struct devnode {
	unsigned major, minor;
};

struct rules {
	unsigned majors[MAX_MAJORS]; /* denied as a whole */
	size_t nmajors;
	struct devnode allow[MAX_NODES]; /* the job's own nodes */
	size_t nallow;
};

static void add_major(struct rules *r, unsigned major)
{
	for (size_t i = 0; i < r->nmajors; i++)
		if (r->majors[i] == major)
			return;
	if (r->nmajors < MAX_MAJORS)
		r->majors[r->nmajors++] = major;
}

static int is_accel_major(const struct rules *r, unsigned major)
{
	for (size_t i = 0; i < r->nmajors; i++)
		if (r->majors[i] == major)
			return 1;
	return 0;
}

/*
 * Lines "<path> c <major>:<minor>" (a job's `devices`) or "node: <path> c M:m"
 * (a card's `info`): every character node's major is an accelerator major;
 * with `allow`, the node itself is one the task may open.
 */
static int scan_nodes(const char *path, struct rules *r, int allow, char *err, size_t len)
{
	char buf[16384];
	if (am_read_file(path, buf, sizeof(buf)) < 0) {
		if (errno == ENOENT || errno == ENODEV)
			return 0; /* gone since the listing, or a lost job: it has no nodes to hand out */
		snprintf(err, len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!allow && strncmp(line, "node:", 5) != 0)
			continue;
		char *c = strstr(line, " c ");
		unsigned major, minor;
		if (!c || sscanf(c + 3, "%u:%u", &major, &minor) != 2)
			continue;
		add_major(r, major);
		if (allow && r->nallow < MAX_NODES)
			r->allow[r->nallow++] = (struct devnode){ major, minor };
	}
	return 0;
}

static int is_dir_at(const char *dir, const struct dirent *e)
{
	if (e->d_type == DT_DIR)
		return 1;
	if (e->d_type != DT_UNKNOWN)
		return 0;
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every accelerator major the node has, and this job's own nodes. */
static int collect(const char *mount, uint32_t jobid, struct rules *r, char *err, size_t len)
{
	char path[4096], dir[4096];
	DIR *top = opendir(mount);
	if (!top) {
		snprintf(err, len, "cannot list %s (%s): is accelfs mounted there?", mount, strerror(errno));
		return -1;
	}
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(top))) {
		if (strncmp(e->d_name, "ppu", 3) && strncmp(e->d_name, "gpu", 3))
			continue;
		snprintf(path, sizeof(path), "%s/%s/info", mount, e->d_name);
		rc = scan_nodes(path, r, 0, err, len);
	}
	closedir(top);
	if (rc)
		return rc;
	/* Every job's nodes, whoever made it: capability majors appear only there. */
	snprintf(dir, sizeof(dir), "%s/mig", mount);
	DIR *mig = opendir(dir);
	if (!mig) {
		snprintf(err, len, "cannot list %s: %s", dir, strerror(errno));
		return -1;
	}
	while (!rc && (e = readdir(mig))) {
		if (e->d_name[0] == '.')
			continue;
		char pdir[4200];
		snprintf(pdir, sizeof(pdir), "%s/%s", dir, e->d_name);
		DIR *pd = opendir(pdir);
		if (!pd)
			continue;
		struct dirent *j;
		while (!rc && (j = readdir(pd))) {
			if (j->d_name[0] == '.' || !is_dir_at(pdir, j))
				continue;
			uint32_t id;
			unsigned idx;
			int ours = am_parse_name(j->d_name, &id, &idx) && id == jobid;
			snprintf(path, sizeof(path), "%s/%s/devices", pdir, j->d_name);
			rc = scan_nodes(path, r, ours, err, len);
		}
		closedir(pd);
	}
	closedir(mig);
	if (rc)
		return rc;
	/* On a real node the drivers' majors are known even when no card and no job shows them. */
	FILE *f = fopen("/proc/devices", "re");
	if (f) {
		char line[256];
		int chr = 0;
		while (fgets(line, sizeof(line), f)) {
			unsigned major;
			char name[128];
			if (!strncmp(line, "Character", 9))
				chr = 1;
			else if (!strncmp(line, "Block", 5))
				chr = 0;
			else if (chr && sscanf(line, "%u %127s", &major, name) == 2)
				for (int i = 0; accel_drivers[i]; i++)
					if (!strcmp(name, accel_drivers[i]))
						add_major(r, major);
		}
		fclose(f);
	}
	return 0;
}

/* Where the devices controller (cgroup v1) is mounted, and this process's cgroup in it. */
static int find_cgroup(char *mnt, size_t mlen, char *rel, size_t rlen, char *err, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	mnt[0] = rel[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		char point[1024], fstype[64], source[256], opts[1024];
		if (!sep || sscanf(line, "%*s %*s %*s %*s %1023s", point) != 1 ||
		    sscanf(sep + 3, "%63s %255s %1023s", fstype, source, opts) != 3 || strcmp(fstype, "cgroup"))
			continue;
		char *save = NULL;
		for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
			if (!strcmp(o, "devices"))
				snprintf(mnt, mlen, "%s", point);
	}
	if (f)
		fclose(f);
	f = fopen("/proc/self/cgroup", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		char *save = NULL;
		for (char *o = strtok_r(c1 + 1, ",", &save); o; o = strtok_r(NULL, ",", &save))
			if (!strcmp(o, "devices")) {
				c2[1 + strcspn(c2 + 1, "\n")] = '\0';
				snprintf(rel, rlen, "%s", c2 + 1);
			}
	}
	if (f)
		fclose(f);
	if (!mnt[0] || !rel[0]) {
		snprintf(err, len,
		         "no cgroup v1 devices controller for this task: accelfs confines jobs "
		         "with it (cgroup v1, TaskPlugin=task/cgroup, ConstrainDevices=yes)");
		return -1;
	}
	return 0;
}

static int write_file(const char *path, const char *text, char *err, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		snprintf(err, len, "cannot write '%s' to %s: %s", text, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int apply(const char *cg, const struct rules *r, char *err, size_t len)
{
	char deny[4200], allow[4200], rule[64];
	snprintf(deny, sizeof(deny), "%s/devices.deny", cg);
	snprintf(allow, sizeof(allow), "%s/devices.allow", cg);
	/* v1 cannot carve an exception out of an allowed major (an allow only removes an exact
	 * deny), so start from nothing and allow every character major but the accelerators'. */
	if (write_file(deny, "a", err, len) || write_file(allow, "b *:* rwm", err, len) ||
	    write_file(allow, "c *:* m", err, len))
		return -1;
	FILE *f = fopen("/proc/devices", "re");
	if (!f) {
		snprintf(err, len, "cannot read /proc/devices: %s", strerror(errno));
		return -1;
	}
	char line[256];
	int chr = 0, rc = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		unsigned major;
		if (!strncmp(line, "Character", 9))
			chr = 1;
		else if (!strncmp(line, "Block", 5))
			chr = 0;
		else if (chr && sscanf(line, "%u", &major) == 1 && !is_accel_major(r, major)) {
			snprintf(rule, sizeof(rule), "c %u:* rwm", major);
			rc = write_file(allow, rule, err, len);
		}
	}
	fclose(f);
	for (size_t i = 0; !rc && i < r->nallow; i++) {
		snprintf(rule, sizeof(rule), "c %u:%u rwm", r->allow[i].major, r->allow[i].minor);
		rc = write_file(allow, rule, err, len);
	}
	return rc;
}

int devcg_confine(const char *mount, uint32_t jobid, uint32_t taskid, char *err, size_t len)
{
	static struct rules r; /* large; this runs once in a single-threaded task */
	char mnt[1024], rel[2048], cg[4096], marker[64];
	memset(&r, 0, sizeof(r));
	if (collect(mount, jobid, &r, err, len) < 0 || find_cgroup(mnt, sizeof(mnt), rel, sizeof(rel), err, len) < 0)
		return -1;
	snprintf(marker, sizeof(marker), "/job_%u/", jobid);
	char relslash[2100];
	snprintf(relslash, sizeof(relslash), "%s/", rel);
	if (!strstr(relslash, marker)) {
		snprintf(err, len,
		         "the task is in devices cgroup %s, not in job %u's: set TaskPlugin=task/cgroup "
		         "and ConstrainDevices=yes (cgroup.conf)",
		         rel, jobid);
		return -1;
	}
	/* Slurm moves each task from the step's cgroup into task_<id> below it while the task
	 * already runs; go there first, so the rules are not written where every task of the
	 * step (and a later task cgroup copying them) would share them. */
	const char *base = strrchr(rel, '/');
	snprintf(cg, sizeof(cg), "%s%s", mnt, rel);
	if (base && !strncmp(base + 1, "step_", 5)) {
		char procs[4200], pid[32];
		snprintf(cg, sizeof(cg), "%s%s/task_%u", mnt, rel, taskid);
		if (mkdir(cg, 0755) < 0 && errno != EEXIST) {
			snprintf(err, len, "cannot make the task cgroup %s: %s", cg, strerror(errno));
			return -1;
		}
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		if (write_file(procs, pid, err, len) < 0)
			return -1;
	}
	return apply(cg, &r, err, len);
}
