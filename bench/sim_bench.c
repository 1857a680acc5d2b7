/* SPDX-License-Identifier: MIT */
/*
 * What one simulated driver call costs (docs/simulator.md, "Storage").
 * Each node is measured in a child process of its own, over a fresh state
 * directory, with the library loaded through the product's own seam (a
 * library holds one context per process, and its node is fixed at the
 * first Init); each figure is the mean of many calls, and the median of
 * REPEATS such runs, the nodes taking turns (the development VM is shared:
 * a single run moves by tens of percent).  Changes and foreign reads are
 * also given in CPU time of the calling thread, which time spent waiting
 * for a core does not inflate.
 *
 *   read          DeviceGetMigMode on one card, nothing else changing
 *   write         DeviceCreateGpuInstanceWithPlacement + GpuInstanceDestroy
 *                 (two state changes per round)
 *   foreign       DeviceGetMigMode right after another process changed the
 *                 same card (every read must see the other process's change)
 *   2 cards       two threads, each reading its own card: the wall time per
 *                 call of both together
 *   N cards       write and foreign on generated topologies of 4 and 64
 *                 cards (sim/topologies' format): goal 3 wants them flat
 *   2 writers     two threads each changing its own card, against one thread
 *                 making as many changes on one card: the wall time per
 *                 change, and how much faster two are (goal 6: unrelated
 *                 cards do not wait for each other; 2.0 is the ideal on two
 *                 free cores)
 *
 *   sim-bench [ppu|gpu] [ITERATIONS]     (as root: the simulators mknod)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/driver/family.h"
#include "core/driver/mig_lib.h"
#include "sim/locate.h"

static const struct accel_family *family = &accel_family_thead;
static unsigned iterations = 1000;
static char lib_path[4096];
static struct mig_lib lib;
/* The probed GPU-instance profile of card 0 and its first placement: what every change makes. */
static unsigned profile_id;
static mig_gpu_instance_placement_t placement;

#define REPEATS 3

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of the calling thread. */
static double cpu(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static void die(const char *what, mig_return_t r)
{
	fprintf(stderr, "sim-bench: %s failed: %d\n", what, (int)r);
	exit(1);
}

static mig_device_t card(struct mig_lib *l, unsigned index)
{
	mig_device_t dev;

	if (l->DeviceGetHandleByIndex_v2(index, &dev))
		die("DeviceGetHandleByIndex_v2", MIG_ERROR_UNKNOWN);
	return dev;
}

/* One state change: a GI of the probed profile made and destroyed (two changes). */
static void change(struct mig_lib *l, mig_device_t dev)
{
	mig_gpu_instance_t gi;
	mig_return_t r = l->DeviceCreateGpuInstanceWithPlacement(dev, profile_id, &placement, &gi);

	if (r)
		die("DeviceCreateGpuInstanceWithPlacement", r);
	r = l->GpuInstanceDestroy(gi);
	if (r)
		die("GpuInstanceDestroy", r);
}

struct worker {
	unsigned card;
	unsigned rounds;
	bool write;
	double seconds;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	mig_device_t dev = card(&lib, w->card);
	unsigned cur, pend;
	double t0 = now();

	for (unsigned i = 0; i < w->rounds; i++) {
		if (w->write)
			change(&lib, dev);
		else if (lib.DeviceGetMigMode(dev, &cur, &pend))
			die("DeviceGetMigMode", MIG_ERROR_UNKNOWN);
	}
	w->seconds = now() - t0;
	return NULL;
}

/* Both workers at once; the wall time of the pair. */
static double in_parallel(struct worker *w)
{
	pthread_t th[2];
	double t0 = now();

	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, work, &w[i]))
			die("pthread_create", MIG_ERROR_UNKNOWN);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return now() - t0;
}

/*
 * Reads right after another process changed the same card: the pipes make
 * the two alternate, so each timed read follows a foreign change.
 */
