/* SPDX-License-Identifier: MIT */
/*
 * mig-bench: every figure of the "Speed" issue (docs/performance.md), each
 * against its baseline measured in this same run, as a ratio.  As root it
 * mounts, each over a state directory and mountpoint of its own in one
 * temporary directory (so the durable-record baseline runs on the
 * filesystem the daemon's records live on; the simulated hardware and the
 * CDI specs are kept in tmpfs, as on a real node):
 *
 *   bare     bench/bare_fuse.c: the bare low-level FUSE floor (d/status
 *            with keep_cache, 1 s timeouts, in-memory mkdir/rmdir in d)
 *   node     accelfs --sim: the built-in node (16 PPUs, one H200)
 *   4, 64    accelfs --sim on generated T-Head topologies of 4 and 64 cards
 *
 * and measures:
 *
 *   1  driver calls per mkdir+rmdir on an idle card, per family, from the
 *      simulators' own counters (accel-smi sim calls): on the card, on the
 *      other family's cards, and how the count grows from 4 to 64 cards
 *   2  mkdir+rmdir of a job against bare FUSE mkdir+rmdir plus three
 *      durable record operations (write+fsync+rename+fsync(dir) of ~500
 *      bytes twice, unlink+fsync(dir) once) in the state filesystem
 *   3  carve cycle and status read on the 64-card node against the 4-card one
 *   4  open+read+close of a job's status against bare d/status; listing a
 *      profile directory against listing bare d (as many entries); p50, p99
 *   5  vram and slot swap: the dies benchmark (meson test --benchmark dies)
 *   6  p99 of a status read while another thread carves in a loop on another
 *      card, against the idle p99, and against the p99 while a thread runs
 *      the carve baseline's work in a loop (bare FUSE mkdir+rmdir and the
 *      three durable records: the same load on the machine, no engine);
 *      two carvers on two cards against one
 *
 * Operations of a pair are interleaved in rounds, so that drift in the
 * machine falls on both sides.  Nothing is asserted about time: the exit
 * status is 0 unless something failed functionally (a mount, a mkdir, a
 * read).  Every accelfs runs with --poll-interval=600 unless told otherwise,
 * so that the figures are the operations' own (and the call counts exact),
 * not a background pass of the poller.
 *
 *   mig-bench ACCELFS ACCEL_SMI BARE_FUSE [CYCLES] [--dir=DIR] [--poll-interval=SEC]
 *
 * (or the paths in $ACCELFS, $ACCEL_SMI, $BARE_FUSE).  CYCLES (default 200)
 * is the number of carve cycles per side of a figure; reads are 20x that.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10
#define RECORD_BYTES 500
#define MAX_FUNCS 128

/* ---- setup ------------------------------------------------------------ */

static const char *accelfs_path, *smi_path, *bare_path;
static const char *poll_interval = "600";
static unsigned cycles = 200, reads;
static int bare_entries = -1; /* -1: as many as the profile directory holds */
static char base[PATH_MAX];
/*
 * What lives in memory on a real node lives in tmpfs here: the simulated
 * hardware (a real card's instances are the driver's, in kernel memory, and
 * /proc and /dev are not on disk) and the CDI specs (/var/run/cdi).  Only the
 * ownership records stay on the state filesystem, where the baseline's three
 * durable operations run.  (Leaving the simulator's files on an ext4 mounted
 * with `discard` costs a carve cycle about 0.4 ms more: every instance
 * destroyed unlinks its capability files, each a synchronous discard.)
 */
static char runtime[PATH_MAX];

struct mnt {
	const char *label;
	char state[PATH_MAX]; /* accelfs only */
	char dir[PATH_MAX];
	bool mounted;
	bool accelfs;
	pid_t pid; /* accelfs: the daemon, read from its pid file */
};
static struct mnt bare = { .label = "bare" }, node = { .label = "node", .accelfs = true },
		  node4 = { .label = "4 cards", .accelfs = true }, node64 = { .label = "64 cards", .accelfs = true };
static struct mnt *const all_mounts[] = { &node, &node4, &node64, &bare };

static void unmount_all(bool wait_for_daemons)
{
	for (unsigned i = 0; i < sizeof(all_mounts) / sizeof(all_mounts[0]); i++) {
		struct mnt *m = all_mounts[i];

		if (!m->mounted)
			continue;
		for (int tries = 0; umount2(m->dir, 0) && errno == EBUSY && tries < 50; tries++)
			usleep(100 * 1000);
		umount2(m->dir, MNT_DETACH); /* EINVAL once the plain umount worked */
		m->mounted = false;
		/* the daemon exits once unmounted; its state directory is removed after */
		for (int tries = 0; wait_for_daemons && m->pid > 0 && kill(m->pid, 0) == 0 && tries < 100; tries++)
			usleep(100 * 1000);
	}
}

