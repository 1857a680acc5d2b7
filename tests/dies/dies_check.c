/* SPDX-License-Identifier: MIT */
/*
 * dies_check DIES_DIR: the rules of dies/<n>/vram (docs/dies.md), checked
 * from the outside, the way any program sees them.
 *
 * The same program runs in two places: on the simulated node
 * (tests/integration/test_dies.py) and inside the QEMU guest over the real
 * bar_swap.ko (tests/dies/guest.d/), so the two suites check the same
 * things.  It needs only libc (the guest has busybox and nothing else).
 * Prints "PASS: ..." / "FAIL: ..." lines, then "N passed, N failed"; exits
 * 1 if anything failed.  Needs at least four dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dies;
static int passed, failed;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf(ok ? "PASS: " : "FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void path_of(char *buf, size_t len, int die, const char *file)
{
	if (die < 0)
		snprintf(buf, len, "%s/%s", dies, file);
	else
		snprintf(buf, len, "%s/%d/%s", dies, die, file);
}

/* The value of "key: value" in a dies file, or "" */
static void keyval(int die, const char *file, const char *key, char *out, size_t len)
{
	char path[512], line[256];
	size_t klen = strlen(key);
	FILE *f;

	out[0] = '\0';
	path_of(path, sizeof(path), die, file);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			snprintf(out, len, "%s", line + klen + 2);
			out[strcspn(out, "\n")] = '\0';
			break;
		}
	fclose(f);
}

static long slot_num(const char *key)
{
	char v[64];

	keyval(-1, "slot", key, v, sizeof(v));
	return v[0] >= '0' && v[0] <= '9' ? strtol(v, NULL, 10) : -1;
}

static bool wait_slot(const char *key, long want)
{
	for (int i = 0; i < 1000; i++) {
		if (slot_num(key) == want)
			return true;
		sleep_ms(10);
	}
	return false;
}

static int open_vram(int die, int flags)
{
	char path[512];

	path_of(path, sizeof(path), die, "vram");
	return open(path, flags | O_CLOEXEC);
}

static int open_errno(int die, int flags)
{
	int fd = open_vram(die, flags);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int set_enabled(int die, const char *v)
{
	char path[512];
	int fd, ret = 0;

	path_of(path, sizeof(path), die, "enabled");
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, v, strlen(v)) < 0)
		ret = errno;
	close(fd);
	return ret;
}

static uint64_t vram_size(int die)
{
	char v[64];

	keyval(die, "info", "vram_bytes", v, sizeof(v));
	return strtoull(v, NULL, 10);
}

/* ---- child openers --------------------------------------------------------------- */

struct child {
	pid_t pid;
	int ctl;    /* write a byte (or close) to make it release */
	int report; /* it writes 'G' when it has the file, or 'E' + errno */
};

static void on_usr1(int sig)
{
	(void)sig;
}

/* A process that opens die's vram (blocking unless nonblock) and holds it until told. */
static struct child spawn(int die, bool nonblock)
{
	int ctl[2], rep[2];
	struct child c = { -1, -1, -1 };

	if (pipe(ctl) || pipe(rep))
		return c;
	c.pid = fork();
	if (!c.pid) {
		struct sigaction sa;
		char b;
		int fd;

		close(ctl[1]);
		close(rep[0]);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sa.sa_flags = SA_RESTART; /* an interrupted wait must still end in EINTR */
		sigaction(SIGUSR1, &sa, NULL);
		alarm(60); /* never outlive a broken run */
		fd = open_vram(die, O_RDWR | (nonblock ? O_NONBLOCK : 0));
		if (fd < 0) {
			char msg[2] = { 'E', (char)errno };
			if (write(rep[1], msg, 2) < 0)
				_exit(3);
			_exit(0);
		}
		if (write(rep[1], "G", 1) < 0)
			_exit(3);
		if (read(ctl[0], &b, 1) < 0)
			_exit(3);
		close(fd);
		_exit(0);
	}
	close(ctl[0]);
	close(rep[1]);
	c.ctl = ctl[1];
	c.report = rep[0];
	return c;
}

/* 0 when the child has the file, the errno it got, or -1 if it said nothing within timeout_ms. */
static int outcome(struct child *c, int timeout_ms)
{
	char msg[2];
	fd_set fds;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

	FD_ZERO(&fds);
	FD_SET(c->report, &fds);
	if (select(c->report + 1, &fds, NULL, NULL, &tv) <= 0)
		return -1;
	if (read(c->report, msg, 2) < 1)
		return -1;
	return msg[0] == 'G' ? 0 : (unsigned char)msg[1];
}

static void finish(struct child *c)
{
	if (c->pid <= 0)
		return;
	close(c->ctl);
	close(c->report);
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	c->pid = -1;
}

/* Let it close its file and exit. */
static void release_child(struct child *c)
{
	if (write(c->ctl, "x", 1) < 0)
		return;
	waitpid(c->pid, NULL, 0);
	close(c->ctl);
	close(c->report);
	c->pid = -1;
}

/* ---- the checks -------------------------------------------------------------------- */

