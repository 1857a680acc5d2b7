/* SPDX-License-Identifier: MIT */
/*
 * dies-bench: what dies/<n>/vram costs against the slot used directly.
 *
 *   dies-bench --mount=MNT (--sim=STATE_DIR | --device=PATH) [--die=N] [--swap-dies=A,B]
 *              [--mib=SIZE] [--rounds=R] [--swaps=S]
 *
 * In one run, each figure beside its baseline, measured in this process:
 *   sequential read and write of dies/<die>/vram (pread/pwrite of SIZE MiB,
 *   which the kernel splits into max_read/max_write requests) on a
 *   descriptor held open, against memcpy from and to the same die's mapping
 *   through the barswap API (bs_acquire: the module's slot mapping, or the
 *   simulated die's file) with the die held: both hold the slot throughout;
 *   then the same with the die taken and given back around each transfer
 *   (open+pread+close against bs_acquire+memcpy+bs_release), where giving
 *   the slot up revokes the pages and the next transfer maps them again;
 *   a slot swap through the filesystem (open+close of dies/<A>/vram, then
 *   of dies/<B>/vram, two dies nobody has touched), against the raw swap
 *   through the API (bs_acquire+bs_release of A, then of B);
 *   the same for the die the transfers touched: giving the slot up then
 *   revokes every page of it that is mapped (the module's zap, the
 *   simulator's mprotect), in both cases.
 * Each figure is the median of R rounds; the first round of each is a
 * warm-up (page faults) and is not counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "barswap/barswap.h"
#include "barswap/bs_slot.h"
#include "sim/barswap/bs_sim.h"

#define MAX_ROUNDS 64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die_path(char *buf, size_t len, const char *mnt, int die)
{
	snprintf(buf, len, "%s/dies/%d/vram", mnt, die);
}

struct opts {
	const char *mnt, *sim, *device;
	int die, a, b, rounds, swaps;
	size_t bytes;
};

/* Seconds per round of fn, median of rounds after one warm-up. */
typedef int (*round_fn)(void *ctx);

static double timed(round_fn fn, void *ctx, int rounds)
{
	double t[MAX_ROUNDS];

	if (fn(ctx))
		return -1;
	for (int i = 0; i < rounds; i++) {
		double t0 = now();
		if (fn(ctx))
			return -1;
		t[i] = now() - t0;
	}
	return median(t, rounds);
}

/* ---- the baselines: the barswap API ------------------------------------------------ */

struct api {
	bs_context *ctx;
	bs_gpu *g;
	char *buf;
	size_t bytes;
	int die, a, b, swaps;
};

static int api_read(void *p)
{
	struct api *a = p;

	memcpy(a->buf, a->g->vram, a->bytes);
	return 0;
}

static int api_write(void *p)
{
	struct api *a = p;

	memcpy(a->g->vram, a->buf, a->bytes);
	return 0;
}

/* A whole transfer: take the die, read it, give it back. */
static int api_read_once(void *p)
{
	struct api *a = p;
	bs_gpu *g = bs_acquire(a->ctx, a->die);

	if (!g)
		return -1;
	memcpy(a->buf, g->vram, a->bytes);
	bs_release(a->ctx, g);
	return 0;
}

static int api_swaps(void *p)
{
	struct api *a = p;

	for (int i = 0; i < a->swaps; i++) {
		bs_gpu *g = bs_acquire(a->ctx, i % 2 ? a->b : a->a);
		if (!g)
			return -1;
		bs_release(a->ctx, g);
	}
	return 0;
}

/* ---- the filesystem -------------------------------------------------------------- */

struct fs {
	char path[PATH_MAX], a_path[PATH_MAX], b_path[PATH_MAX], info_path[PATH_MAX];
	char *buf;
	size_t bytes;
	int swaps;
	int fd;       /* dies/<die>/vram, held open: the handle holds the slot */
	int tmpfs_fd; /* a file of the same size in /dev/shm */
};

static int fs_read(void *p)
{
	struct fs *f = p;

	return pread(f->fd, f->buf, f->bytes, 0) == (ssize_t)f->bytes ? 0 : -1;
}

static int fs_write(void *p)
{
	struct fs *f = p;

	return pwrite(f->fd, f->buf, f->bytes, 0) == (ssize_t)f->bytes ? 0 : -1;
}

/*
 * The kernel's own copy, with no FUSE and no slot: pread and pwrite of a
 * tmpfs file of the same size.  Every read(2) and write(2) of any
 * filesystem copies like this, so it bounds what a FUSE file can reach.
 */
static int tmpfs_read(void *p)
{
	struct fs *f = p;

	return pread(f->tmpfs_fd, f->buf, f->bytes, 0) == (ssize_t)f->bytes ? 0 : -1;
}