static void on_signal(int sig)
{
	(void)sig;
	for (unsigned i = 0; i < sizeof(all_mounts) / sizeof(all_mounts[0]); i++)
		if (all_mounts[i]->mounted)
			umount2(all_mounts[i]->dir, MNT_DETACH);
	_exit(130);
}

static void remove_tree(const char *path);

static void cleanup(void)
{
	unmount_all(true);
	if (base[0])
		remove_tree(base);
	if (runtime[0])
		remove_tree(runtime);
}

static void fail(const char *fmt, ...)
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
static void remove_tree(const char *path)
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

static int run_wait(char *const argv[])
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

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wait_for_path(const char *path, double seconds)
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
static void mount_accelfs(struct mnt *m, const char *name, const char *topology)
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

static void mount_bare(unsigned entries, size_t status_bytes)
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

static void write_topology(const char *path, unsigned cards)
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
static void first_profile(const struct mnt *m, const char *card, char *out, size_t len)
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

/* ---- operations (each fails the run when it fails functionally) ------- */

static char buf_sink[65536];

static size_t op_read(const char *path)
{
	ssize_t n;
	size_t total = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	while ((n = read(fd, buf_sink, sizeof(buf_sink))) > 0)
		total += (size_t)n;
	if (n < 0)
		fail("read %s: %s", path, strerror(errno));
	close(fd);
	if (!total)
		fail("%s read empty", path);
	return total;
}

static unsigned op_list(const char *path)
{
	unsigned n = 0;
	DIR *d = opendir(path);

	if (!d)
		fail("opendir %s: %s", path, strerror(errno));
	while (readdir(d))
		n++;
	closedir(d);
	if (n < 3)
		fail("%s listed %u entries", path, n);
	return n;
}

/* mkdir + rmdir of DIR/JOB */
static void op_cycle(const char *dir, const char *job)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, job);
	if (mkdir(path, 0755))
		fail("mkdir %s: %s", path, strerror(errno));
	if (rmdir(path))
		fail("rmdir %s: %s", path, strerror(errno));
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd))
		fail("fsync %s: %s", dir, strerror(errno));
	close(fd);
}

/* What core/fileio.c's durable write does: tmp, write, fsync, rename, fsync of the directory. */
static void durable_write(const char *dir, const char *path, const char *data, size_t len)
{
	char tmp[PATH_MAX + 32];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || fsync(fd) || close(fd) || rename(tmp, path))
		fail("durable write %s: %s", path, strerror(errno));
	fsync_dir(dir);
}

static char records_dir[PATH_MAX], record_path[PATH_MAX + 32];
static char record_made[RECORD_BYTES], record_removing[RECORD_BYTES];

/* The three durable record operations of a carve and its reclaim: made, removing, gone. */
static void op_records(void)
{
	durable_write(records_dir, record_path, record_made, sizeof(record_made));
	durable_write(records_dir, record_path, record_removing, sizeof(record_removing));
	if (unlink(record_path))
		fail("unlink %s: %s", record_path, strerror(errno));
	fsync_dir(records_dir);
}

/*
 * Between figures: what the last one left dirty (records, the simulators'
 * state files) is written out now, not during the next figure's samples.
 */
static void settle(void)
{
	sync();
	usleep(200 * 1000);
}

/* ---- statistics ------------------------------------------------------- */

