/* SPDX-License-Identifier: MIT */
/* mig-bench: the mounts it measures against, and leaving nothing behind. */
#include "mig_bench.h"

/* ---- setup ------------------------------------------------------------ */

const char *accelfs_path, *smi_path, *bare_path;
const char *poll_interval = "600";
unsigned cycles = 200, reads;
int bare_entries = -1; /* -1: as many as the profile directory holds */
char base[PATH_MAX];
/*
 * What lives in memory on a real node lives in tmpfs here: the simulated
 * hardware (a real card's instances are the driver's, in kernel memory, and
 * /proc and /dev are not on disk) and the CDI specs (/var/run/cdi).  Only the
 * ownership records stay on the state filesystem, where the baseline's three
 * durable operations run.  (Leaving the simulator's files on an ext4 mounted
 * with `discard` costs a carve cycle about 0.4 ms more: every instance
 * destroyed unlinks its capability files, each a synchronous discard.)
 */
char runtime[PATH_MAX];

struct mnt bare = { .label = "bare" }, node = { .label = "node", .accelfs = true },
	   node4 = { .label = "4 cards", .accelfs = true }, node64 = { .label = "64 cards", .accelfs = true };
/* Figure 7's (mig_bench_full.c), mounted for that figure alone. */
struct mnt node64e = { .label = "64 empty", .accelfs = true }, node64f = { .label = "64 full", .accelfs = true };
struct mnt *const all_mounts[] = { &node, &node4, &node64, &node64e, &node64f, &bare };

void unmount_mnt(struct mnt *m, bool wait_for_daemon)
{
	if (!m->mounted)
		return;
	for (int tries = 0; umount2(m->dir, 0) && errno == EBUSY && tries < 50; tries++)
		usleep(100 * 1000);
	umount2(m->dir, MNT_DETACH); /* EINVAL once the plain umount worked */
	m->mounted = false;
	/* the daemon exits once unmounted; its state directory is removed after */
	for (int tries = 0; wait_for_daemon && m->pid > 0 && kill(m->pid, 0) == 0 && tries < 100; tries++)
		usleep(100 * 1000);
}

void unmount_all(bool wait_for_daemons)
{
	for (unsigned i = 0; i < sizeof(all_mounts) / sizeof(all_mounts[0]); i++)
		unmount_mnt(all_mounts[i], wait_for_daemons);
}

void on_signal(int sig)
{
	(void)sig;
	for (unsigned i = 0; i < sizeof(all_mounts) / sizeof(all_mounts[0]); i++)
		if (all_mounts[i]->mounted)
			umount2(all_mounts[i]->dir, MNT_DETACH);
	_exit(130);
}

void cleanup(void)
{
	unmount_all(true);
	if (base[0])
		remove_tree(base);
	if (runtime[0])
		remove_tree(runtime);
}

void fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "mig-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	cleanup();
	exit(1);
}