static int tmpfs_write(void *p)
{
	struct fs *f = p;

	return pwrite(f->tmpfs_fd, f->buf, f->bytes, 0) == (ssize_t)f->bytes ? 0 : -1;
}

/* A whole transfer: open (the slot is taken), read, close (given back). */
static int fs_read_once(void *p)
{
	struct fs *f = p;
	int fd = open(f->path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : pread(fd, f->buf, f->bytes, 0);

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)f->bytes ? 0 : -1;
}

static int fs_swaps(void *p)
{
	struct fs *f = p;

	for (int i = 0; i < f->swaps; i++) {
		int fd = open(i % 2 ? f->b_path : f->a_path, O_RDWR);
		if (fd < 0)
			return -1;
		close(fd);
	}
	return 0;
}

static int fs_same_die(void *p)
{
	struct fs *f = p;

	for (int i = 0; i < f->swaps; i++) {
		int fd = open(f->path, O_RDWR);
		if (fd < 0)
			return -1;
		close(fd);
	}
	return 0;
}

/* The floor: open+close of a small generated file, three FUSE requests and no slot at all. */
static int fs_info(void *p)
{
	struct fs *f = p;

	for (int i = 0; i < f->swaps; i++) {
		int fd = open(f->info_path, O_RDONLY);
		if (fd < 0)
			return -1;
		close(fd);
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: dies-bench --mount=MNT (--sim=STATE_DIR | --device=PATH) [--die=N] [--swap-dies=A,B]\n"
	                "                  [--mib=SIZE] [--rounds=R] [--swaps=S]\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "sim", required_argument, NULL, 's' },
		{ "device", required_argument, NULL, 'd' },
		{ "die", required_argument, NULL, 'a' },
		{ "swap-dies", required_argument, NULL, 'b' },
		{ "mib", required_argument, NULL, 'M' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "swaps", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .die = 0, .a = 2, .b = 3, .rounds = 7, .swaps = 1000, .bytes = 64u << 20 };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			o->mnt = optarg;
			break;
		case 's':
			o->sim = optarg;
			break;
		case 'd':
			o->device = optarg;
			break;
		case 'a':
			o->die = atoi(optarg);
			break;
		case 'b':
			if (sscanf(optarg, "%d,%d", &o->a, &o->b) != 2)
				return -1;
			break;
		case 'M':
			o->bytes = (size_t)atoi(optarg) << 20;
			break;
		case 'r':
			o->rounds = atoi(optarg);
			break;
		case 'S':
			o->swaps = atoi(optarg) & ~1;
			break;
		default:
			return -1;
		}
	}
	if (!o->mnt || (!o->sim == !o->device) || o->rounds < 1 || o->rounds > MAX_ROUNDS || o->swaps < 2 ||
	    !o->bytes || o->a == o->b || o->die == o->a || o->die == o->b)
		return -1;
	return 0;
}

static bs_context *open_api(const struct opts *o)
{
	char dir[PATH_MAX], err[512];
	struct bs_slot *s;
	int ret;

	if (o->device)
		return bs_init_path(o->device);
	snprintf(dir, sizeof(dir), "%s/sim/barswap", o->sim);
	s = bs_slot_sim_open(dir, NULL, &ret, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "dies-bench: %s\n", err);
		return NULL;
	}
	return bs_init_slot(s);
}