struct stats {
	double mean, p50, p99; /* microseconds */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct stats stats_of(const double *v, unsigned n)
{
	struct stats s = { 0, 0, 0 };
	double *c = malloc(n * sizeof(*c));

	if (!c || !n)
		fail("no samples");
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	for (unsigned i = 0; i < n; i++)
		s.mean += c[i];
	s.mean /= n;
	/* nearest rank */
	s.p50 = c[(n * 50 + 99) / 100 - 1];
	s.p99 = c[(n * 99 + 99) / 100 - 1];
	free(c);
	return s;
}

/* An operation to time: fn(a, b) once per sample. */
struct op {
	void (*fn)(const struct op *);
	const char *a, *b;
	double *part1, *part2; /* optional: component times of the sample, microseconds */
};

static unsigned sample_index;

static void do_read(const struct op *o)
{
	op_read(o->a);
}

static void do_list(const struct op *o)
{
	op_list(o->a);
}

static void do_cycle(const struct op *o)
{
	op_cycle(o->a, o->b);
}

/* The carve baseline: bare FUSE mkdir + rmdir, then the three durable record operations. */
static void do_bare_cycle_records(const struct op *o)
{
	double t0 = now(), t1;

	op_cycle(o->a, o->b);
	t1 = now();
	op_records();
	o->part1[sample_index] = (t1 - t0) * 1e6;
	o->part2[sample_index] = (now() - t1) * 1e6;
}

/* n samples of each, interleaved in ROUNDS rounds, after a short warm-up. */
static void sample_pair(const struct op *a, double *sa, const struct op *b, double *sb, unsigned n)
{
	unsigned rounds = n >= ROUNDS ? ROUNDS : 1, done = 0;
	double *scratch1 = NULL, *scratch2 = NULL;
	struct op wa = *a, wb = *b;

	/* the warm-up writes its component times into a scratch slot */
	if (wb.part1) {
		scratch1 = calloc(1, sizeof(double));
		scratch2 = calloc(1, sizeof(double));
		wb.part1 = scratch1;
		wb.part2 = scratch2;
	}
	sample_index = 0;
	for (int i = 0; i < 3; i++) {
		wa.fn(&wa);
		wb.fn(&wb);
	}
	free(scratch1);
	free(scratch2);
	for (unsigned r = 0; r < rounds; r++) {
		unsigned per = r + 1 == rounds ? n - done : n / rounds;
		for (unsigned side = 0; side < 2; side++) {
			/* a then b in even rounds, b then a in odd ones: neither always follows the other */
			bool first = (side == 0) == (r % 2 == 0);
			const struct op *o = first ? a : b;
			double *out = first ? sa : sb;
			for (unsigned i = 0; i < per; i++) {
				double t0 = now();
				sample_index = done + i;
				o->fn(o);
				out[done + i] = (now() - t0) * 1e6;
			}
		}
		done += per;
	}
}

/* ---- the table -------------------------------------------------------- */

struct row {
	char fig[4], what[64], ours[24], base[24], ratio[16], goal[28], met[6];
};
static struct row rows[64];
static unsigned n_rows;

static struct row *add_row(const char *fig, const char *what)
{
	struct row *r;

	if (n_rows == sizeof(rows) / sizeof(rows[0]))
		fail("too many rows");
	r = &rows[n_rows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->fig, sizeof(r->fig), "%s", fig);
	snprintf(r->what, sizeof(r->what), "%s", what);
	snprintf(r->ours, sizeof(r->ours), "-");
	snprintf(r->base, sizeof(r->base), "-");
	snprintf(r->ratio, sizeof(r->ratio), "-");
	snprintf(r->goal, sizeof(r->goal), "-");
	snprintf(r->met, sizeof(r->met), "-");
	return r;
}

static void fmt_us(char *out, size_t len, double us)
{
	if (us >= 1000.0)
		snprintf(out, len, "%.2f ms", us / 1000.0);
	else
		snprintf(out, len, "%.1f us", us);
}

/* A time against its baseline; goal_max > 0: the ratio must stay at or under it. */
static void row_time(const char *fig, const char *what, double ours, double base_us, double goal_max)
{
	struct row *r = add_row(fig, what);

	fmt_us(r->ours, sizeof(r->ours), ours);
	fmt_us(r->base, sizeof(r->base), base_us);
	snprintf(r->ratio, sizeof(r->ratio), "%.2fx", ours / base_us);
	if (goal_max > 0) {
		snprintf(r->goal, sizeof(r->goal), "<= %.1fx", goal_max);
		snprintf(r->met, sizeof(r->met), "%s", ours / base_us <= goal_max ? "yes" : "NO");
	}
}

static void print_table(void)
{
	printf("\n%-3s %-52s %12s %12s %9s %-17s %s\n", "fig", "what", "accelfs", "baseline", "ratio", "goal", "met");
	for (int i = 0; i < 114; i++)
		putchar('-');
	putchar('\n');
	for (unsigned i = 0; i < n_rows; i++) {
		struct row *r = &rows[i];
		if (i && strcmp(r->fig, rows[i - 1].fig) && r->fig[0] != ' ')
			putchar('\n');
		printf("%-3s %-52s %12s %12s %9s %-17s %s\n", r->fig, r->what, r->ours, r->base, r->ratio, r->goal,
		       r->met);
	}
}

/* ---- driver calls (accel-smi sim calls) -------------------------------- */

struct calls {
	bool ok;
	unsigned n;
	char fn[MAX_FUNCS][64];
	double count[MAX_FUNCS];
};

static bool calls_absent_said;

/* accel-smi --sim=STATE -f FAMILY sim calls [--reset]; false (and said once) when it cannot. */
static bool smi_calls(const struct mnt *m, const char *family, bool reset, struct calls *out)
{
	char cmd[3 * PATH_MAX], line[256], msg[1024] = "";
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd), "'%s' --sim='%s' -f %s sim calls%s 2>&1", smi_path, m->state, family,
	         reset ? " --reset" : "");
	fflush(stdout);
	p = popen(cmd, "r");
	if (!p)
		fail("popen %s: %s", cmd, strerror(errno));
	if (out)
		memset(out, 0, sizeof(*out));
	while (fgets(line, sizeof(line), p)) {
		char name[64];
		unsigned long long c;
		if (out && sscanf(line, "%63s %llu", name, &c) == 2 && out->n < MAX_FUNCS) {
			snprintf(out->fn[out->n], sizeof(out->fn[0]), "%s", name);
			out->count[out->n++] = (double)c;
		} else if (strlen(msg) + strlen(line) < sizeof(msg)) {
			strcat(msg, line);
		}
	}
	status = pclose(p);
	if (status != 0) {
		if (!calls_absent_said)
			printf("  (accel-smi -f %s sim calls failed, so no call counts: %s)\n", family,
			       msg[0] ? msg : "no message");
		calls_absent_said = true;
		return false;
	}
	if (out)
		out->ok = true;
	return true;
}

