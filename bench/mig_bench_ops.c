/* SPDX-License-Identifier: MIT */
/* mig-bench: what a figure is made of: operations, statistics, the table, driver calls, carvers. */
#include "mig_bench.h"

/* ---- operations (each fails the run when it fails functionally) ------- */

static char buf_sink[65536];

size_t mb_op_read(const char *path)
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

unsigned mb_op_list(const char *path)
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
void mb_op_cycle(const char *dir, const char *job)
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

/* What core/state/fileio.c's durable write does: tmp, write, fsync, rename, fsync of the directory. */
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

char mb_records_dir[PATH_MAX], mb_record_path[PATH_MAX + 32];
char mb_record_made[RECORD_BYTES], mb_record_removing[RECORD_BYTES];

/* The three durable record operations of a carve and its reclaim: made, removing, gone. */
static void op_records(void)
{
	durable_write(mb_records_dir, mb_record_path, mb_record_made, sizeof(mb_record_made));
	durable_write(mb_records_dir, mb_record_path, mb_record_removing, sizeof(mb_record_removing));
	if (unlink(mb_record_path))
		fail("unlink %s: %s", mb_record_path, strerror(errno));
	fsync_dir(mb_records_dir);
}

/*
 * Between figures: what the last one left dirty (records, the simulators'
 * state files) is written out now, not during the next figure's samples.
 */
void mb_settle(void)
{
	sync();
	usleep(200 * 1000);
}

/* ---- statistics ------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats mb_stats_of(const double *v, unsigned n)
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

static unsigned sample_index;

void mb_do_read(const struct op *o)
{
	mb_op_read(o->a);
}

void mb_do_list(const struct op *o)
{
	mb_op_list(o->a);
}

void mb_do_cycle(const struct op *o)
{
	mb_op_cycle(o->a, o->b);
}

/* The carve baseline: bare FUSE mkdir + rmdir, then the three durable record operations. */
void mb_do_bare_cycle_records(const struct op *o)
{
	double t0 = now(), t1;

	mb_op_cycle(o->a, o->b);
	t1 = now();
	op_records();
	o->part1[sample_index] = (t1 - t0) * 1e6;
	o->part2[sample_index] = (now() - t1) * 1e6;
}

/* n samples of each, interleaved in ROUNDS rounds, after a short warm-up. */
void mb_sample_pair(const struct op *a, double *sa, const struct op *b, double *sb, unsigned n)
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

static struct row rows[64];
static unsigned n_rows;

struct row *mb_add_row(const char *fig, const char *what)
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

void mb_fmt_us(char *out, size_t len, double us)
{
	if (us >= 1000.0)
		snprintf(out, len, "%.2f ms", us / 1000.0);
	else
		snprintf(out, len, "%.1f us", us);
}

/* A time against its baseline; goal_max > 0: the ratio must stay at or under it. */
void mb_row_time(const char *fig, const char *what, double ours, double base_us, double goal_max)
{
	struct row *r = mb_add_row(fig, what);

	mb_fmt_us(r->ours, sizeof(r->ours), ours);
	mb_fmt_us(r->base, sizeof(r->base), base_us);
	snprintf(r->ratio, sizeof(r->ratio), "%.2fx", ours / base_us);
	if (goal_max > 0) {
		snprintf(r->goal, sizeof(r->goal), "<= %.1fx", goal_max);
		snprintf(r->met, sizeof(r->met), "%s", ours / base_us <= goal_max ? "yes" : "NO");
	}
}

void mb_print_table(void)
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

double mb_calls_total(const struct calls *c)
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

const char *const mb_families[2] = { "ppu", "gpu" };

/*
 * Driver calls per repetition of what(arg), for each family present: the
 * counters zeroed, k repetitions, the counters read; minus the same with no
 * repetition (accel-smi's own Init_v2 and Shutdown, and anything else the
 * daemon does meanwhile).
 */
void mb_count_calls(const struct mnt *m, unsigned n_fam, void (*what)(const char *, const char *), const char *a1,
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
			ok = smi_calls(m, mb_families[f], true, NULL) && ok;
		for (unsigned i = 0; i < reps; i++)
			what(a1, a2);
		for (unsigned f = 0; f < n_fam; f++)
			if (!ok || !smi_calls(m, mb_families[f], false, &c[f]))
				c[f].ok = false;
	}
	for (unsigned f = 0; f < n_fam; f++)
		calls_per(&with[f], &without[f], k, &per[f]);
}

void mb_read_as_call(const char *path, const char *unused)
{
	(void)unused;
	mb_op_read(path);
}

void mb_calls_row(const char *fig, const char *what, const struct calls *c, const char *goal, double max)
{
	struct row *r = mb_add_row(fig, what);

	if (!c->ok) {
		snprintf(r->ours, sizeof(r->ours), "n/a");
		snprintf(r->goal, sizeof(r->goal), "%s", goal);
		return;
	}
	snprintf(r->ours, sizeof(r->ours), "%.1f", mb_calls_total(c));
	snprintf(r->goal, sizeof(r->goal), "%s", goal);
	if (max >= 0)
		snprintf(r->met, sizeof(r->met), "%s", mb_calls_total(c) <= max + 1e-9 ? "yes" : "NO");
}

char mb_breakdown[8192];

void mb_note_breakdown(const char *label, const struct calls *c)
{
	size_t len = strlen(mb_breakdown);

	if (!c->ok || !c->n)
		return;
	snprintf(mb_breakdown + len, sizeof(mb_breakdown) - len, "  %s (%.4g):", label, mb_calls_total(c));
	for (unsigned i = 0, col = 1000; i < c->n; i++) {
		char item[96];
		int w = snprintf(item, sizeof(item), " %s %.4g", c->fn[i], c->count[i]);
		if (col + (unsigned)w > 110) { /* wrap, indented */
			len = strlen(mb_breakdown);
			snprintf(mb_breakdown + len, sizeof(mb_breakdown) - len, "\n     ");
			col = 5;
		}
		len = strlen(mb_breakdown);
		snprintf(mb_breakdown + len, sizeof(mb_breakdown) - len, "%s", item);
		col += (unsigned)w;
	}
	len = strlen(mb_breakdown);
	snprintf(mb_breakdown + len, sizeof(mb_breakdown) - len, "\n");
}

/* ---- concurrency ------------------------------------------------------ */

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

void mb_carver_start(struct carver *c, const char *dir, const char *job, unsigned limit, bool baseline)
{
	memset(c, 0, sizeof(*c));
	c->dir = dir;
	c->job = job;
	c->limit = limit;
	c->baseline = baseline;
	if (pthread_create(&c->thread, NULL, carver_main, c))
		fail("pthread_create");
}

void mb_carver_join(struct carver *c)
{
	pthread_join(c->thread, NULL);
	if (c->err)
		fail("%s: %s", c->what, strerror(c->err));
}
