/* SPDX-License-Identifier: MIT */
/*
 * mig-bench, figures 8 and 9: reads are snapshots (issue 33).
 *
 *   8  p99 of a job's status read while an rmdir of another job on the same
 *      card retries busy (the driver says its instance runs a process: the
 *      rmdir sleeps 100+200+300+400 ms holding the card, then EBUSY), against
 *      the idle p99, interleaved in rounds; and a job's processes (a live
 *      file, asking the driver) read meanwhile: it answers at once, saying
 *      the card is busy, rather than wait for the card
 *   9  driver calls per second of a reader that keeps node.json open and
 *      waits in poll() on a node holding 126 jobs (figure 7's full node):
 *      each repetition opens, reads and waits one second
 */
#include "mig_bench.h"

#include <poll.h>

struct remover {
	pthread_t thread;
	char path[PATH_MAX + 64];
	volatile bool stop;
	volatile unsigned tries, busy;
};

/* rmdir the busy job again and again: each try holds the card through the retries, then EBUSY. */
static void *remover_main(void *arg)
{
	struct remover *r = arg;

	while (!r->stop) {
		int ret = rmdir(r->path);
		r->tries++;
		if (!ret)
			break; /* not busy after all: nothing more to hold the card with */
		if (errno == EBUSY)
			r->busy++;
	}
	return NULL;
}

/* "gi: 3" and "ci: 0" of a status file. */
static void gi_ci(const char *status, unsigned *gi, unsigned *ci)
{
	char line[256];
	FILE *f = fopen(status, "r");

	if (!f)
		fail("open %s: %s", status, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "gi: %u", gi);
		sscanf(line, "ci: %u", ci);
	}
	fclose(f);
}

static void sim_busy(const struct mnt *m, unsigned card, unsigned gi, unsigned ci, unsigned count)
{
	char sim[PATH_MAX + 8], i[16], g[16], c[16], n[16];
	char *argv[] = { (char *)smi_path, sim, "-f", "ppu", "sim", "busy", "-i", i, "-gi", g, "-ci", c, n, NULL };

	snprintf(sim, sizeof(sim), "--sim=%s", m->state);
	snprintf(i, sizeof(i), "%u", card);
	snprintf(g, sizeof(g), "%u", gi);
	snprintf(c, sizeof(c), "%u", ci);
	snprintf(n, sizeof(n), "%u", count);
	if (run_wait(argv))
		fail("accel-smi sim busy failed");
}

void figure_busy_card(const char *reader_dir, const char *status_path, unsigned card, double *sa, double *sb)
{
	char busy[PATH_MAX + 64], busy_status[PATH_MAX + 80], processes[PATH_MAX + 80];
	unsigned gi = 0, ci = 0, per = reads / ROUNDS ? reads / ROUNDS : 1, n_idle = 0, n_busy = 0, tries = 0;
	unsigned said_busy = 0, live_reads = 0;
	double live_max = 0;
	struct stats idle, during;
	struct row *r;

	printf("8: a status read while an rmdir on the same card retries busy\n");
	snprintf(busy, sizeof(busy), "%s/busy", reader_dir);
	if (mkdir(busy, 0755))
		fail("mkdir %s: %s", busy, strerror(errno));
	snprintf(busy_status, sizeof(busy_status), "%s/status", busy);
	snprintf(processes, sizeof(processes), "%.*s/processes", (int)(strlen(status_path) - strlen("/status")),
	         status_path);
	gi_ci(busy_status, &gi, &ci);
	sim_busy(&node, card, gi, ci, 1);
	mb_op_read(status_path);
	for (unsigned round = 0; round < ROUNDS; round++) {
		struct remover rm = { 0 };

		for (unsigned i = 0; i < per; i++) {
			double s = now();
			mb_op_read(status_path);
			sa[n_idle++] = (now() - s) * 1e6;
		}
		snprintf(rm.path, sizeof(rm.path), "%s", busy);
		if (pthread_create(&rm.thread, NULL, remover_main, &rm))
			fail("pthread_create");
		usleep(20 * 1000); /* the rmdir holds the card */
		for (unsigned i = 0; i < per; i++) {
			double s = now();
			mb_op_read(status_path);
			sb[n_busy++] = (now() - s) * 1e6;
		}
		{
			double s = now();
			char buf[4096];
			int fd = open(processes, O_RDONLY);
			ssize_t got = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
			double took = (now() - s) * 1e6;
			if (fd >= 0)
				close(fd);
			buf[got > 0 ? got : 0] = '\0';
			live_reads++;
			said_busy += strstr(buf, "busy") != NULL;
			live_max = took > live_max ? took : live_max;
		}
		rm.stop = true;
		pthread_join(rm.thread, NULL);
		tries += rm.busy;
	}
	sim_busy(&node, card, gi, ci, 0);
	if (rmdir(busy))
		fail("rmdir %s: %s", busy, strerror(errno));
	idle = mb_stats_of(sa, n_idle);
	during = mb_stats_of(sb, n_busy);
	mb_row_time("8", "status p99 while an rmdir retries busy, same card", during.p99, idle.p99, 2.0);
	mb_row_time(" ", "  p50", during.p50, idle.p50, 0);
	r = mb_add_row(" ", "  rmdirs answered EBUSY meanwhile");
	snprintf(r->ours, sizeof(r->ours), "%u", tries);
	r = mb_add_row(" ", "  processes read then: answered busy, slowest");
	snprintf(r->ours, sizeof(r->ours), "%u/%u", said_busy, live_reads);
	mb_fmt_us(r->base, sizeof(r->base), live_max);
	snprintf(r->goal, sizeof(r->goal), "no wait for the card");
}

/* Figure 9's watcher: node.json opened and read once, then poll() for POLLPRI until told to stop. */
struct watcher {
	pthread_t thread;
	char path[PATH_MAX + 16];
	volatile bool stop;
	volatile unsigned wakes;
};

static void *watcher_main(void *arg)
{
	struct watcher *w = arg;
	char buf[65536];
	int fd = open(w->path, O_RDONLY);

	if (fd < 0)
		return NULL;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	while (!w->stop) {
		struct pollfd p = { .fd = fd, .events = POLLPRI };
		if (poll(&p, 1, 200) > 0 && (p.revents & POLLPRI)) {
			w->wakes++;
			lseek(fd, 0, SEEK_SET); /* read again from 0: what a watcher does when woken */
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		}
	}
	close(fd);
	return NULL;
}

/* One repetition: a second of the watcher waiting. */
static void a_second(const char *unused1, const char *unused2)
{
	(void)unused1;
	(void)unused2;
	usleep(1000 * 1000);
}

void figure_watcher(const struct mnt *m, unsigned jobs)
{
	struct watcher w = { 0 };
	char what[64];
	struct calls per[2];
	struct row *r;

	printf("9: a poll() watcher on node.json\n");
	snprintf(w.path, sizeof(w.path), "%s/node.json", m->dir);
	if (pthread_create(&w.thread, NULL, watcher_main, &w))
		fail("pthread_create");
	usleep(2500 * 1000); /* its open and read are done, and what they asked of the sampler */
	mb_count_calls(m, 1, a_second, NULL, NULL, 5, per);
	w.stop = true;
	pthread_join(w.thread, NULL);
	snprintf(what, sizeof(what), "driver calls/s, poll() on node.json, %u jobs", jobs);
	mb_calls_row("9", what, &per[0], "0", 0);
	r = mb_add_row(" ", "  the watcher woken meanwhile (nothing changed)");
	snprintf(r->ours, sizeof(r->ours), "%u", w.wakes);
}
