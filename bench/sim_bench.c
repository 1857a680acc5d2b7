/* SPDX-License-Identifier: MIT */
/*
 * What one simulated driver call costs (docs/simulator.md, "Storage"):
 * the library is loaded through the product's own seam over a fresh state
 * directory, and each figure is the mean of many calls.
 *
 *   read      DeviceGetMigMode on one card, nothing else changing
 *   write     DeviceCreateGpuInstanceWithPlacement + GpuInstanceDestroy
 *             (two state changes per round)
 *   foreign   DeviceGetMigMode right after another process changed the
 *             state (every read must see the other process's change)
 *   2 cards   two threads, each reading its own card: the wall time per
 *             call of both together (one mutex serializes them)
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

#include "core/family.h"
#include "core/mig_lib.h"
#include "sim/locate.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, mig_return_t r)
{
	fprintf(stderr, "sim-bench: %s failed: %d\n", what, (int)r);
	exit(1);
}

static struct mig_lib lib;
static unsigned iterations = 1000;

struct reader {
	unsigned card;
	double seconds;
};

static void *read_card(void *arg)
{
	struct reader *rd = arg;
	unsigned cur, pend;
	mig_device_t dev;
	double t0;

	if (lib.DeviceGetHandleByIndex_v2(rd->card, &dev))
		die("DeviceGetHandleByIndex_v2", MIG_ERROR_UNKNOWN);
	t0 = now();
	for (unsigned i = 0; i < iterations; i++)
		if (lib.DeviceGetMigMode(dev, &cur, &pend))
			die("DeviceGetMigMode", MIG_ERROR_UNKNOWN);
	rd->seconds = now() - t0;
	return NULL;
}

/* One state change: a GI of the card's first profile made and destroyed. */
static void change(struct mig_lib *l, mig_device_t dev, unsigned profile_id, mig_gpu_instance_placement_t *pl)
{
	mig_gpu_instance_t gi;
	mig_return_t r = l->DeviceCreateGpuInstanceWithPlacement(dev, profile_id, pl, &gi);

	if (r)
		die("DeviceCreateGpuInstanceWithPlacement", r);
	r = l->GpuInstanceDestroy(gi);
	if (r)
		die("GpuInstanceDestroy", r);
}

int main(int argc, char **argv)
{
	const struct accel_family *f = &accel_family_thead;
	char dir[] = "/tmp/sim-bench.XXXXXX", path[4096], err[512], cmd[64];
	mig_gpu_instance_profile_info_v3_t info = { .version = MIG_GPU_INSTANCE_PROFILE_INFO_V3 };
	mig_gpu_instance_placement_t pl[8];
	unsigned n_pl = 8, rounds, cur, pend;
	struct reader both[2] = { { .card = 0 }, { .card = 0 } };
	pthread_t th[2];
	mig_device_t dev;
	double t0, t;
	int go[2], done[2], status;
	pid_t child;

	if (argc > 1 && !strcmp(argv[1], "gpu"))
		f = &accel_family_nvidia;
	if (argc > 2)
		iterations = (unsigned)strtoul(argv[2], NULL, 10);
	if (!iterations || !mkdtemp(dir)) {
		fprintf(stderr, "usage: sim-bench [ppu|gpu] [ITERATIONS>0]\n");
		return 2;
	}
	rounds = iterations / 10 ? iterations / 10 : 1;
	if (accel_sim_setup_env(dir, NULL, err, sizeof(err)) || accel_sim_locate_lib(f, path, sizeof(path), err, sizeof(err)) ||
	    accel_family_open_lib(f, path, &lib, err, sizeof(err))) {
		fprintf(stderr, "sim-bench: %s\n", err);
		return 1;
	}
	if (lib.DeviceGetHandleByIndex_v2(0, &dev) || lib.DeviceGetGpuInstanceProfileInfoV(dev, 1, &info) ||
	    lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, info.id, pl, &n_pl))
		die("probing card 0", MIG_ERROR_UNKNOWN);
	printf("%s simulator, %u iterations, state in %s\n", f->sym_prefix, iterations, dir);

	both[0].card = 0;
	read_card(&both[0]);
	printf("read      %8.2f us/call\n", both[0].seconds / iterations * 1e6);

	t0 = now();
	for (unsigned i = 0; i < rounds; i++)
		change(&lib, dev, info.id, &pl[0]);
	t = now() - t0;
	printf("write     %8.2f us/change\n", t / (2.0 * rounds) * 1e6);

	/*
	 * Another process changes the state, then this one reads: the pipes
	 * make them alternate, so each read follows a foreign write.
	 */
	if (pipe(go) != 0 || pipe(done) != 0)
		return 1;
	child = fork();
	if (child == 0) {
		struct mig_lib other;
		mig_device_t odev;
		char c;

		close(go[1]);
		close(done[0]);
		if (accel_family_open_lib(f, path, &other, err, sizeof(err)) || other.DeviceGetHandleByIndex_v2(0, &odev))
			_exit(1);
		while (read(go[0], &c, 1) == 1) {
			change(&other, odev, info.id, &pl[0]);
			if (write(done[1], "x", 1) != 1)
				_exit(1);
		}
		mig_lib_close(&other);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	t = 0;
	for (unsigned i = 0; i < rounds; i++) {
		char c;

		if (write(go[1], "x", 1) != 1 || read(done[0], &c, 1) != 1) {
			fprintf(stderr, "sim-bench: the other process stopped\n");
			return 1;
		}
		t0 = now();
		if (lib.DeviceGetMigMode(dev, &cur, &pend))
			die("DeviceGetMigMode", MIG_ERROR_UNKNOWN);
		t += now() - t0;
	}
	close(go[1]);
	waitpid(child, &status, 0);
	printf("foreign   %8.2f us/call\n", t / rounds * 1e6);

	if (lib.DeviceGetCount_v2(&n_pl) || n_pl < 2) {
		printf("2 cards   (this node has one card)\n");
		goto out;
	}
	both[0].card = 0;
	both[1].card = 1;
	t0 = now();
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, read_card, &both[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	t = now() - t0;
	printf("2 cards   %8.2f us/call (wall, both threads' calls together)\n", t / (2.0 * iterations) * 1e6);

out:
	mig_lib_close(&lib);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
