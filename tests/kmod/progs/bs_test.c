// SPDX-License-Identifier: MIT
/*
 * bs_test: exercises /dev/bar_swap inside the QEMU guest.
 *
 *   bs_test all N [SIZE]       the whole battery on N dies (3+; SIZE: each die's VRAM)
 *
 * (What the dies are bound to and how they decode: bs_bind.c.  Helpers: bs_lib.h.)
 *
 * Prints one "PASS: name" or "FAIL: name (why)" line per check and exits 1
 * if any failed.  Linked statically: the guest has no libc.
 */
#include <sys/syscall.h>

#include "bs_lib.h"

/* ---- the battery ---- */
static unsigned int nd; /* dies */
static uint64_t vram[BAR_SWAP_MAX_DIES];
static uint64_t slot_size;

static void t_basics(unsigned int want_dies, uint64_t want_size)
{
	int fd = bs_open(0), other = bs_open(0);
	struct bar_swap_query q = Q(fd);
	struct bar_swap_die_info di;
	uint64_t maxsz = 0;
	struct {
		struct bar_swap_query q;
		uint8_t tail[16];
	} big;

	CHECK_EQ(q.version, BAR_SWAP_UAPI_VERSION, "query: version");
	CHECK_EQ(q.size, sizeof(q), "query: size echoed");
	CHECK_EQ(q.num_dies, want_dies, "query: number of dies");
	CHECK_EQ(q.num_slots, 1, "query: one slot");
	CHECK_EQ(q.active_die, -1, "query: slot starts empty");
	CHECK_EQ(q.owner_pid, 0, "query: no owner");
	CHECK_EQ(q.waiters, 0, "query: no waiters");
	CHECK_EQ(q.open_files, 2, "query: counts open files");
	nd = q.num_dies;
	for (unsigned int i = 0; i < nd; i++) {
		int r = die_info(fd, i, &di);

		CHECK_EQ(r, 0, "die_info %u", i);
		check((di.flags & (BAR_SWAP_DIE_PRESENT | BAR_SWAP_DIE_ENABLED | BAR_SWAP_DIE_ACTIVE)) ==
		              (BAR_SWAP_DIE_PRESENT | BAR_SWAP_DIE_ENABLED),
		      "die_info %u: present, enabled, not active (flags %#x)", i, di.flags);
		check(di.vram_size >= PAGE && (!want_size || di.vram_size == want_size), "die_info %u: vram size %llu",
		      i, (unsigned long long)di.vram_size);
		check(di.bus_id[0] != 0, "die_info %u: bus id \"%s\"", i, di.bus_id);
		vram[i] = di.vram_size;
		if (di.vram_size > maxsz)
			maxsz = di.vram_size;
	}
	slot_size = q.slot_size;
	CHECK_EQ(q.slot_size, maxsz, "query: slot size is the largest die");
	CHECK_EQ(die_info(fd, nd, &di), -EINVAL, "die_info past the last die: EINVAL");

	/* The extensible-struct rules. */
	memset(&big, 0, sizeof(big));
	big.q.size = 8;
	CHECK_EQ(ioctl(fd, BAR_SWAP_IOC_QUERY, &big) ? -errno : 0, -EINVAL, "query: size too small: EINVAL");
	big.q.size = sizeof(big);
	CHECK_EQ(ioctl(fd, BAR_SWAP_IOC_QUERY, &big) ? -errno : 0, 0, "query: larger struct, zero tail: ok");
	CHECK_EQ(big.q.size, sizeof(q), "query: reports the bytes it filled");
	big.q.size = sizeof(big);
	big.tail[15] = 1;
	CHECK_EQ(ioctl(fd, BAR_SWAP_IOC_QUERY, &big) ? -errno : 0, -E2BIG, "query: nonzero tail: E2BIG");
	CHECK_EQ(ioctl(fd, _IO(BAR_SWAP_IOC_MAGIC, 0x7f)) ? -errno : 0, -ENOTTY, "unknown ioctl: ENOTTY");
	CHECK_EQ(acquire_full(fd, 0, 0x80, 0, NULL), -EINVAL, "acquire: unknown flag: EINVAL");
	CHECK_EQ(acquire(fd, nd), -EINVAL, "acquire: die past the last: EINVAL");
	CHECK_EQ(acquire(fd, 999), -EINVAL, "acquire: die 999: EINVAL");

	/* mmap rules. */
	check(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED && errno == EINVAL,
	      "mmap MAP_PRIVATE: EINVAL");
	check(mmap(NULL, slot_size + PAGE, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EINVAL,
	      "mmap past the slot size: EINVAL");
	close(fd);
	close(other);
}

static void t_acquire_release(void)
{
	int fd = bs_open(0), other = bs_open(0);
	struct bar_swap_acquire a;
	struct bar_swap_query q;
	uint64_t swaps = Q(fd).swaps;

	CHECK_EQ(acquire_full(fd, 0, 0, 0, &a), 0, "acquire die 0 on a free slot");
	CHECK_EQ(a.vram_size, vram[0], "acquire: reports the die's vram size");
	q = Q(fd);
	CHECK_EQ(q.active_die, 0, "acquire: die 0 is active");
	CHECK_EQ(q.owner_pid, getpid(), "acquire: owner pid is ours");
	check(q.flags & BAR_SWAP_QUERY_OWNER, "acquire: query says this file owns the slot");
	check(!(Q(other).flags & BAR_SWAP_QUERY_OWNER), "acquire: another file does not own it");
	CHECK_EQ(q.swaps, swaps + 1, "acquire: swap counted");
	check(only_decoding(fd, 0), "acquire: only die 0 decodes memory");
	CHECK_EQ(acquire(fd, 0), 0, "acquire the same die again: no-op");
	CHECK_EQ(Q(fd).swaps, swaps + 1, "acquire the same die again: no swap");
	CHECK_EQ(acquire(fd, 1), 0, "owner switches to die 1 without queueing");
	CHECK_EQ(Q(fd).active_die, 1, "switch: die 1 is active");
	check(only_decoding(fd, 1), "switch: die 0 parked, die 1 decodes");
	CHECK_EQ(release(other), -EPERM, "release by a non-owner: EPERM");
	CHECK_EQ(release(fd), 0, "release");
	q = Q(fd);
	CHECK_EQ(q.active_die, -1, "release: slot empty");
	CHECK_EQ(q.owner_pid, 0, "release: no owner");
	check(only_decoding(fd, -1), "release: every die parked");
	CHECK_EQ(release(fd), -EPERM, "release twice: EPERM");
	close(fd);
	close(other);
}

static void t_nonblock(void)
{
	int fd = bs_open(0), nb = bs_open(O_NONBLOCK), other = bs_open(0);
	double t;

	CHECK_EQ(acquire(fd, 0), 0, "nonblock: holder acquires die 0");
	t = now();
	CHECK_EQ(acquire(nb, 1), -EAGAIN, "O_NONBLOCK acquire on a busy slot: EAGAIN");
	check(now() - t < 1.0, "O_NONBLOCK: fails at once (%.3f s)", now() - t);
	CHECK_EQ(acquire(nb, 0), -EAGAIN, "O_NONBLOCK acquire of the held die: EAGAIN");
	CHECK_EQ(acquire_full(other, 1, BAR_SWAP_ACQUIRE_NONBLOCK, 0, NULL), -EAGAIN,
	         "ACQUIRE_NONBLOCK flag on a busy slot: EAGAIN");
	t = now();
	CHECK_EQ(acquire_full(other, 1, 0, 300, NULL), -ETIMEDOUT, "timeout_ms=300: ETIMEDOUT");
	check(now() - t >= 0.29 && now() - t < 5, "timeout: waited %.3f s", now() - t);
	CHECK_EQ(Q(fd).waiters, 0, "timeout: left the queue");
	CHECK_EQ(release(fd), 0, "nonblock: holder releases");
	CHECK_EQ(acquire(nb, 2), 0, "O_NONBLOCK acquire on a free slot: ok");
	CHECK_EQ(release(nb), 0, "nonblock: release");
	close(fd);
	close(nb);
	close(other);
}

/* Ownership belongs to the file: threads/processes sharing it share it. */
static void t_samefile(void)
{
	int holder = bs_open(0), shared = bs_open(0);
	pid_t kid;

	CHECK_EQ(acquire(holder, 0), 0, "samefile: holder acquires die 0");
	kid = fork_child();
	if (kid == 0) /* queues on the inherited file, then leaves it owned */
		_exit(acquire(shared, 1) == 0 ? 0 : 1);
	check(wait_waiters(holder, 1), "samefile: child queued on the shared file");
	CHECK_EQ(acquire(shared, 2), -EBUSY, "samefile: second wait on the same file: EBUSY");
	CHECK_EQ(release(holder), 0, "samefile: holder releases");
	CHECK_EQ(wait_child(kid), 0, "samefile: child got the slot");
	check(Q(shared).flags & BAR_SWAP_QUERY_OWNER, "samefile: the file still owns it after the child exits");
	CHECK_EQ(Q(shared).active_die, 1, "samefile: die 1 active");
	CHECK_EQ(release(shared), 0, "samefile: parent releases through the shared file");
	close(holder);
	close(shared);
}

/* Three children queue in a known order; they must be served in it. */
static void t_fifo(void)
{
	int fd = bs_open(0), pfd[2];
	static const unsigned int want_die[3] = { 1, 2, 0 };
	pid_t kids[3];
	char order[4] = "";

	if (pipe(pfd))
		die_hard("pipe");
	CHECK_EQ(acquire(fd, 0), 0, "fifo: parent holds the slot");
	for (int k = 0; k < 3; k++) {
		kids[k] = fork_child();
		if (kids[k] == 0) {
			int cfd = bs_open(0), ok;
			struct bar_swap_acquire a;
			struct bar_swap_query q;
			char c = '1' + k;

			close(pfd[0]);
			if (acquire_full(cfd, want_die[k], 0, 0, &a))
				_exit(10);
			q = Q(cfd);
			ok = q.active_die == (int)want_die[k] && q.owner_pid == getpid() && a.wait_ns > 0;
			if (write(pfd[1], &c, 1) != 1)
				_exit(11);
			msleep(30); /* hold it a little: the next must still wait */
			_exit(ok && !release(cfd) ? 0 : 12);
		}
		check(wait_waiters(fd, k + 1), "fifo: waiter %d queued (waiters=%u)", k + 1, Q(fd).waiters);
	}
	close(pfd[1]);
	CHECK_EQ(release(fd), 0, "fifo: parent releases");
	for (int k = 0; k < 3; k++)
		if (read(pfd[0], &order[k], 1) != 1)
			break;
	check(!strcmp(order, "123"), "fifo: served in arrival order (got \"%s\")", order);
	for (int k = 0; k < 3; k++)
		CHECK_EQ(wait_child(kids[k]), 0, "fifo: waiter %d saw its die, itself as owner, and released", k + 1);
	CHECK_EQ(Q(fd).active_die, -1, "fifo: slot empty at the end");
	CHECK_EQ(Q(fd).waiters, 0, "fifo: queue empty at the end");
	close(pfd[0]);
	close(fd);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void t_signal(void)
{
	int fd = bs_open(0);
	pid_t kid;

	CHECK_EQ(acquire(fd, 0), 0, "signal: parent holds the slot");
	kid = fork_child();
	if (kid == 0) {
		/* SA_RESTART on purpose: the wait must still end with EINTR. */
		struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
		int cfd = bs_open(0);

		sigaction(SIGUSR1, &sa, NULL);
		_exit(acquire(cfd, 1) == -EINTR && !(Q(cfd).flags & BAR_SWAP_QUERY_OWNER) ? 0 : 1);
	}
	check(wait_waiters(fd, 1), "signal: child queued");
	kill(kid, SIGUSR1);
	CHECK_EQ(wait_child(kid), 0, "signal: queued acquire ends with EINTR (even with SA_RESTART)");
	CHECK_EQ(Q(fd).waiters, 0, "signal: interrupted waiter left the queue");

	kid = fork_child();
	if (kid == 0) {
		int cfd = bs_open(0);

		acquire(cfd, 1);
		_exit(0);
	}
	check(wait_waiters(fd, 1), "signal: second child queued");
	kill(kid, SIGKILL);
	CHECK_EQ(wait_child(kid), 128 + SIGKILL, "signal: SIGKILL ends a queued waiter");
	CHECK_EQ(Q(fd).waiters, 0, "signal: killed waiter left the queue");
	CHECK_EQ(release(fd), 0, "signal: parent releases");
	CHECK_EQ(Q(fd).active_die, -1, "signal: nobody was handed the slot");
	close(fd);
}

/* One mapping, reused for every die: data must stay with its die. */
static uint32_t tag(unsigned int die, uint64_t off)
{
	return 0xd1e00000u ^ (die << 16) ^ (uint32_t)(off >> 12) ^ (uint32_t)(off >> 32);
}

static void offsets(unsigned int die, uint64_t off[3])
{
	off[0] = 0x10000 + 4 * die; /* past the 64 KiB block t_data fills */
	off[1] = vram[die] / 2 + 4 * die;
	off[2] = vram[die] - 4;
}

static void t_data(void)
{
	int fd = bs_open(0);
	void *m = map_slot(fd, slot_size);
	uint64_t off[3];
	uint32_t v;
	bool ok;

	for (unsigned int d = 0; d < nd; d++) {
		CHECK_EQ(acquire(fd, d), 0, "data: acquire die %u", d);
		offsets(d, off);
		ok = true;
		for (int i = 0; i < 3; i++)
			ok &= !poke(at(m, off[i]), tag(d, off[i]));
		memset(m, 0x40 + d, 64 * 1024);
		check(ok, "data: write die %u through the mapping (offsets 0, mid, last word)", d);
	}
	CHECK_EQ(release(fd), 0, "data: release");
	for (int d = nd - 1; d >= 0; d--) {
		char want[64 * 1024];

		CHECK_EQ(acquire(fd, d), 0, "data: re-acquire die %d", d);
		offsets(d, off);
		ok = true;
		for (int i = 0; i < 3; i++)
			ok &= !peek(at(m, off[i]), &v) && v == tag(d, off[i]);
		memset(want, 0x40 + d, sizeof(want));
		ok &= !memcmp(m, want, sizeof(want));
		check(ok, "data: die %d kept its data while other dies held the slot", d);
	}
	/* The active die is the smallest-indexed one now: past its end is SIGBUS. */
	if (vram[0] < slot_size) {
		CHECK_EQ(acquire(fd, 0), 0, "data: acquire die 0");
		CHECK_EQ(peek(at(m, vram[0]), &v), -1, "data: past the active die's size: SIGBUS");
	}
	release(fd);
	munmap(m, slot_size);
	close(fd);
}

static void t_stale(void)
{
	int fd = bs_open(0), other = bs_open(0), pfd[2], gfd[2];
	void *m = map_slot(fd, slot_size), *mo = map_slot(other, slot_size);
	uint32_t v;
	pid_t kid;
	char c;

	CHECK_EQ(acquire(fd, 0), 0, "stale: acquire die 0");
	CHECK_EQ(poke(at(m, 0), 0x5a5a0000), 0, "stale: owner writes die 0");
	CHECK_EQ(peek(at(mo, 0), &v), -1, "stale: a non-owner's mapping gets SIGBUS");

	kid = fork_child(); /* a forked child shares the file, hence the ownership */
	if (kid == 0)
		_exit(!peek(at(m, 0), &v) && v == 0x5a5a0000 ? 0 : 1);
	CHECK_EQ(wait_child(kid), 0, "stale: forked child reads through the owner's mapping");

	CHECK_EQ(release(fd), 0, "stale: release");
	CHECK_EQ(peek(at(m, 0), &v), -1, "stale: read after release: SIGBUS");
	CHECK_EQ(poke(at(m, 0), 1), -1, "stale: write after release: SIGBUS");

	/* Another process holds die 1: the stale mapping must not reach it. */
	if (pipe(pfd) || pipe(gfd))
		die_hard("pipe");
	kid = fork_child();
	if (kid == 0) {
		int cfd = bs_open(0);
		void *cm = map_slot(cfd, slot_size);
		int ok = !acquire(cfd, 1) && !poke(at(cm, 0), 0x11111111);

		c = ok ? 'y' : 'n';
		if (write(pfd[1], &c, 1) != 1 || read(gfd[0], &c, 1) != 1)
			_exit(3);
		ok &= !peek(at(cm, 0), &v) && v == 0x11111111;
		_exit(ok ? 0 : 1);
	}
	CHECK_EQ(read(pfd[0], &c, 1) == 1 && c == 'y', 1, "stale: another process holds die 1");
	CHECK_EQ(peek(at(m, 0), &v), -1, "stale: read while another die is active: SIGBUS");
	CHECK_EQ(poke(at(m, 0), 0x22222222), -1, "stale: write while another die is active: SIGBUS");
	CHECK_EQ(peek(at(mo, 0), &v), -1, "stale: other file's old mapping: SIGBUS");
	if (write(gfd[1], "g", 1) != 1)
		die_hard("pipe");
	CHECK_EQ(wait_child(kid), 0, "stale: die 1 unchanged by the stale writes");
	close(pfd[0]);
	close(pfd[1]);
	close(gfd[0]);
	close(gfd[1]);

	CHECK_EQ(acquire(fd, 0), 0, "stale: re-acquire die 0");
	check(!peek(at(m, 0), &v) && v == 0x5a5a0000, "stale: the old mapping faults back in onto die 0");
	release(fd);
	munmap(m, slot_size);
	munmap(mo, slot_size);
	close(fd);
	close(other);
}

static void t_close_death(void)
{
	int fd = bs_open(0), pfd[2];
	pid_t holder, waiter;
	char c;

	int tmp = bs_open(0);
	CHECK_EQ(acquire(tmp, 1), 0, "close: acquire");
	close(tmp);
	CHECK_EQ(Q(fd).active_die, -1, "close: closing the file released the slot");

	holder = fork_child();
	if (holder == 0) {
		int cfd = bs_open(0);

		_exit(acquire(cfd, 2) ? 1 : 0); /* exit without RELEASE */
	}
	CHECK_EQ(wait_child(holder), 0, "death: child acquired and exited");
	CHECK_EQ(Q(fd).active_die, -1, "death: exit released the slot");

	if (pipe(pfd))
		die_hard("pipe");
	holder = fork_child();
	if (holder == 0) {
		int cfd = bs_open(0);
		void *cm = map_slot(cfd, slot_size);

		c = !acquire(cfd, 2) && !poke(at(cm, 0), 7) ? 'y' : 'n';
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	CHECK_EQ(read(pfd[0], &c, 1) == 1 && c == 'y', 1, "death: holder has die 2 mapped");
	waiter = fork_child();
	if (waiter == 0) {
		int cfd = bs_open(0);

		_exit(!acquire_full(cfd, 0, 0, 10000, NULL) && Q(cfd).active_die == 0 ? 0 : 1);
	}
	check(wait_waiters(fd, 1), "death: a waiter queued behind the holder");
	kill(holder, SIGKILL);
	CHECK_EQ(wait_child(holder), 128 + SIGKILL, "death: holder killed with SIGKILL");
	CHECK_EQ(wait_child(waiter), 0, "death: the waiter got the slot");
	CHECK_EQ(Q(fd).active_die, -1, "death: slot empty at the end");
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
}

/* Two processes swap the slot back and forth; each die keeps its own words. */
#define STRESS_BASE 0x20000UL /* clear of what t_data wrote */

static void t_stress(void)
{
	int fd = bs_open(0);
	pid_t kids[2];
	const int rounds = 150;

	for (int k = 0; k < 2; k++) {
		kids[k] = fork_child();
		if (kids[k] == 0) {
			int cfd = bs_open(0), bad = 0;
			void *cm = map_slot(cfd, slot_size);
			uint64_t mine = STRESS_BASE + PAGE * k, theirs = STRESS_BASE + PAGE * (1 - k);
			uint32_t v;

			for (int r = 0; r < rounds; r++) {
				unsigned int d = (r + k) % 2;
				uint64_t off = mine + 4 * (r % 64);

				if (acquire(cfd, d))
					bad++;
				if (poke(at(cm, off), tag(d, off) + r) || peek(at(cm, off), &v) || v != tag(d, off) + r)
					bad++;
				/* the other child's first word on this die, once written,
				 * was written for this die */
				if (peek(at(cm, theirs), &v) ||
				    (v && (v & 0xffff0000u) != (tag(d, theirs) & 0xffff0000u)))
					bad++;
				if (release(cfd))
					bad++;
			}
			_exit(bad ? 1 : 0);
		}
	}
	for (int k = 0; k < 2; k++)
		CHECK_EQ(wait_child(kids[k]), 0, "stress: child %d: %d swaps with no cross-talk", k, rounds);
	CHECK_EQ(Q(fd).active_die, -1, "stress: slot empty at the end");
	close(fd);
}

static void t_enabled(void)
{
	int fd = bs_open(0), pfd[2], gfd[2];
	struct bar_swap_die_info di;
	struct bar_swap_set_enabled inval = { .size = sizeof(inval), .die = 1, .enabled = 2 };
	pid_t kid, waiter;
	char c;

	CHECK_EQ(set_enabled(fd, 1, 0), 0, "quarantine die 1");
	die_info(fd, 1, &di);
	check(!(di.flags & BAR_SWAP_DIE_ENABLED) && (di.flags & BAR_SWAP_DIE_PRESENT),
	      "quarantine: die 1 present but not enabled");
	CHECK_EQ(acquire(fd, 1), -ENODEV, "quarantine: acquire die 1: ENODEV");
	CHECK_EQ(ioctl(fd, BAR_SWAP_IOC_SET_ENABLED, &inval) ? -errno : 0, -EINVAL, "set_enabled 2: EINVAL");
	inval.enabled = 1;
	inval.__reserved = 1;
	CHECK_EQ(ioctl(fd, BAR_SWAP_IOC_SET_ENABLED, &inval) ? -errno : 0, -EINVAL,
	         "set_enabled reserved field: EINVAL");
	CHECK_EQ(set_enabled(fd, nd, 0), -EINVAL, "set_enabled past the last die: EINVAL");

	kid = fork_child();
	if (kid == 0) {
		int cfd = bs_open(0);

		if (setuid(65534))
			_exit(2);
		_exit(set_enabled(cfd, 0, 0) == -EPERM ? 0 : 1);
	}
	CHECK_EQ(wait_child(kid), 0, "set_enabled without CAP_SYS_ADMIN: EPERM");

	/* Quarantining the active die revokes it; its waiters get ENODEV. */
	if (pipe(pfd) || pipe(gfd))
		die_hard("pipe");
	kid = fork_child();
	if (kid == 0) {
		int cfd = bs_open(0), bad;
		void *cm = map_slot(cfd, slot_size);
		uint32_t v;

		c = !acquire(cfd, 2) && !poke(at(cm, 0), 9) ? 'y' : 'n';
		if (write(pfd[1], &c, 1) != 1 || read(gfd[0], &c, 1) != 1)
			_exit(3);
		bad = peek(at(cm, 0), &v) == -1 ? 0 : 1;
		bad |= Q(cfd).flags & BAR_SWAP_QUERY_REVOKED ? 0 : 2;
		bad |= release(cfd) == -ENODEV ? 0 : 4;
		bad |= release(cfd) == -EPERM ? 0 : 8;
		_exit(bad ? 10 + bad : 0);
	}
	CHECK_EQ(read(pfd[0], &c, 1) == 1 && c == 'y', 1, "quarantine: child holds die 2");
	waiter = fork_child();
	if (waiter == 0) {
		int cfd = bs_open(0);

		_exit(acquire(cfd, 2) == -ENODEV ? 0 : 1);
	}
	check(wait_waiters(fd, 1), "quarantine: a waiter queued for die 2");
	CHECK_EQ(set_enabled(fd, 2, 0), 0, "quarantine the active die 2");
	CHECK_EQ(wait_child(waiter), 0, "quarantine: the waiter for die 2 got ENODEV");
	CHECK_EQ(Q(fd).active_die, -1, "quarantine: die 2 left the slot");
	check(only_decoding(fd, -1), "quarantine: die 2 parked");
	if (write(gfd[1], "g", 1) != 1)
		die_hard("pipe");
	CHECK_EQ(wait_child(kid), 0, "quarantine: holder's mapping SIGBUS, REVOKED flag, RELEASE ENODEV then EPERM");
	close(pfd[0]);
	close(pfd[1]);
	close(gfd[0]);
	close(gfd[1]);

	CHECK_EQ(set_enabled(fd, 1, 1), 0, "re-enable die 1");
	CHECK_EQ(set_enabled(fd, 2, 1), 0, "re-enable die 2");
	CHECK_EQ(acquire(fd, 2), 0, "re-enabled die 2 can be acquired");
	release(fd);
	close(fd);
}

static void t_all(unsigned int want_dies, uint64_t want_size)
{
	catch_sigbus();
	t_basics(want_dies, want_size);
	if (nd < 3) {
		check(false, "the battery needs at least 3 dies, found %u", nd);
		return;
	}
	t_acquire_release();
	t_nonblock();
	t_samefile();
	t_fifo();
	t_signal();
	t_data();
	t_stale();
	t_close_death();
	t_stress();
	t_enabled();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240); /* a hung check ends the program (and counts as a failure) */
	if (argc >= 3 && !strcmp(argv[1], "all")) {
		t_all(strtoul(argv[2], NULL, 0), argc > 3 ? strtoull(argv[3], NULL, 0) : 0);
	} else {
		fprintf(stderr, "usage: see the comment at the top of bs_test.c\n");
		return 2;
	}
	return failures ? 1 : 0;
}
