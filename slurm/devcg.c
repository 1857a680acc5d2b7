/* SPDX-License-Identifier: MIT */
/* A Slurm task's device nodes, confined to its own job's accelerator nodes (devcg.h). */
#include "devcg.h"
#include "devcg_bpf.h"
#include "mig_jobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Device drivers accelfs serves, by their name in /proc/devices (the T-Head and NVIDIA families). */
static const char *const accel_drivers[] = {
	"alixpu",      "alixpu_ctl",      "alixpu-caps",   "nvidia",          "nvidiactl", "nvidia-uvm",
	"nvidia-caps", "nvidia-frontend", "nvidia-nvlink", "nvidia-nvswitch", NULL,
};

int devcg_parse_mode(const char *text, enum devcg_mode *mode)
{
	if (!strcmp(text, "auto"))
		*mode = DEVCG_AUTO;
	else if (!strcmp(text, "v1"))
		*mode = DEVCG_V1;
	else if (!strcmp(text, "v2"))
		*mode = DEVCG_V2;
	else
		return -1;
	return 0;
}

static void add_major(struct devcg_rules *r, unsigned major)
{
	for (size_t i = 0; i < r->nmajors; i++)
		if (r->majors[i] == major)
			return;
	if (r->nmajors < DEVCG_MAX_MAJORS)
		r->majors[r->nmajors++] = major;
}

static int is_accel_major(const struct devcg_rules *r, unsigned major)
{
	for (size_t i = 0; i < r->nmajors; i++)
		if (r->majors[i] == major)
			return 1;
	return 0;
}

/* The character majors of a file in /proc/devices' format whose driver is an accelerator's. */
static int scan_proc_devices(const char *path, struct devcg_rules *r, char *err, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
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
	return 0;
}

int devcg_host_majors(const struct devcg_config *cfg, struct devcg_rules *r, char *err, size_t len)
{
	if (scan_proc_devices("/proc/devices", r, err, len) < 0)
		return -1;
	for (size_t i = 0; i < cfg->nproc_devices; i++)
		if (scan_proc_devices(cfg->proc_devices[i], r, err, len) < 0)
			return -1;
	return 0;
}

/*
 * Lines "<path> c <major>:<minor>" (a job's `devices`) or "node: <path> c M:m"
 * (a card's `info`): every character node's major is an accelerator major;
 * with `allow`, the node itself is one the task may open.
 */
static int scan_nodes(const char *path, struct devcg_rules *r, int allow, char *err, size_t len)
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
		if (allow && r->nallow < DEVCG_MAX_NODES)
			r->allow[r->nallow++] = (struct devcg_node){ major, minor };
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

int devcg_job_nodes(const char *mount, uint32_t jobid, struct devcg_rules *r, char *err, size_t len)
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
	/* Every job's nodes, whoever made it: on a node whose drivers' names we do not know,
	 * capability majors appear only there. */
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
	return rc;
}

/*
 * Where a hierarchy is mounted: the v1 one carrying the devices controller
 * (v2 0), or the unified one (v2 1).  "" when none is.
 */
static void find_mount(int v2, char *mnt, size_t mlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	mnt[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		char point[1024], fstype[64], source[256], opts[1024];
		if (!sep || sscanf(line, "%*s %*s %*s %*s %1023s", point) != 1 ||
		    sscanf(sep + 3, "%63s %255s %1023s", fstype, source, opts) != 3)
			continue;
		if (v2) {
			if (!strcmp(fstype, "cgroup2") && !mnt[0])
				snprintf(mnt, mlen, "%s", point);
			continue;
		}
		if (strcmp(fstype, "cgroup"))
			continue;
		char *save = NULL;
		for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
			if (!strcmp(o, "devices"))
				snprintf(mnt, mlen, "%s", point);
	}
	if (f)
		fclose(f);
}

/*
 * This process's cgroup in the v1 hierarchy carrying devices (v2 0) or in
 * the unified one (v2 1: the "0::" line).  "" when it has none.
 */
static void find_own_cgroup(int v2, char *rel, size_t rlen)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	rel[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		if (v2) {
			if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1)
				snprintf(rel, rlen, "%s", c2 + 1);
			continue;
		}
		char *save = NULL;
		for (char *o = strtok_r(c1 + 1, ",", &save); o; o = strtok_r(NULL, ",", &save))
			if (!strcmp(o, "devices"))
				snprintf(rel, rlen, "%s", c2 + 1);
	}
	if (f)
		fclose(f);
}