static void row(const char *what, double base, double fs, const char *unit, double scale, const char *ratio_is)
{
	printf("%-34s %10.2f %-5s %10.2f %-5s %8.2f  (%s)\n", what, base * scale, unit, fs * scale, unit, fs / base,
	       ratio_is);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct api a;
	struct fs f;
	double api_r, api_w, api_once, api_s, api_same, fs_r, fs_w, fs_once, fs_s, fs_same, fs_floor, tmp_r, tmp_w;
	char tmpfs_path[32] = "/dev/shm/dies-bench-XXXXXX";
	const char *backend;

	if (parse(argc, argv, &o)) {
		usage();
		return 2;
	}
	memset(&a, 0, sizeof(a));
	memset(&f, 0, sizeof(f));
	a.ctx = open_api(&o);
	if (!a.ctx) {
		perror("dies-bench: the slot");
		return 1;
	}
	backend = bs_backend(a.ctx);
	a.g = bs_acquire(a.ctx, o.die);
	if (!a.g) {
		perror("dies-bench: acquire");
		return 1;
	}
	if (o.bytes > a.g->vram_size)
		o.bytes = a.g->vram_size;
	a.bytes = f.bytes = o.bytes;
	a.die = o.die;
	a.a = o.a;
	a.b = o.b;
	a.swaps = f.swaps = o.swaps;
	a.buf = f.buf = malloc(o.bytes);
	if (!a.buf)
		return 1;
	memset(a.buf, 0x5a, o.bytes);

	/* The die held through the API: the baselines. */
	api_w = timed(api_write, &a, o.rounds);
	api_r = timed(api_read, &a, o.rounds);
	bs_release(a.ctx, a.g);
	api_once = timed(api_read_once, &a, o.rounds);
	api_s = timed(api_swaps, &a, o.rounds);
	a.a = a.b = o.die;
	api_same = timed(api_swaps, &a, o.rounds);

	/* The same die through the filesystem, while the API's handle holds nothing. */
	die_path(f.path, sizeof(f.path), o.mnt, o.die);
	die_path(f.a_path, sizeof(f.a_path), o.mnt, o.a);
	die_path(f.b_path, sizeof(f.b_path), o.mnt, o.b);
	f.fd = open(f.path, O_RDWR);
	if (f.fd < 0) {
		perror("dies-bench: open vram");
		return 1;
	}
	fs_w = timed(fs_write, &f, o.rounds);
	fs_r = timed(fs_read, &f, o.rounds);
	close(f.fd);
	fs_once = timed(fs_read_once, &f, o.rounds);
	fs_s = timed(fs_swaps, &f, o.rounds);
	fs_same = timed(fs_same_die, &f, o.rounds);
	snprintf(f.info_path, sizeof(f.info_path), "%s/dies/%d/info", o.mnt, o.die);
	fs_floor = timed(fs_info, &f, o.rounds);
	f.tmpfs_fd = mkstemp(tmpfs_path);
	if (f.tmpfs_fd < 0 && errno == ENOENT) {
		/* No /dev/shm (the QEMU guest's initramfs): its /tmp is in memory too. */
		snprintf(tmpfs_path, sizeof(tmpfs_path), "/tmp/dies-bench-XXXXXX");
		f.tmpfs_fd = mkstemp(tmpfs_path);
	}
	if (f.tmpfs_fd < 0) {
		fprintf(stderr, "dies-bench: a file in /dev/shm or /tmp: %s\n", strerror(errno));
		return 1;
	}
	unlink(tmpfs_path);
	tmp_w = timed(tmpfs_write, &f, o.rounds);
	tmp_r = timed(tmpfs_read, &f, o.rounds);
	close(f.tmpfs_fd);
	if (api_r <= 0 || api_w <= 0 || api_once <= 0 || fs_once <= 0 || api_s <= 0 || api_same <= 0 || fs_r <= 0 ||
	    fs_w <= 0 || fs_s <= 0 || fs_same <= 0 || fs_floor <= 0 || tmp_r <= 0 || tmp_w <= 0) {
		fprintf(stderr, "dies-bench: a measurement failed: %s\n", strerror(errno));
		return 1;
	}

	printf("dies-bench: backend %s, transfers on die %d (%zu MiB each), swaps between dies %d and %d (%d per "
	       "round), median of %d rounds\n",
	       backend, o.die, o.bytes >> 20, o.a, o.b, o.swaps, o.rounds);
	printf("%-34s %16s %16s %8s\n", "", "baseline", "dies/<n>/vram", "ratio");
	row("sequential read", o.bytes / api_r, o.bytes / fs_r, "MB/s", 1e-6, "pread / memcpy from the mapping");
	row("sequential write", o.bytes / api_w, o.bytes / fs_w, "MB/s", 1e-6, "pwrite / memcpy to the mapping");
	row("  against a tmpfs read", o.bytes / tmp_r, o.bytes / fs_r, "MB/s", 1e-6,
	    "pread / pread of a tmpfs file: the kernel's copy alone");
	row("  against a tmpfs write", o.bytes / tmp_w, o.bytes / fs_w, "MB/s", 1e-6,
	    "pwrite / pwrite of a tmpfs file: the kernel's copy alone");
	row("read, taking the die each time", o.bytes / api_once, o.bytes / fs_once, "MB/s", 1e-6,
	    "open+pread+close / bs_acquire+memcpy+bs_release");
	row("slot swap", api_s / o.swaps, fs_s / o.swaps, "us", 1e6,
	    "open+close / bs_acquire+bs_release, alternating dies");
	row("slot swap of the transferred die", api_same / o.swaps, fs_same / o.swaps, "us", 1e6,
	    "the same, with its pages mapped");
	printf("%-34s %16s %10.2f %-5s  (open+close of dies/%d/info: FUSE alone, no slot)\n", "  a generated file", "",
	       fs_floor / o.swaps * 1e6, "us", o.die);
	free(a.buf);
	bs_free(a.ctx);
	return 0;
}
