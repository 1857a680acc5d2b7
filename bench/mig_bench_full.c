/* SPDX-License-Identifier: MIT */
/*
 * mig-bench, figure 7: what a full node costs.  Two 64-card nodes of the
 * same topology, mounted for this figure alone: one with no job, one with
 * 126 (two on every card but ppu3, half of them made through the
 * node-level mig/ and every one read through both of its paths, so the
 * kernel knows their files as a busy node's does).  A carve cycle on ppu3
 * of the full node against the same cycle on the empty one, interleaved;
 * a status read on the full node against the bare FUSE floor; and what the
 * full node's CDI spec files weigh against what one cycle writes.
 */
#include "mig_bench.h"

/* The profile directory's name ("4g.48gb" of ".../ppu3/mig/4g.48gb"). */
static const char *last_component(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Make job on card (device level) or through mig/ (node level), and read its status through both paths. */
static void make_and_read(const struct mnt *m, unsigned card, const char *job, bool node_level)
{
	char prof[PATH_MAX], path[PATH_MAX + 128], link[PATH_MAX];
	const char *name;
	ssize_t n;

	snprintf(path, sizeof(path), "ppu%u", card);
	first_profile(m, path, prof, sizeof(prof));
	name = last_component(prof);
	if (node_level)
		snprintf(path, sizeof(path), "%s/mig/%s/%s", m->dir, name, job);
	else
		snprintf(path, sizeof(path), "%s/%s", prof, job);
	if (mkdir(path, 0755))
		fail("mkdir %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/mig/%s/%s/status", m->dir, name, job);
	mb_op_read(path);
	/* device -> ../../../ppuN/mig/<profile>/<job>: the job's own directory */
	snprintf(path, sizeof(path), "%s/mig/%s/%s/device", m->dir, name, job);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < (ssize_t)strlen("../../../"))
		fail("readlink %s: %s", path, n < 0 ? strerror(errno) : "too short");
	link[n] = '\0';
	snprintf(path, sizeof(path), "%s/%s/status", m->dir, link + strlen("../../../"));
	mb_op_read(path);
}

/* Spec files in a CDI directory and their bytes. */
static void cdi_weight(const char *name, unsigned *files, long long *bytes)
{
	char dir[PATH_MAX + 32], path[PATH_MAX * 2];
	struct dirent *e;
	struct stat st;
	DIR *d;

	*files = 0;
	*bytes = 0;
	snprintf(dir, sizeof(dir), "%s/cdi-%s", runtime, name);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!stat(path, &st)) {
			(*files)++;
			*bytes += st.st_size;
		}
	}
	closedir(d);
}

void figure_full_node(const char *topology, const char *bare_status, double *sa, double *sb)
{
	char prof_e[PATH_MAX], prof_f[PATH_MAX], status[PATH_MAX + 64], job[32];
	unsigned files, jobs = 0;
	long long bytes;
	struct stats a, b;
	struct row *r;

	printf("7: a full node vs an empty one\n");
	mount_accelfs(&node64e, "empty", topology);
	mount_accelfs(&node64f, "full", topology);
	for (unsigned c = 0; c < 64; c++) {
		if (c == 3)
			continue;
		snprintf(job, sizeof(job), "full%ua", c);
		make_and_read(&node64f, c, job, false);
		snprintf(job, sizeof(job), "full%ub", c);
		make_and_read(&node64f, c, job, true); /* lands beside full<c>a: the half-used card costs least */
		jobs += 2;
	}
	first_profile(&node64e, "ppu3", prof_e, sizeof(prof_e));
	first_profile(&node64f, "ppu3", prof_f, sizeof(prof_f));
	first_profile(&node64f, "ppu1", status, sizeof(status) - 16);
	strcat(status, "/full1a/status");
	mb_op_read(status);
	mb_settle();
	{
		struct op full = { mb_do_cycle, prof_f, "bench-job", NULL, NULL },
			  empty = { mb_do_cycle, prof_e, "bench-job", NULL, NULL };
		char what[64];

		cdi_weight("full", &files, &bytes);
		mb_sample_pair(&full, sa, &empty, sb, cycles);
		a = mb_stats_of(sa, cycles);
		b = mb_stats_of(sb, cycles);
		snprintf(what, sizeof(what), "mkdir+rmdir, 64 cards with %u jobs vs none", jobs);
		mb_row_time("7", what, a.mean, b.mean, 1.2);
		mb_row_time(" ", "  p50", a.p50, b.p50, 0);
		mb_row_time(" ", "  p99", a.p99, b.p99, 0);
	}
	{
		struct op ours = { mb_do_read, status, NULL, NULL, NULL },
			  flat = { mb_do_read, bare_status, NULL, NULL, NULL };

		mb_sample_pair(&ours, sa, &flat, sb, reads);
		a = mb_stats_of(sa, reads);
		b = mb_stats_of(sb, reads);
		mb_row_time("7", "status read on the full node vs bare d/status", a.mean, b.mean, 1.2);
		mb_row_time(" ", "  p99", a.p99, b.p99, 0);
	}
	r = mb_add_row(" ", "  CDI spec files of the full node: files, bytes");
	snprintf(r->ours, sizeof(r->ours), "%u", files);
	snprintf(r->base, sizeof(r->base), "%lld B", bytes);
	if (files)
		snprintf(r->ratio, sizeof(r->ratio), "%lld B/file", bytes / files);
	snprintf(r->goal, sizeof(r->goal), "one file per change");
	figure_watcher(&node64f, jobs);
	unmount_mnt(&node64f, true);
	unmount_mnt(&node64e, true);
}