static void foreign_read(unsigned rounds, double *wall, double *cpu_s)
{
	int go[2], done[2], status;
	mig_device_t dev = card(&lib, 0);
	unsigned cur, pend;
	double t = 0, spent = 0, t0, c0;
	char err[512];
	pid_t child;

	if (pipe(go) != 0 || pipe(done) != 0)
		die("pipe", MIG_ERROR_UNKNOWN);
	child = fork();
	if (child == 0) {
		struct mig_lib other;
		char c;

		close(go[1]);
		close(done[0]);
		if (accel_family_open_lib(family, lib_path, &other, err, sizeof(err)))
			_exit(1);
		while (read(go[0], &c, 1) == 1) {
			change(&other, card(&other, 0));
			if (write(done[1], "x", 1) != 1)
				_exit(1);
		}
		mig_lib_close(&other);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	for (unsigned i = 0; i < rounds; i++) {
		char c;

		if (write(go[1], "x", 1) != 1 || read(done[0], &c, 1) != 1) {
			fprintf(stderr, "sim-bench: the other process stopped\n");
			exit(1);
		}
		t0 = now();
		c0 = cpu();
		if (lib.DeviceGetMigMode(dev, &cur, &pend))
			die("DeviceGetMigMode", MIG_ERROR_UNKNOWN);
		spent += cpu() - c0;
		t += now() - t0;
	}
	close(go[1]);
	close(done[0]);
	waitpid(child, &status, 0);
	*wall = t / rounds;
	*cpu_s = spent / rounds;
}

/* The figures of one node, in seconds (wall time unless said). */
enum { READ, WRITE, FOREIGN, READ_2, WRITE_2, WRITE_CPU, FOREIGN_CPU, RESULTS };

/*
 * The figures of one node: read, write (per change), foreign, 2 cards read
 * (wall per call), 2 writers (wall per change), and the CPU times.  Those
 * needing two cards are 0 on a one-card node.
 */
static void measure(double *out)
{
	unsigned rounds = iterations / 10 ? iterations / 10 : 1, count = 0;
	struct worker w[2] = { { .card = 0, .rounds = iterations } };
	mig_device_t dev = card(&lib, 0);
	double t0, c0;

	work(&w[0]);
	out[READ] = w[0].seconds / iterations;
	t0 = now();
	c0 = cpu();
	for (unsigned i = 0; i < rounds; i++)
		change(&lib, dev);
	out[WRITE_CPU] = (cpu() - c0) / (2.0 * rounds);
	out[WRITE] = (now() - t0) / (2.0 * rounds);
	foreign_read(rounds, &out[FOREIGN], &out[FOREIGN_CPU]);
	if (lib.DeviceGetCount_v2(&count) || count < 2)
		return;
	w[0] = (struct worker){ .card = 0, .rounds = iterations };
	w[1] = (struct worker){ .card = 1, .rounds = iterations };
	out[READ_2] = in_parallel(w) / (2.0 * iterations);
	w[0] = (struct worker){ .card = 0, .rounds = rounds, .write = true };
	w[1] = (struct worker){ .card = 1, .rounds = rounds, .write = true };
	out[WRITE_2] = in_parallel(w) / (4.0 * rounds);
}

/*
 * A node of `cards` cards of the benchmarked family (0: the built-in node),
 * set up and measured in a child process; its figures come back through a
 * pipe.  Returns 0 or -1.
 */
static int node(unsigned cards, double *out)
{
	char dir[] = "/tmp/sim-bench.XXXXXX", topo[64], err[512], cmd[64];
	int fds[2], status, ret = -1;
	mig_device_t dev;
	pid_t pid;

	memset(out, 0, RESULTS * sizeof(*out));
	if (!mkdtemp(dir) || pipe(fds) != 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		mig_gpu_instance_profile_info_v3_t info = { .version = MIG_GPU_INSTANCE_PROFILE_INFO_V3 };
		mig_gpu_instance_placement_t pl[8];
		unsigned n_pl = 8;
		FILE *f;

		close(fds[0]);
		if (cards) {
			/* sim/topologies' format: this family's section, the other vendor absent. */
			snprintf(topo, sizeof(topo), "%s/topology.json", dir);
			f = fopen(topo, "w");
			if (!f)
				_exit(1);
			fprintf(f, "{ \"%s\": { \"count\": %u }, \"%s\": null }\n", accel_sim_vendor_dir(family), cards,
			        family == &accel_family_thead ? "nvidia" : "thead");
			fclose(f);
		}
		if (accel_sim_setup_env(dir, cards ? topo : NULL, err, sizeof(err)) ||
		    accel_family_open_lib(family, lib_path, &lib, err, sizeof(err))) {
			fprintf(stderr, "sim-bench: %s\n", err);
			_exit(1);
		}
		dev = card(&lib, 0);
		if (lib.DeviceGetGpuInstanceProfileInfoV(dev, 1, &info) ||
		    lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, info.id, pl, &n_pl))
			die("probing card 0", MIG_ERROR_UNKNOWN);
		profile_id = info.id;
		placement = pl[0];
		measure(out);
		mig_lib_close(&lib);
		_exit(write(fds[1], out, RESULTS * sizeof(*out)) == (ssize_t)(RESULTS * sizeof(*out)) ? 0 : 1);
	}
	close(fds[1]);
	if (pid > 0 && read(fds[0], out, RESULTS * sizeof(*out)) == (ssize_t)(RESULTS * sizeof(*out)) &&
	    waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		ret = 0;
	close(fds[0]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		ret = -1;
	return ret;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* runs[r][i] -> out[i]: the median over the runs, figure by figure. */
static void medians(double runs[REPEATS][RESULTS], double *out)
{
	for (int i = 0; i < RESULTS; i++) {
		double v[REPEATS];

		for (int r = 0; r < REPEATS; r++)
			v[r] = runs[r][i];
		qsort(v, REPEATS, sizeof(v[0]), by_value);
		out[i] = v[REPEATS / 2];
	}
}

int main(int argc, char **argv)
{
	static const unsigned sizes[3] = { 0, 4, 64 }; /* the built-in node, then generated ones */
	double runs[3][REPEATS][RESULTS], fig[3][RESULTS];
	double *builtin = fig[0], *small = fig[1], *large = fig[2];
	char err[512];

	if (argc > 1 && !strcmp(argv[1], "gpu"))
		family = &accel_family_nvidia;
	if (argc > 2)
		iterations = (unsigned)strtoul(argv[2], NULL, 10);
	if (!iterations) {
		fprintf(stderr, "usage: sim-bench [ppu|gpu] [ITERATIONS>0]\n");
		return 2;
	}
	if (accel_sim_locate_lib(family, lib_path, sizeof(lib_path), err, sizeof(err))) {
		fprintf(stderr, "sim-bench: %s\n", err);
		return 1;
	}
	printf("%s simulator, %u iterations, medians of %d runs, microseconds\n", family->sym_prefix, iterations,
	       REPEATS);
	for (int r = 0; r < REPEATS; r++)
		for (int n = 0; n < 3; n++)
			if (node(sizes[n], runs[n][r])) {
				fprintf(stderr, "sim-bench: a measurement failed\n");
				return 1;
			}
	for (int n = 0; n < 3; n++)
		medians(runs[n], fig[n]);
	printf("built-in node:\n");
	printf("  read              %10.2f us/call\n", builtin[READ] * 1e6);
	printf("  write             %10.2f us/change (cpu %.2f)\n", builtin[WRITE] * 1e6, builtin[WRITE_CPU] * 1e6);
	printf("  foreign           %10.2f us/call   (cpu %.2f)\n", builtin[FOREIGN] * 1e6, builtin[FOREIGN_CPU] * 1e6);
	if (builtin[READ_2] > 0)
		printf("  2 cards read      %10.2f us/call (wall, both threads' calls together)\n",
		       builtin[READ_2] * 1e6);
	printf("flat in cards (4 -> 64):\n");
	printf("  write             %10.2f -> %10.2f us/change  (x%.2f; cpu %.2f -> %.2f, x%.2f)\n", small[WRITE] * 1e6,
	       large[WRITE] * 1e6, large[WRITE] / small[WRITE], small[WRITE_CPU] * 1e6, large[WRITE_CPU] * 1e6,
	       large[WRITE_CPU] / small[WRITE_CPU]);
	printf("  foreign           %10.2f -> %10.2f us/call    (x%.2f; cpu %.2f -> %.2f, x%.2f)\n",
	       small[FOREIGN] * 1e6, large[FOREIGN] * 1e6, large[FOREIGN] / small[FOREIGN], small[FOREIGN_CPU] * 1e6,
	       large[FOREIGN_CPU] * 1e6, large[FOREIGN_CPU] / small[FOREIGN_CPU]);
	if (small[WRITE_2] > 0) {
		printf("2 writers on 2 cards (4-card node):\n");
		printf("  1 thread          %10.2f us/change\n", small[WRITE] * 1e6);
		printf("  2 threads         %10.2f us/change (wall)  (x%.2f faster)\n", small[WRITE_2] * 1e6,
		       small[WRITE] / small[WRITE_2]);
	}
	return 0;
}