static double calls_total(const struct calls *c)
{
	double t = 0;

	for (unsigned i = 0; i < c->n; i++)
		t += c->count[i];
	return t;
}

/* out = (a - b) / k, function by function */
static void calls_per(const struct calls *a, const struct calls *b, unsigned k, struct calls *out)
{
	memset(out, 0, sizeof(*out));
	out->ok = a->ok && b->ok;
	for (unsigned i = 0; i < a->n; i++) {
		double v = a->count[i];
		for (unsigned j = 0; j < b->n; j++)
			if (!strcmp(a->fn[i], b->fn[j]))
				v -= b->count[j];
		if (v != 0 && out->n < MAX_FUNCS) {
			snprintf(out->fn[out->n], sizeof(out->fn[0]), "%s", a->fn[i]);
			out->count[out->n++] = v / k;
		}
	}
}

static const char *const families[2] = { "ppu", "gpu" };

/*
 * Driver calls per repetition of what(arg), for each family present: the
 * counters zeroed, k repetitions, the counters read; minus the same with no
 * repetition (accel-smi's own Init_v2 and Shutdown, and anything else the
 * daemon does meanwhile).
 */
static void count_calls(const struct mnt *m, unsigned n_fam, void (*what)(const char *, const char *), const char *a1,
                        const char *a2, unsigned k, struct calls per[2])
{
	struct calls with[2], without[2];

	memset(with, 0, sizeof(with));
	memset(without, 0, sizeof(without));
	for (unsigned pass = 0; pass < 2; pass++) {
		unsigned reps = pass ? k : 0;
		struct calls *c = pass ? with : without;
		bool ok = true;
		for (unsigned f = 0; f < n_fam; f++)
			ok = smi_calls(m, families[f], true, NULL) && ok;
		for (unsigned i = 0; i < reps; i++)
			what(a1, a2);
		for (unsigned f = 0; f < n_fam; f++)
			if (!ok || !smi_calls(m, families[f], false, &c[f]))
				c[f].ok = false;
	}
	for (unsigned f = 0; f < n_fam; f++)
		calls_per(&with[f], &without[f], k, &per[f]);
}

static void read_as_call(const char *path, const char *unused)
{
	(void)unused;
	op_read(path);
}

static void calls_row(const char *fig, const char *what, const struct calls *c, const char *goal, double max)
{
	struct row *r = add_row(fig, what);

	if (!c->ok) {
		snprintf(r->ours, sizeof(r->ours), "n/a");
		snprintf(r->goal, sizeof(r->goal), "%s", goal);
		return;
	}
	snprintf(r->ours, sizeof(r->ours), "%.1f", calls_total(c));
	snprintf(r->goal, sizeof(r->goal), "%s", goal);
	if (max >= 0)
		snprintf(r->met, sizeof(r->met), "%s", calls_total(c) <= max + 1e-9 ? "yes" : "NO");
}

static char breakdown[8192];

static void note_breakdown(const char *label, const struct calls *c)
{
	size_t len = strlen(breakdown);

	if (!c->ok || !c->n)
		return;
	snprintf(breakdown + len, sizeof(breakdown) - len, "  %s (%.4g):", label, calls_total(c));
	for (unsigned i = 0, col = 1000; i < c->n; i++) {
		char item[96];
		int w = snprintf(item, sizeof(item), " %s %.4g", c->fn[i], c->count[i]);
		if (col + (unsigned)w > 110) { /* wrap, indented */
			len = strlen(breakdown);
			snprintf(breakdown + len, sizeof(breakdown) - len, "\n     ");
			col = 5;
		}
		len = strlen(breakdown);
		snprintf(breakdown + len, sizeof(breakdown) - len, "%s", item);
		col += (unsigned)w;
	}
	len = strlen(breakdown);
	snprintf(breakdown + len, sizeof(breakdown) - len, "\n");
}

/* ---- concurrency ------------------------------------------------------ */

struct carver {
	pthread_t thread;
	const char *dir, *job;
	unsigned limit; /* 0: until stop */
	bool baseline;  /* the carve baseline's work instead: bare FUSE mkdir+rmdir and three durable records */
	volatile bool stop;
	volatile unsigned done;
	int err;
	char what[PATH_MAX + 64];
};

