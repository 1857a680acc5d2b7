/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the guest programs (the .c files beside this one): PASS/FAIL lines,
 * the ioctls as 0 or -errno, children that cannot hang the suite, touching
 * a mapping that may SIGBUS, and the sysfs view of a PCI die.  Static
 * functions in a header: each program is one static binary of one file.
 */
#ifndef BS_LIB_H
#define BS_LIB_H

#define PAGE 4096UL

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bar_swap_uapi.h"

static int failures;

__attribute__((format(printf, 2, 3), unused)) static void check(bool ok, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	printf("%s: %s\n", ok ? "PASS" : "FAIL", name);
	fflush(stdout);
	if (!ok)
		failures++;
}

/* Checks that an int result is as expected, naming both on failure. */
#define CHECK_EQ(got, want, ...)                                                                                       \
	do {                                                                                                           \
		long long g_ = (got), w_ = (want);                                                                     \
		char n_[200];                                                                                          \
		snprintf(n_, sizeof(n_), __VA_ARGS__);                                                                 \
		if (g_ == w_)                                                                                          \
			check(true, "%s", n_);                                                                         \
		else                                                                                                   \
			check(false, "%s (got %lld, want %lld)", n_, g_, w_);                                          \
	} while (0)

__attribute__((unused)) static void die_hard(const char *what)
{
	printf("FAIL: %s: %s\n", what, strerror(errno));
	exit(2);
}

__attribute__((unused)) static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((unused)) static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- the ioctls: 0 or -errno ---- */
__attribute__((unused)) static int bs_open(int flags)
{
	int fd = open(BAR_SWAP_DEVICE, O_RDWR | O_CLOEXEC | flags);

	if (fd < 0)
		die_hard("open " BAR_SWAP_DEVICE);
	return fd;
}

__attribute__((unused)) static int query(int fd, struct bar_swap_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	return ioctl(fd, BAR_SWAP_IOC_QUERY, q) ? -errno : 0;
}

__attribute__((unused)) static struct bar_swap_query Q(int fd) {
	struct bar_swap_query q;

	if (query(fd, &q))
		die_hard("QUERY");
	return q;
}

__attribute__((unused)) static int
die_info(int fd, unsigned int die, struct bar_swap_die_info *di)
{
	memset(di, 0, sizeof(*di));
	di->size = sizeof(*di);
	di->die = die;
	return ioctl(fd, BAR_SWAP_IOC_DIE_INFO, di) ? -errno : 0;
}

__attribute__((unused)) static int acquire_full(int fd, unsigned int die, unsigned int flags, unsigned int timeout_ms,
                                                struct bar_swap_acquire *out)
{
	struct bar_swap_acquire a = { .size = sizeof(a), .die = die, .flags = flags, .timeout_ms = timeout_ms };
	int r = ioctl(fd, BAR_SWAP_IOC_ACQUIRE, &a) ? -errno : 0;

	if (out)
		*out = a;
	return r;
}

__attribute__((unused)) static int acquire(int fd, unsigned int die)
{
	return acquire_full(fd, die, 0, 0, NULL);
}

__attribute__((unused)) static int set_enabled(int fd, unsigned int die, unsigned int en)
{
	struct bar_swap_set_enabled s = { .size = sizeof(s), .die = die, .enabled = en };

	return ioctl(fd, BAR_SWAP_IOC_SET_ENABLED, &s) ? -errno : 0;
}

__attribute__((unused)) static int release(int fd)
{
	return ioctl(fd, BAR_SWAP_IOC_RELEASE) ? -errno : 0;
}

/* Poll until n ACQUIREs are queued (children racing to queue). */
__attribute__((unused)) static bool wait_waiters(int fd, unsigned int n)
{
	for (int i = 0; i < 1000; i++) {
		if (Q(fd).waiters == n)
			return true;
		msleep(5);
	}
	return false;
}

