/* SPDX-License-Identifier: MIT */
/*
 * What the MIG tree costs, as ratios to tmpfs measured in the same run:
 * reading a small generated file, listing a profile directory, stat, and a
 * carve + reclaim (mkdir + rmdir of a job) against mkdir + rmdir of a plain
 * directory.  The absolute numbers depend on the machine; the ratios say
 * what accelfs adds.
 *
 *   tree_bench ACCELFS [ITERATIONS]     (as root: it mounts a simulated node)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void read_file(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die(path);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

static void list_dir(const char *path)
{
	DIR *d = opendir(path);

	if (!d)
		die(path);
	while (readdir(d))
		;
	closedir(d);
}

static void stat_path(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		die(path);
}

static void carve(const char *dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/bench-job", dir);
	if (mkdir(path, 0755))
		die(path);
	if (rmdir(path))
		die(path);
}

/* Mean microseconds of fn(arg) over n calls. */
static double measure(void (*fn)(const char *), const char *arg, int n)
{
	double t0;

	fn(arg); /* warm the caches either side has */
	t0 = now();
	for (int i = 0; i < n; i++)
		fn(arg);
	return (now() - t0) / n * 1e6;
}

static void row(const char *what, void (*fn)(const char *), const char *ours, const char *base, int n)
{
	double a = measure(fn, ours, n), b = measure(fn, base, n);

	printf("%-34s %10.2f us %10.2f us %8.1fx\n", what, a, b, a / b);
}

int main(int argc, char **argv)
{
	char state[] = "/tmp/accelfs-bench-state-XXXXXX", mnt[] = "/tmp/accelfs-bench-mnt-XXXXXX";
	char base[] = "/tmp/accelfs-bench-tmpfs-XXXXXX", path[1024], bpath[1024], arg[1100];
	int n = argc > 2 ? atoi(argv[2]) : 2000;
	pid_t pid;
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: %s ACCELFS [ITERATIONS]\n", argv[0]);
		return 2;
	}
	if (!mkdtemp(state) || !mkdtemp(mnt) || !mkdtemp(base))
		die("mkdtemp");
	if (mount("tmpfs", base, "tmpfs", 0, "size=16m"))
		die("mount tmpfs");
	snprintf(arg, sizeof(arg), "--state-dir=%s", state);
	pid = fork();
	if (pid == 0) {
		execl(argv[1], argv[1], "--sim", arg, mnt, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		die("accelfs did not mount");

	/* the same shapes on tmpfs: a small file, a directory of six entries */
	snprintf(bpath, sizeof(bpath), "%s/profile", base);
	mkdir(bpath, 0755);
	for (const char *const *f = (const char *const[]){ "info", "available", "last_error", "a", "b", "c", NULL }; *f;
	     f++) {
		char p[1100];
		snprintf(p, sizeof(p), "%s/%s", bpath, *f);
		FILE *fp = fopen(p, "w");
		if (!fp)
			die(p);
		fputs("2\n", fp);
		fclose(fp);
	}

	printf("accelfs vs tmpfs, %d iterations each\n", n);
	printf("%-34s %13s %13s %9s\n", "operation", "accelfs", "tmpfs", "ratio");
	snprintf(path, sizeof(path), "%s/ppu3/mig/4g.48gb/available", mnt);
	snprintf(bpath, sizeof(bpath), "%s/profile/available", base);
	row("open+read+close a small file", read_file, path, bpath, n);
	row("stat (attributes cached 1 s)", stat_path, path, bpath, n);
	snprintf(path, sizeof(path), "%s/ppu3/mig/4g.48gb", mnt);
	snprintf(bpath, sizeof(bpath), "%s/profile", base);
	row("list a profile directory", list_dir, path, bpath, n);
	row("mkdir+rmdir (carve + reclaim)", carve, path, bpath, n / 10 ? n / 10 : 1);

	umount2(mnt, 0);
	umount2(base, 0);
	rmdir(mnt);
	rmdir(base);
	snprintf(arg, sizeof(arg), "rm -rf %s", state);
	if (system(arg))
		fprintf(stderr, "could not remove %s\n", state);
	return 0;
}