static void check_tree(int n)
{
	char v[64];
	struct stat st;
	char path[512];

	keyval(-1, "slot", "active", v, sizeof(v));
	check(!strcmp(v, "none"), "slot: nothing active at first (active: %s)", v);
	check(slot_num("holders") == 0 && slot_num("waiters") == 0, "slot: no holders, no waiters");
	check(slot_num("dies") == n, "slot: %d dies", n);
	for (int d = 0; d < n; d++) {
		path_of(path, sizeof(path), d, "vram");
		keyval(d, "info", "bus_id", v, sizeof(v));
		check(!stat(path, &st) && (uint64_t)st.st_size == vram_size(d) && vram_size(d) > 0 && v[0],
		      "die %d: bus id %s, vram %llu bytes, the size of dies/%d/vram", d, v,
		      (unsigned long long)vram_size(d), d);
	}
	path_of(path, sizeof(path), n, "vram");
	check(stat(path, &st) && errno == ENOENT, "no die %d", n);
}

/* A recognizable pattern per die and offset. */
static void pattern(char *buf, size_t len, int die, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((die * 37 + (int)((off + i) % 251)) & 0xff);
}

static const uint64_t probe_len = 65536;

static void offsets_of(int die, uint64_t off[3])
{
	uint64_t size = vram_size(die);

	off[0] = 0;
	off[1] = size / 2 + 12345;
	off[2] = size - probe_len;
}