static void *carver_main(void *arg)
{
	struct carver *c = arg;
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", c->dir, c->job);
	while (!c->stop && (!c->limit || c->done < c->limit)) {
		if (mkdir(path, 0755) || rmdir(path)) {
			c->err = errno;
			snprintf(c->what, sizeof(c->what), "mkdir/rmdir %s", path);
			break;
		}
		if (c->baseline)
			op_records();
		__atomic_add_fetch(&c->done, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void carver_start(struct carver *c, const char *dir, const char *job, unsigned limit, bool baseline)
{
	memset(c, 0, sizeof(*c));
	c->dir = dir;
	c->job = job;
	c->limit = limit;
	c->baseline = baseline;
	if (pthread_create(&c->thread, NULL, carver_main, c))
		fail("pthread_create");
}

static void carver_join(struct carver *c)
{
	pthread_join(c->thread, NULL);
	if (c->err)
		fail("%s: %s", c->what, strerror(c->err));
}

/* ---- main ------------------------------------------------------------- */

static const char *fs_name(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf))
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:
		return "ext4";
	case 0x01021994:
		return "tmpfs";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x794c7630:
		return "overlayfs";
	default:
		return "other";
	}
}

static int usage(const char *prog)
{
	fprintf(stderr,
	        "usage: %s ACCELFS ACCEL_SMI BARE_FUSE [CYCLES] [--dir=DIR] [--poll-interval=SEC] [--entries=N]\n"
	        "       (or the three paths in $ACCELFS, $ACCEL_SMI, $BARE_FUSE)\n",
	        prog);
	return 2;
}