/* ---- children ---- */
__attribute__((unused)) static int wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Children that wait must not wait forever if the module misbehaves. */
__attribute__((unused)) static pid_t fork_child(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		alarm(20);
	return pid;
}

/* Has the child exited (without reaping it)? */
__attribute__((unused)) static bool child_done(pid_t pid)
{
	siginfo_t si = { 0 };

	return !waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid;
}

/* ---- touching a mapping, surviving SIGBUS ---- */
static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

__attribute__((unused)) static void catch_sigbus(void)
{
	struct sigaction sa = { .sa_handler = on_sigbus };

	sigaction(SIGBUS, &sa, NULL);
}

/* 0 and the value, or -1 if the access raised SIGBUS. */
__attribute__((unused)) static int peek(volatile uint32_t *p, uint32_t *val)
{
	if (sigsetjmp(bus_jmp, 1))
		return -1;
	*val = *p;
	return 0;
}

__attribute__((unused)) static int poke(volatile uint32_t *p, uint32_t val)
{
	if (sigsetjmp(bus_jmp, 1))
		return -1;
	*p = val;
	return 0;
}

__attribute__((unused)) static void *map_slot(int fd, uint64_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		die_hard("mmap slot");
	return m;
}

/* ---- sysfs ---- */
/* The driver a PCI device is bound to ("" if none), from its driver link. */
__attribute__((unused)) static void sysfs_driver(const char *bus_id, char *buf, size_t len)
{
	char path[128], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bus_id);
	n = readlink(path, link, sizeof(link) - 1);
	buf[0] = '\0';
	if (n > 0) {
		const char *base;

		link[n] = '\0';
		base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		if (strlen(base) < len)
			memcpy(buf, base, strlen(base) + 1);
	}
}

__attribute__((unused)) static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), r;

	if (fd < 0)
		return -errno;
	r = write(fd, s, strlen(s)) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* ---- more of the sysfs view, and the slot mapping by offset ---- */
__attribute__((unused)) static volatile uint32_t *at(void *map, uint64_t off)
{
	return (volatile uint32_t *)((char *)map + off);
}

/* ---- sysfs view of a PCI die ---- */
__attribute__((unused)) static bool is_sim(int fd, unsigned int die)
{
	struct bar_swap_die_info di;

	return die_info(fd, die, &di) || (di.flags & BAR_SWAP_DIE_SIM);
}

__attribute__((unused)) static int pci_config(const char *bus_id, unsigned int off, void *buf, size_t len)
{
	char path[128];
	int fd, n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", bus_id);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, off);
	close(fd);
	return n == (int)len ? 0 : -1;
}

/* 1 if the die decodes memory, 0 if not, -1 if unknown. */
__attribute__((unused)) static int decoding(int fd, unsigned int die)
{
	struct bar_swap_die_info di;
	uint16_t cmd;

	if (die_info(fd, die, &di) || pci_config(di.bus_id, 4, &cmd, 2))
		return -1;
	return !!(cmd & 2);
}

/* Among PCI dies, exactly `active` (or none, -1) decodes. */
__attribute__((unused)) static bool only_decoding(int fd, int active)
{
	unsigned int n = Q(fd).num_dies;

	for (unsigned int i = 0; i < n; i++)
		if (!is_sim(fd, i) && decoding(fd, i) != ((int)i == active))
			return false;
	return true;
}

/* Length of the device's largest memory BAR, from sysfs. */
__attribute__((unused)) static long long sysfs_bar_len(const char *bus_id)
{
	unsigned long long start, end, flags, best = 0;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bus_id);
	f = fopen(path, "r");
	if (!f)
		return -1;
	for (int i = 0; i < 6 && fscanf(f, "%llx %llx %llx", &start, &end, &flags) == 3; i++)
		if ((flags & 0x200) && end > start && end - start + 1 > best) /* IORESOURCE_MEM */
			best = end - start + 1;
	fclose(f);
	return best;
}

#endif