/* v1 where this task has a mounted devices controller, else v2 where it has a unified cgroup. */
static int pick_mode(enum devcg_mode want, char *mnt, size_t mlen, char *rel, size_t rlen, char *err, size_t len)
{
	int v2 = want == DEVCG_V2;
	find_mount(v2, mnt, mlen);
	find_own_cgroup(v2, rel, rlen);
	if (want == DEVCG_AUTO && (!mnt[0] || !rel[0])) {
		v2 = 1;
		find_mount(v2, mnt, mlen);
		find_own_cgroup(v2, rel, rlen);
	}
	if (mnt[0] && rel[0])
		return v2;
	if (want == DEVCG_V1)
		snprintf(err, len,
		         "cgroup=v1, but this task has no cgroup v1 devices controller: set cgroup=auto, or "
		         "CgroupPlugin=cgroup/v1 and ConstrainDevices=yes (cgroup.conf)");
	else if (want == DEVCG_V2)
		snprintf(err, len,
		         "cgroup=v2, but no cgroup v2 hierarchy is mounted for this task: set cgroup=auto, or "
		         "CgroupPlugin=cgroup/v2 and ConstrainDevices=yes (cgroup.conf)");
	else
		snprintf(err, len,
		         "this task has neither a cgroup v1 devices controller nor a cgroup v2 hierarchy mounted: "
		         "accelfs confines a task with one of them (TaskPlugin=task/cgroup, ConstrainDevices=yes)");
	return -1;
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

static int apply_v1(const char *cg, const struct devcg_rules *r, char *err, size_t len)
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

/*
 * The task's own cgroup, relative to the hierarchy's root: Slurm forks a
 * task in the step's cgroup (v1) or the step's "slurm" leaf, beside the
 * step daemon (v2), and moves it into task_<id> (v1: step_<s>/task_<id>; v2:
 * step_<s>/user/task_<id>) while it already runs.  Rules written where it
 * starts would be shared by every task of the step, and on v2 by slurmstepd
 * itself; so the task goes to its own cgroup first.
 */
static int task_cgroup(int v2, const char *rel, uint32_t jobid, uint32_t taskid, char *out, size_t olen, char *err,
                       size_t len)
{
	char marker[64], relslash[2100];
	snprintf(marker, sizeof(marker), "/job_%u/", jobid);
	snprintf(relslash, sizeof(relslash), "%s/", rel);
	const char *job = strstr(relslash, marker);
	if (!job) {
		snprintf(err, len,
		         "the task is in %s cgroup %s, not in job %u's: set TaskPlugin=task/cgroup and "
		         "ConstrainDevices=yes (cgroup.conf)",
		         v2 ? "the cgroup v2" : "devices", rel, jobid);
		return -1;
	}
	const char *step = strstr(job + strlen(marker) - 1, "/step_");
	if (!step) {
		snprintf(out, olen, "%s", rel); /* below the job, in no step: Slurm's own layout is not ours to guess */
		return 0;
	}
	const char *step_end = strchr(step + 1, '/');
	size_t step_len = (size_t)((step_end ? step_end : relslash + strlen(relslash)) - relslash);
	/* Already in task_<n>.  Not task_special: on v2 Slurm parks a step's other processes there,
	 * and a task that starts in it is moved out, after which Slurm removes it (a program attached
	 * there would be lost, and the attach answers ENOENT once it is gone). */
	const char *base = strrchr(rel, '/');
	if (base && !strncmp(base + 1, "task_", 5) && base[6] && strspn(base + 6, "0123456789") == strlen(base + 6)) {
		snprintf(out, olen, "%s", rel);
		return 0;
	}
	snprintf(out, olen, "%.*s%s/task_%u", (int)step_len, relslash, v2 ? "/user" : "", taskid);
	return 0;
}

/* mkdir -p of rel below root (which exists). */
static int make_below(const char *root, const char *rel, char *err, size_t len)
{
	char path[4096];
	size_t rlen = strlen(root);
	snprintf(path, sizeof(path), "%s%s/", root, rel);
	for (char *slash = strchr(path + rlen + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			snprintf(err, len, "cannot make the task cgroup %s: %s", path, strerror(errno));
			return -1;
		}
		*slash = '/';
	}
	return 0;
}

int devcg_confine(const struct devcg_config *cfg, uint32_t jobid, uint32_t taskid, int with_partitions, char *err,
                  size_t len)
{
	static struct devcg_rules r; /* large; this runs once in a single-threaded task */
	char mnt[1024], rel[2048], task[2200], cg[4096];
	memset(&r, 0, sizeof(r));
	if (devcg_host_majors(cfg, &r, err, len) < 0)
		return -1;
	/* Only a job that asked for partitions needs accelfs: its own nodes are known there. */
	if (with_partitions && devcg_job_nodes(cfg->mount, jobid, &r, err, len) < 0)
		return -1;
	if (r.nmajors == 0)
		return 0; /* no accelerator driver on this host, none in accelfs: nothing to keep away */
	int v2 = pick_mode(cfg->mode, mnt, sizeof(mnt), rel, sizeof(rel), err, len);
	if (v2 < 0 || task_cgroup(v2, rel, jobid, taskid, task, sizeof(task), err, len) < 0)
		return -1;
	snprintf(cg, sizeof(cg), "%s%s", mnt, task);
	if (strcmp(task, rel)) {
		char procs[4200], pid[32];
		if (make_below(mnt, task, err, len) < 0)
			return -1;
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		if (write_file(procs, pid, err, len) < 0)
			return -1;
	}
	return v2 ? devcg_bpf_attach(cg, &r, err, len) : apply_v1(cg, &r, err, len);
}