static bool write_die(int die)
{
	char *buf = malloc(probe_len);
	uint64_t off[3];
	bool ok = true;
	int fd = open_vram(die, O_RDWR);

	offsets_of(die, off);
	for (int i = 0; i < 3 && fd >= 0; i++) {
		pattern(buf, probe_len, die, off[i]);
		ok = ok && pwrite(fd, buf, probe_len, (off_t)off[i]) == (ssize_t)probe_len;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return fd >= 0 && ok;
}

static bool die_intact(int die)
{
	char *buf = malloc(probe_len), *want = malloc(probe_len);
	uint64_t off[3];
	bool ok = true;
	int fd = open_vram(die, O_RDONLY);

	offsets_of(die, off);
	for (int i = 0; i < 3 && fd >= 0; i++) {
		pattern(want, probe_len, die, off[i]);
		ok = ok && pread(fd, buf, probe_len, (off_t)off[i]) == (ssize_t)probe_len &&
		     !memcmp(buf, want, probe_len);
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	free(want);
	return fd >= 0 && ok;
}

static void check_data(int n)
{
	for (int d = 0; d < n; d++)
		check(write_die(d), "die %d: written at the start, the middle and the end", d);
	for (int d = n - 1; d >= 0; d--)
		check(die_intact(d), "die %d: its data survived the other dies holding the slot", d);
}

static void check_ends(int die)
{
	uint64_t size = vram_size(die);
	char buf[64];
	int fd = open_vram(die, O_RDWR);

	check(fd >= 0, "die %d: open for the end checks", die);
	if (fd < 0)
		return;
	check(pread(fd, buf, sizeof(buf), (off_t)size) == 0, "read at the end: 0 bytes");
	check(pread(fd, buf, sizeof(buf), (off_t)(size + 4096)) == 0, "read past the end: 0 bytes");
	check(pread(fd, buf, sizeof(buf), (off_t)(size - 10)) == 10, "read across the end: short (10 bytes)");
	errno = 0;
	check(pwrite(fd, "x", 1, (off_t)size) < 0 && errno == ENOSPC, "write at the end: ENOSPC (%s)", strerror(errno));
	errno = 0;
	check(pwrite(fd, "x", 1, (off_t)(size + 1048576)) < 0 && errno == ENOSPC, "write past the end: ENOSPC");
	check(pwrite(fd, "12345678", 8, (off_t)(size - 4)) == 4, "write across the end: short (4 bytes)");
	close(fd);
}

static void check_shared_and_nonblock(void)
{
	struct child a = spawn(0, false), b;
	int err;

	check(outcome(&a, 10000) == 0, "an opener of die 0 gets it");
	b = spawn(0, true);
	check(outcome(&b, 10000) == 0, "a second opener of die 0 shares it, even O_NONBLOCK");
	check(slot_num("holders") == 2, "slot: 2 holders");
	err = open_errno(1, O_RDWR | O_NONBLOCK);
	check(err == EAGAIN, "O_NONBLOCK open of die 1 meanwhile: EAGAIN (%s)", strerror(err));
	release_child(&a);
	check(slot_num("holders") == 1, "one closes: 1 holder");
	release_child(&b);
	check(slot_num("holders") == 0 && slot_num("active") == -1, "both closed: the slot is free");
}

static void check_fifo(void)
{
	struct child holder = spawn(0, false), w[3];
	const int order[3] = { 3, 1, 2 };
	double got[3];
	bool ok = true;

	check(outcome(&holder, 10000) == 0, "fifo: die 0 held");
	for (int i = 0; i < 3; i++) {
		w[i] = spawn(order[i], false);
		check(wait_slot("waiters", i + 1), "fifo: waiter %d (die %d) parked", i + 1, order[i]);
	}
	release_child(&holder);
	for (int i = 0; i < 3; i++) {
		int r = outcome(&w[i], 10000);
		got[i] = now();
		check(r == 0, "fifo: waiter %d (die %d) served", i + 1, order[i]);
		for (int j = i + 1; j < 3; j++)
			ok = ok && outcome(&w[j], 200) == -1;
		check(ok, "fifo: nobody behind waiter %d was served while it held the slot", i + 1);
		release_child(&w[i]);
	}
	check(got[0] <= got[1] && got[1] <= got[2], "fifo: served in arrival order");
}

static void check_signal(void)
{
	struct child holder = spawn(0, false), w, k;
	int r;

	outcome(&holder, 10000);
	w = spawn(1, false);
	check(wait_slot("waiters", 1), "signal: a waiter is parked");
	kill(w.pid, SIGUSR1);
	r = outcome(&w, 10000);
	check(r == EINTR, "signal: the interrupted open fails with EINTR (got %s)", r > 0 ? strerror(r) : "nothing");
	check(wait_slot("waiters", 0), "signal: it left the queue");
	finish(&w);
	k = spawn(2, false);
	check(wait_slot("waiters", 1), "SIGKILL: a waiter is parked");
	kill(k.pid, SIGKILL);
	check(wait_slot("waiters", 0), "SIGKILL: the killed waiter left the queue");
	finish(&k);
	release_child(&holder);
	check(open_errno(3, O_RDWR | O_NONBLOCK) == 0, "signal: the queue is clean, the slot free");
}

static void check_sequential(int n)
{
	int bad = 0;

	for (int i = 0; i < 200; i++) {
		int fd = open_vram(i % n, O_RDWR | O_NONBLOCK);
		char b;
		if (fd < 0 || pread(fd, &b, 1, 0) != 1)
			bad++;
		if (fd >= 0)
			close(fd);
	}
	check(!bad, "200 open/read/close in sequence over %d dies, O_NONBLOCK: no spurious error (%d)", n, bad);
}

static void check_kill9_holder(void)
{
	struct child holder = spawn(0, false), w;
	int r;

	check(outcome(&holder, 10000) == 0, "kill -9: die 0 held");
	w = spawn(1, false);
	check(wait_slot("waiters", 1), "kill -9: a waiter for die 1 is parked");
	kill(holder.pid, SIGKILL);
	r = outcome(&w, 10000);
	check(r == 0, "kill -9: the holder's death hands the slot to the waiter");
	finish(&holder);
	release_child(&w);
}

static void check_quarantine(void)
{
	struct child holder = spawn(0, false), w;
	int fd, r;
	char b;

	outcome(&holder, 10000);
	w = spawn(2, false);
	check(wait_slot("waiters", 1), "quarantine: a waiter for die 2 is parked");
	r = set_enabled(2, "0\n");
	check(r == 0, "quarantine: writing 0 to dies/2/enabled (%s)", strerror(r));
	r = outcome(&w, 10000);
	check(r == ENODEV, "quarantine: the waiter fails with ENODEV (%s)", r > 0 ? strerror(r) : "nothing");
	finish(&w);
	r = open_errno(2, O_RDWR);
	check(r == ENODEV, "quarantine: new opens fail with ENODEV (%s)", strerror(r));
	release_child(&holder);
	check(set_enabled(2, "1") == 0 && open_errno(2, O_RDWR) == 0, "quarantine: re-enabled, it opens");
	check(set_enabled(2, "2") == EINVAL, "quarantine: only 0 or 1 (EINVAL)");
	/* the die in use: its holder loses it */
	fd = open_vram(1, O_RDWR);
	check(fd >= 0 && set_enabled(1, "0") == 0, "quarantine of the die in use");
	errno = 0;
	check(fd >= 0 && pread(fd, &b, 1, 0) < 0 && errno == ENODEV, "its holder's reads fail with ENODEV (%s)",
	      strerror(errno));
	check(slot_num("active") == -1 && open_errno(3, O_RDWR | O_NONBLOCK) == 0,
	      "the slot is free for the others at once");
	if (fd >= 0)
		close(fd);
	check(set_enabled(1, "1") == 0, "re-enabled");
}

int main(int argc, char **argv)
{
	int n;

	if (argc != 2) {
		fprintf(stderr, "usage: dies_check DIES_DIR\n");
		return 2;
	}
	dies = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	n = (int)slot_num("dies");
	if (n < 4) {
		printf("FAIL: dies_check needs 4 dies, %s/slot says %d\n0 passed, 1 failed\n", dies, n);
		return 1;
	}
	check_tree(n);
	check_ends(n - 1); /* before the patterns: it writes the last bytes of the last die */
	check_data(n);
	check_shared_and_nonblock();
	check_fifo();
	check_signal();
	check_sequential(n);
	check_kill9_holder();
	check_quarantine();
	for (int d = 0; d < n; d++)
		check(die_intact(d), "die %d: still intact at the end", d);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