int main(int argc, char **argv)
{
	const char *paths[3] = { getenv("ACCELFS"), getenv("ACCEL_SMI"), getenv("BARE_FUSE") };
	const char *tmp = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
	unsigned n_paths = 0;
	char ppu_prof[PATH_MAX], gpu_prof[PATH_MAX], prof4[PATH_MAX], prof64[PATH_MAX];
	char status_path[PATH_MAX + 64], status4[PATH_MAX + 64], status64[PATH_MAX + 64], reader_dir[PATH_MAX + 64];
	char storm_prof[PATH_MAX], bare_d[PATH_MAX + 8], bare_status[PATH_MAX + 16], topo[PATH_MAX + 32];
	char when[64];
	double *sa, *sb, *sc, *p1, *p2, t_start = now();
	struct utsname un;
	size_t status_bytes;
	unsigned prof_entries;
	time_t t = time(NULL);

	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--dir=", 6))
			tmp = argv[i] + 6;
		else if (!strncmp(argv[i], "--poll-interval=", 16))
			poll_interval = argv[i] + 16;
		else if (!strncmp(argv[i], "--entries=", 10))
			bare_entries = atoi(argv[i] + 10);
		else if (argv[i][0] == '-')
			return usage(argv[0]);
		else if (n_paths < 3)
			paths[n_paths++] = argv[i];
		else if ((cycles = (unsigned)strtoul(argv[i], NULL, 10)) < 1)
			return usage(argv[0]);
	}
	if (!paths[0] || !paths[1] || !paths[2])
		return usage(argv[0]);
	accelfs_path = paths[0];
	smi_path = paths[1];
	bare_path = paths[2];
	reads = 20 * cycles;
	if (geteuid() != 0) {
		printf("mig-bench: needs root (it mounts FUSE filesystems and the simulators mknod): skipped\n");
		return 77;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);

	snprintf(base, sizeof(base), "%s/accelfs-mig-bench-XXXXXX", tmp);
	if (!mkdtemp(base)) {
		base[0] = '\0';
		fail("mkdtemp in %s: %s", tmp, strerror(errno));
	}
	snprintf(runtime, sizeof(runtime), "/dev/shm/accelfs-mig-bench-XXXXXX");
	if (!mkdtemp(runtime)) {
		runtime[0] = '\0';
		fail("mkdtemp in /dev/shm: %s", strerror(errno));
	}
	uname(&un);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	printf("mig-bench %s on %s (%s %s, %ld cores); %u carve cycles and %u reads per side\n", when, un.nodename,
	       un.sysname, un.release, sysconf(_SC_NPROCESSORS_ONLN), cycles, reads);
	printf("temporary directory %s (%s): every state directory, record and mountpoint\n", base, fs_name(base));
	printf("runtime directory %s (%s): the simulated hardware and the CDI specs\n", runtime, fs_name(runtime));
	printf("accelfs runs with --poll-interval=%s\n", poll_interval);

	/* records, topologies, mounts */
	snprintf(records_dir, sizeof(records_dir), "%s/records", base);
	snprintf(record_path, sizeof(record_path), "%s/bench-job.json", records_dir);
	if (mkdir(records_dir, 0755))
		fail("mkdir %s: %s", records_dir, strerror(errno));
	memset(record_made, 'm', sizeof(record_made));
	memset(record_removing, 'r', sizeof(record_removing));
	record_made[sizeof(record_made) - 1] = record_removing[sizeof(record_removing) - 1] = '\n';

	mount_accelfs(&node, "node", NULL);
	first_profile(&node, "ppu1", reader_dir, sizeof(reader_dir));
	first_profile(&node, "ppu3", ppu_prof, sizeof(ppu_prof));
	first_profile(&node, "ppu5", storm_prof, sizeof(storm_prof));
	first_profile(&node, "gpu0", gpu_prof, sizeof(gpu_prof));
	/* a job to read: job "reader" on ppu1, left there for the whole run */
	snprintf(status_path, sizeof(status_path), "%s/reader", reader_dir);
	if (mkdir(status_path, 0755))
		fail("mkdir %s: %s", status_path, strerror(errno));
	snprintf(status_path, sizeof(status_path), "%s/reader/status", reader_dir);
	status_bytes = op_read(status_path);
	prof_entries = op_list(reader_dir) - 2;
	if (bare_entries < 0)
		bare_entries = prof_entries > 1 ? (int)prof_entries - 1 : 1; /* d: status + these */
	mount_bare((unsigned)bare_entries, status_bytes);
	snprintf(bare_d, sizeof(bare_d), "%s/d", bare.dir);
	snprintf(bare_status, sizeof(bare_status), "%s/d/status", bare.dir);

	snprintf(topo, sizeof(topo), "%s/topology-4.json", base);
	write_topology(topo, 4);
	mount_accelfs(&node4, "4", topo);
	snprintf(topo, sizeof(topo), "%s/topology-64.json", base);
	write_topology(topo, 64);
	mount_accelfs(&node64, "64", topo);
	first_profile(&node4, "ppu3", prof4, sizeof(prof4));
	first_profile(&node64, "ppu3", prof64, sizeof(prof64));
	{
		char p[PATH_MAX];
		first_profile(&node4, "ppu1", p, sizeof(p));
		snprintf(status4, sizeof(status4), "%s/reader", p);
		if (mkdir(status4, 0755))
			fail("mkdir %s: %s", status4, strerror(errno));
		snprintf(status4, sizeof(status4), "%s/reader/status", p);
		first_profile(&node64, "ppu1", p, sizeof(p));
		snprintf(status64, sizeof(status64), "%s/reader", p);
		if (mkdir(status64, 0755))
			fail("mkdir %s: %s", status64, strerror(errno));
		snprintf(status64, sizeof(status64), "%s/reader/status", p);
		op_read(status4);
		op_read(status64);
	}

	sa = calloc(reads, sizeof(double));
	sb = calloc(reads, sizeof(double));
	sc = calloc(reads, sizeof(double));
	p1 = calloc(reads, sizeof(double));
	p2 = calloc(reads, sizeof(double));
	if (!sa || !sb || !sc || !p1 || !p2)
		fail("out of memory");

	/* 1: driver calls */
	printf("1: driver calls\n");
	settle();
	{
		unsigned k = cycles / 10 > 5 ? cycles / 10 : 5;
		struct calls on_ppu[2], on_gpu[2], per_read[2], c4[2], c64[2], first_ppu[2], first_gpu[2];
		struct row *r;

		/* the first carve on a card since the daemon started may read the card's catalogue */
		count_calls(&node, 2, op_cycle, ppu_prof, "bench-job", 1, first_ppu);
		count_calls(&node, 2, op_cycle, gpu_prof, "bench-job", 1, first_gpu);
		count_calls(&node, 2, op_cycle, ppu_prof, "bench-job", k, on_ppu);
		count_calls(&node, 2, op_cycle, gpu_prof, "bench-job", k, on_gpu);
		op_cycle(prof4, "bench-job");
		op_cycle(prof64, "bench-job");
		count_calls(&node, 2, read_as_call, status_path, NULL, k * 10, per_read);
		count_calls(&node4, 1, op_cycle, prof4, "bench-job", k, c4);
		count_calls(&node64, 1, op_cycle, prof64, "bench-job", k, c64);
		calls_row("1", "driver calls per mkdir+rmdir, PPU (ppu3, idle)", &on_ppu[0], "<= 30", 30);
		calls_row(" ", "  on other cards: the H200's family", &on_ppu[1], "0", 0);
		calls_row(" ", "  the first mkdir+rmdir on ppu3 since start", &first_ppu[0], "-", -1);
		calls_row("1", "driver calls per mkdir+rmdir, H200 (gpu0, idle)", &on_gpu[1], "<= 30", 30);
		calls_row(" ", "  on other cards: the PPUs' family", &on_gpu[0], "0", 0);
		calls_row(" ", "  the first mkdir+rmdir on gpu0 since start", &first_gpu[1], "-", -1);
		r = add_row(" ", "  PPU cycle on a 64-card node vs a 4-card node");
		if (c4[0].ok && c64[0].ok) {
			snprintf(r->ours, sizeof(r->ours), "%.1f", calls_total(&c64[0]));
			snprintf(r->base, sizeof(r->base), "%.1f", calls_total(&c4[0]));
			snprintf(r->ratio, sizeof(r->ratio), "%.2fx", calls_total(&c64[0]) / calls_total(&c4[0]));
			snprintf(r->goal, sizeof(r->goal), "equal (none on others)");
			snprintf(r->met, sizeof(r->met), "%s",
			         calls_total(&c64[0]) <= calls_total(&c4[0]) + 1e-9 ? "yes" : "NO");
		} else {
			snprintf(r->ours, sizeof(r->ours), "n/a");
		}
		if (per_read[0].ok && per_read[1].ok) {
			struct calls both = per_read[0];
			for (unsigned i = 0; i < per_read[1].n && both.n < MAX_FUNCS; i++, both.n++) {
				memcpy(both.fn[both.n], per_read[1].fn[i], sizeof(both.fn[0]));
				both.count[both.n] = per_read[1].count[i];
			}
			calls_row(" ", "  driver calls per status read (both families)", &both, "-", -1);
		}
		note_breakdown("first PPU cycle, T-Head calls", &first_ppu[0]);
		note_breakdown("first H200 cycle, NVIDIA calls", &first_gpu[1]);
		note_breakdown("PPU cycle, T-Head calls", &on_ppu[0]);
		note_breakdown("PPU cycle, NVIDIA calls", &on_ppu[1]);
		note_breakdown("H200 cycle, NVIDIA calls", &on_gpu[1]);
		note_breakdown("H200 cycle, T-Head calls", &on_gpu[0]);
		note_breakdown("PPU cycle on the 64-card node", &c64[0]);
		note_breakdown("PPU cycle on the 4-card node", &c4[0]);
	}

	/* 2: the carve cycle against bare FUSE + three durable record operations */
	printf("2: carve cycle\n");
	settle();
	{
		struct op ours = { do_cycle, ppu_prof, "bench-job", NULL, NULL };
		struct op base_op = { do_bare_cycle_records, bare_d, "bench-job", p1, p2 };
		struct stats a, b, s1, s2;

		sample_pair(&ours, sa, &base_op, sb, cycles);
		a = stats_of(sa, cycles);
		b = stats_of(sb, cycles);
		s1 = stats_of(p1, cycles);
		s2 = stats_of(p2, cycles);
		row_time("2", "mkdir+rmdir of a job (ppu3) vs bare FUSE + 3 records", a.mean, b.mean, 1.2);
		row_time(" ", "  p50", a.p50, b.p50, 0);
		{
			struct row *r = add_row(" ", "  baseline part: bare FUSE mkdir+rmdir (mean)");
			fmt_us(r->base, sizeof(r->base), s1.mean);
			r = add_row(" ", "  baseline part: 3 durable record ops (mean)");
			fmt_us(r->base, sizeof(r->base), s2.mean);
		}
	}

	/* 3: flat in cards */
	printf("3: 64 cards vs 4\n");
	settle();
	{
		struct op c64 = { do_cycle, prof64, "bench-job", NULL, NULL },
			  c4 = { do_cycle, prof4, "bench-job", NULL, NULL };
		struct op r64 = { do_read, status64, NULL, NULL, NULL }, r4 = { do_read, status4, NULL, NULL, NULL };
		struct stats a, b;

		sample_pair(&c64, sa, &c4, sb, cycles);
		a = stats_of(sa, cycles);
		b = stats_of(sb, cycles);
		row_time("3", "mkdir+rmdir, 64-card node vs 4-card node", a.mean, b.mean, 1.2);
		sample_pair(&r64, sa, &r4, sb, reads);
		a = stats_of(sa, reads);
		b = stats_of(sb, reads);
		row_time("3", "status read, 64-card node vs 4-card node", a.mean, b.mean, 1.2);
		row_time(" ", "  p99", a.p99, b.p99, 0);
	}

	/* 4: reads against the bare FUSE floor */
	printf("4: reads\n");
	settle();
	{
		struct op ours = { do_read, status_path, NULL, NULL, NULL },
			  flat = { do_read, bare_status, NULL, NULL, NULL };
		struct op ls = { do_list, reader_dir, NULL, NULL, NULL }, bls = { do_list, bare_d, NULL, NULL, NULL };
		struct stats a, b;
		char what[64];

		sample_pair(&ours, sa, &flat, sb, reads);
		a = stats_of(sa, reads);
		b = stats_of(sb, reads);
		row_time("4", "open+read+close job status vs bare d/status", a.mean, b.mean, 1.2);
		row_time(" ", "  p50", a.p50, b.p50, 0);
		row_time(" ", "  p99", a.p99, b.p99, 0);
		sample_pair(&ls, sa, &bls, sb, reads);
		a = stats_of(sa, reads);
		b = stats_of(sb, reads);
		snprintf(what, sizeof(what), "list a profile dir vs bare d (%u entries each)", prof_entries);
		row_time("4", what, a.mean, b.mean, 2.0);
		row_time(" ", "  p50", a.p50, b.p50, 0);
		row_time(" ", "  p99", a.p99, b.p99, 0);
	}

	{
		struct row *r = add_row("5", "vram and slot swap: meson test --benchmark dies");
		snprintf(r->goal, sizeof(r->goal), "see docs/dies.md");
	}

	/* 6: concurrency */
	printf("6: concurrency\n");
	settle();
	{
		unsigned per = reads / ROUNDS ? reads / ROUNDS : 1, n_idle = 0, n_storm = 0, n_base = 0,
			 storm_cycles = 0;
		double storm_time = 0, t1, t2;
		struct carver storm, base_storm, one, two[2];
		struct stats idle, busy, base_busy;
		struct row *r;
		char v[24];

		op_read(status_path);
		for (unsigned round = 0; round < ROUNDS && n_storm + per <= reads; round++) {
			double t0;
			for (unsigned i = 0; i < per; i++) {
				double s = now();
				op_read(status_path);
				sa[n_idle++] = (now() - s) * 1e6;
			}
			/* The same reads while the baseline's work runs in a loop: the machine's share of the wait. */
			carver_start(&base_storm, bare_d, "storm", 0, true);
			while (!base_storm.done && !base_storm.err)
				usleep(100);
			for (unsigned i = 0; i < per; i++) {
				double s = now();
				op_read(status_path);
				sc[n_base++] = (now() - s) * 1e6;
			}
			base_storm.stop = true;
			carver_join(&base_storm);
			usleep(100 * 1000);
			carver_start(&storm, storm_prof, "storm", 0, false);
			while (!storm.done && !storm.err) /* the storm is on */
				usleep(100);
			t0 = now();
			{
				unsigned before = storm.done;
				for (unsigned i = 0; i < per; i++) {
					double s = now();
					op_read(status_path);
					sb[n_storm++] = (now() - s) * 1e6;
				}
				storm_cycles += storm.done - before;
			}
			storm_time += now() - t0;
			storm.stop = true;
			carver_join(&storm);
			usleep(100 * 1000); /* the next idle batch is idle: the storm's last writes settle */
		}
		idle = stats_of(sa, n_idle);
		busy = stats_of(sb, n_storm);
		base_busy = stats_of(sc, n_base);
		row_time("6", "status read p99 during a carve storm on ppu5 vs idle", busy.p99, idle.p99, 2.0);
		row_time(" ", "  p50", busy.p50, idle.p50, 0);
		row_time(" ", "  mean", busy.mean, idle.mean, 0);
		row_time(" ", "  p99 during the baseline's storm vs idle", base_busy.p99, idle.p99, 0);
		row_time(" ", "  p99, carve storm vs the baseline's storm", busy.p99, base_busy.p99, 0);
		r = add_row(" ", "  storm: carve cycles per second while reading");
		snprintf(r->ours, sizeof(r->ours), "%.0f/s", storm_cycles / storm_time);

		/* two carvers on two cards against one: the wall time of the same number of cycles each */
		{
			unsigned k = cycles / 2 ? cycles / 2 : 1;
			t1 = now();
			carver_start(&one, ppu_prof, "bench-one", k, false);
			carver_join(&one);
			t1 = now() - t1;
			t2 = now();
			carver_start(&two[0], ppu_prof, "bench-two-a", k, false);
			carver_start(&two[1], storm_prof, "bench-two-b", k, false);
			carver_join(&two[0]);
			carver_join(&two[1]);
			t2 = now() - t2;
			r = add_row("6", "2 carvers on 2 cards vs 1: cycles per second");
			snprintf(r->ours, sizeof(r->ours), "%.0f/s", 2 * k / t2);
			snprintf(r->base, sizeof(r->base), "%.0f/s", k / t1);
			snprintf(r->ratio, sizeof(r->ratio), "%.2fx", (2 * k / t2) / (k / t1));
			snprintf(v, sizeof(v), "parallel (2x ideal)");
			snprintf(r->goal, sizeof(r->goal), "%s", v);
		}
	}

	print_table();
	if (breakdown[0])
		printf("\ndriver calls per operation, by function:\n%s", breakdown);
	printf("\nratios are accelfs / baseline, measured in this run; means unless the row says p50 or p99.\n"
	       "No goal is asserted: the exit status says only that every operation worked.\n");
	free(sa);
	free(sb);
	free(sc);
	free(p1);
	free(p2);
	cleanup();
	printf("mig-bench: %.1f s\n", now() - t_start);
	return 0;
}