/* rm -rf that never crosses into another filesystem (a mount left behind). */
void remove_tree(const char *path)
{
	struct stat top, st;
	char child[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (lstat(path, &top))
		return;
	if (!S_ISDIR(top.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	if (d) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
			if (lstat(child, &st))
				continue;
			if (S_ISDIR(st.st_mode) && st.st_dev == top.st_dev)
				remove_tree(child);
			else if (!S_ISDIR(st.st_mode))
				unlink(child);
		}
		closedir(d);
	}
	if (rmdir(path) && errno != ENOENT)
		fprintf(stderr, "mig-bench: could not remove %s: %s\n", path, strerror(errno));
}

int run_wait(char *const argv[])
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		fprintf(stderr, "mig-bench: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void wait_for_path(const char *path, double seconds)
{
	struct stat st;
	double until = now() + seconds;

	while (stat(path, &st)) {
		if (now() > until)
			fail("%s did not appear within %.0f s", path, seconds);
		usleep(20 * 1000);
	}
}

/* accelfs --sim[=TOPOLOGY] over m->state, mounted on m->dir; returns once it serves. */
void mount_accelfs(struct mnt *m, const char *name, const char *topology)
{
	char sim[PATH_MAX + 8], state[PATH_MAX + 16], poll[64], path[PATH_MAX + 32], cdi[PATH_MAX + 16],
		hw[PATH_MAX + 16];
	FILE *f;
	double t0 = now();
	int rc;

	snprintf(m->state, sizeof(m->state), "%s/state-%s", base, name);
	snprintf(m->dir, sizeof(m->dir), "%s/mnt-%s", base, name);
	if (mkdir(m->state, 0755) || mkdir(m->dir, 0755))
		fail("mkdir %s: %s", m->dir, strerror(errno));
	/* The simulated hardware (STATE/sim) and the CDI spec in the runtime directory. */
	snprintf(hw, sizeof(hw), "%s/sim-%s", runtime, name);
	snprintf(path, sizeof(path), "%s/sim", m->state);
	if (mkdir(hw, 0755) || symlink(hw, path))
		fail("%s -> %s: %s", path, hw, strerror(errno));
	snprintf(cdi, sizeof(cdi), "--cdi-dir=%s/cdi-%s", runtime, name);
	if (topology)
		snprintf(sim, sizeof(sim), "--sim=%s", topology);
	else
		snprintf(sim, sizeof(sim), "--sim");
	snprintf(state, sizeof(state), "--state-dir=%s", m->state);
	snprintf(poll, sizeof(poll), "--poll-interval=%s", poll_interval);
	rc = run_wait((char *const[]){ (char *)accelfs_path, sim, state, cdi, poll, m->dir, NULL });
	if (rc)
		fail("accelfs %s %s %s %s exited %d (its log: %s/accelfs.log)", sim, state, poll, m->dir, rc, m->state);
	m->mounted = true;
	snprintf(path, sizeof(path), "%s/accelfs.pid", m->state);
	f = fopen(path, "r");
	if (f) {
		int pid = 0;
		if (fscanf(f, "%d", &pid) == 1)
			m->pid = pid;
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/ppu3/mig", m->dir);
	wait_for_path(path, 30);
	printf("  mounted %-9s %s (%.2f s)\n", m->label, m->dir, now() - t0);
}

void mount_bare(unsigned entries, size_t status_bytes)
{
	char e[32], s[32], path[PATH_MAX + 8];
	int rc;

	snprintf(bare.dir, sizeof(bare.dir), "%s/mnt-bare", base);
	if (mkdir(bare.dir, 0755))
		fail("mkdir %s: %s", bare.dir, strerror(errno));
	snprintf(e, sizeof(e), "--entries=%u", entries);
	snprintf(s, sizeof(s), "--status-bytes=%zu", status_bytes);
	rc = run_wait((char *const[]){ (char *)bare_path, e, s, bare.dir, NULL });
	if (rc)
		fail("%s %s %s %s exited %d", bare_path, e, s, bare.dir, rc);
	bare.mounted = true;
	snprintf(path, sizeof(path), "%s/d/status", bare.dir);
	wait_for_path(path, 10);
	printf("  mounted %-9s %s (d: status + %u entries, status %zu bytes)\n", bare.label, bare.dir, entries,
	       status_bytes);
}

void write_topology(const char *path, unsigned cards)
{
	FILE *f = fopen(path, "w");

	if (!f)
		fail("%s: %s", path, strerror(errno));
	/* sim/topologies' format: the built-in T-Head section with COUNT cards, no NVIDIA GPU. */
	fprintf(f,
	        "{\n  \"_comment\": \"mig-bench: %u T-Head PPUs of the built-in kind, no GPU\",\n"
	        "  \"thead\": { \"count\": %u },\n  \"nvidia\": null\n}\n",
	        cards, cards);
	if (fclose(f))
		fail("%s: %s", path, strerror(errno));
}

/* The first profile directory under CARD/mig (alphabetically): "4g.48gb" on a PPU. */
void first_profile(const struct mnt *m, const char *card, char *out, size_t len)
{
	char path[PATH_MAX + 64], best[256] = "";
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s/mig", m->dir, card);
	d = opendir(path);
	if (!d)
		fail("%s: %s", path, strerror(errno));
	while ((e = readdir(d))) {
		struct stat st;
		char p[PATH_MAX + 400];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (stat(p, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (!best[0] || strcmp(e->d_name, best) < 0)
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	closedir(d);
	if (!best[0])
		fail("%s holds no profile directory", path);
	snprintf(out, len, "%s/%s", path, best);
}
