// SPDX-License-Identifier: MIT
/*
 * bs_lend: lending a die to a driver, and the lease, on /dev/bar_swap in the
 * QEMU guest (docs/kmod.md, "Lend" and "The lease").  The stand-in GPU
 * driver is uio_pci_generic from the guest kernel's own modules; the module
 * is loaded with lend_drivers=uio_pci_generic,vfio-pci (vfio-pci: allowed
 * but not loaded).
 *
 *   bs_lend lend DIE OTHER SIMDIE   the battery on PCI die DIE (OTHER: another
 *                                   die; SIMDIE: a sim_dies= die, or -1)
 *   bs_lend resident DIE            the resident policy
 *   bs_lend lease DIE OTHER         a lease revokes a sleeping holder
 *   bs_lend lease-lent DIE OTHER    ... returning its lent die first
 *   bs_lend refused DIE             LEND is EPERM (lend_drivers= emptied)
 *   bs_lend slot DIE SLOT BAR       slot mode: the lent die's resource is the slot
 *
 * Prints one "PASS: name" or "FAIL: name (why)" line per check and exits 1
 * if any failed.
 */
#include "bs_lib.h"

#define STANDIN "uio_pci_generic"
#define PATTERN 0x1e4d0000u

static int lend(int fd, unsigned int die, const char *driver)
{
	struct bar_swap_lend l = { .size = sizeof(l), .die = die };

	snprintf(l.driver, sizeof(l.driver), "%s", driver);
	return ioctl(fd, BAR_SWAP_IOC_LEND, &l) ? -errno : 0;
}

static int give_back(int fd, unsigned int die, unsigned int flags)
{
	struct bar_swap_return r = { .size = sizeof(r), .die = die, .flags = flags };

	return ioctl(fd, BAR_SWAP_IOC_RETURN, &r) ? -errno : 0;
}

static int set_policy(int fd, unsigned int die, unsigned int policy)
{
	struct bar_swap_set_policy p = { .size = sizeof(p), .die = die, .policy = policy };

	return ioctl(fd, BAR_SWAP_IOC_SET_POLICY, &p) ? -errno : 0;
}

static int set_lease(int fd, unsigned int ms)
{
	struct bar_swap_set_lease l = { .size = sizeof(l), .lease_ms = ms };

	return ioctl(fd, BAR_SWAP_IOC_SET_LEASE, &l) ? -errno : 0;
}

static struct bar_swap_die_info DI(int fd, unsigned int die) {
	struct bar_swap_die_info di;

	if (die_info(fd, die, &di))
		die_hard("DIE_INFO");
	return di;
}

static bool
bound_to(int fd, unsigned int die, const char *driver)
{
	char now_bound[64];

	sysfs_driver(DI(fd, die).bus_id, now_bound, sizeof(now_bound));
	return !strcmp(now_bound, driver);
}

/* The first word of BAR bar through sysfs (the driver's view of the BAR), or ~0 on failure. */
static uint32_t sysfs_bar_word(const char *bus_id, int bar)
{
	char path[128];
	uint32_t v = ~0u;
	void *m;
	int rfd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource%d", bus_id, bar);
	rfd = open(path, O_RDWR);
	if (rfd < 0)
		return v;
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rfd, 0);
	if (m != MAP_FAILED) {
		v = *(volatile uint32_t *)m;
		munmap(m, 4096);
	}
	close(rfd);
	return v;
}

/* The start of BAR bar as sysfs says (its resource), or 0. */
static unsigned long long sysfs_bar_start(const char *bus_id, int bar)
{
	unsigned long long start = 0, end, flags;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bus_id);
	f = fopen(path, "r");
	if (!f)
		return 0;
	for (int i = 0; i <= bar && fscanf(f, "%llx %llx %llx", &start, &end, &flags) == 3; i++)
		;
	fclose(f);
	return start;
}

/*
 * A child keeps no copy of the parent's files: a copy would keep a lender's
 * file open after the parent closed it (our mappings are MADV_DONTFORK).
 */
static void close_all_but(int keep)
{
	if (keep > 3)
		close_range(3, (unsigned int)keep - 1, 0);
	close_range((unsigned int)(keep >= 3 ? keep + 1 : 3), ~0U, 0);
}

static void *map_unshared(int fd)
{
	uint64_t len = Q(fd).slot_size;
	void *map = map_slot(fd, len);

	madvise(map, len, MADV_DONTFORK);
	return map;
}

/* A child that queues for die on a file of its own and exits 0 once it got the slot. */
static pid_t waiter(unsigned int die)
{
	pid_t pid = fork_child();

	if (pid == 0) {
		int fd;

		close_all_but(-1);
		fd = bs_open(0);
		_exit(acquire(fd, die) ? 1 : 0);
	}
	return pid;
}

static void t_lend(unsigned int pd, unsigned int other, int simd)
{
	int fd = bs_open(0), mfd = bs_open(0);
	struct bar_swap_lend bad = { .size = sizeof(bad), .die = pd };
	struct bar_swap_die_info di = DI(fd, pd);
	struct bar_swap_query q;
	uint64_t len = Q(fd).slot_size;
	void *map;
	uint32_t v = 0;
	int sync[2];
	pid_t w, lender;

	catch_sigbus();
	CHECK_EQ(lend(fd, pd, STANDIN), -EPERM, "LEND without owning the slot: EPERM");
	CHECK_EQ(acquire(mfd, pd), 0, "acquire die %u", pd);
	map = map_unshared(mfd);
	check(!poke((volatile uint32_t *)map, PATTERN + pd), "write through the slot before the lend");
	CHECK_EQ(lend(mfd, pd, "pci-stub"), -EPERM, "LEND to a driver outside lend_drivers=: EPERM");
	CHECK_EQ(lend(mfd, pd, "bar_swap"), -EINVAL, "LEND to bar_swap itself: EINVAL (RETURN takes it back)");
	memset(bad.driver, 'x', sizeof(bad.driver));
	CHECK_EQ(ioctl(mfd, BAR_SWAP_IOC_LEND, &bad) ? -errno : 0, -EINVAL, "an unterminated driver name: EINVAL");
	CHECK_EQ(lend(mfd, pd, "vfio-pci"), -ENOENT, "LEND to an allowed driver that is not loaded: ENOENT");
	CHECK_EQ(lend(mfd, other, STANDIN), -EPERM, "LEND of a die that is not in the slot: EPERM");
	check(bound_to(fd, pd, "bar_swap"), "refused lends leave the die on bar_swap");

	CHECK_EQ(lend(mfd, pd, STANDIN), 0, "LEND die %u to " STANDIN, pd);
	check(bound_to(fd, pd, STANDIN), "sysfs: the die's driver link is " STANDIN);
	di = DI(fd, pd);
	check((di.flags & BAR_SWAP_DIE_LENT) && di.lend_state == BAR_SWAP_LEND_LENT && !strcmp(di.driver, STANDIN) &&
	              di.lender_pid == getpid(),
	      "DIE_INFO: lent to " STANDIN " by us (flags %#x, state %u, driver %s, pid %d)", di.flags, di.lend_state,
	      di.driver, di.lender_pid);
	q = Q(mfd);
	check(q.lent_die == (int)pd && q.lend_state == BAR_SWAP_LEND_LENT && !strcmp(q.lent_driver, STANDIN),
	      "QUERY: the slot's die is lent (lent_die %d)", q.lent_die);
	CHECK_EQ(peek((volatile uint32_t *)map, &v), -1, "bar_swap's own mapping SIGBUSes while the die is lent");
	CHECK_EQ(decoding(fd, pd), 1, "the lent die decodes");
	CHECK_EQ(sysfs_bar_word(di.bus_id, 2), PATTERN + pd, "the driver's view of the BAR holds what we wrote");
	CHECK_EQ(acquire(mfd, other), -EBUSY, "the owner cannot move the slot while its die is lent: EBUSY");
	{
		struct bar_swap_set_enabled s = { .size = sizeof(s), .die = pd, .enabled = 0 };
		CHECK_EQ(ioctl(mfd, BAR_SWAP_IOC_SET_ENABLED, &s) ? -errno : 0, -EBUSY,
		         "no quarantine while lent: EBUSY");
	}
	CHECK_EQ(set_policy(fd, pd, BAR_SWAP_POLICY_RESIDENT), -EBUSY, "no policy change while lent: EBUSY");
	CHECK_EQ(lend(mfd, pd, STANDIN), 0, "LEND again to the same driver: 0");
	CHECK_EQ(lend(mfd, pd, "vfio-pci"), -EBUSY, "LEND to another driver while lent: EBUSY");

	w = waiter(other);
	check(wait_waiters(fd, 1), "another die's acquire queues while the die is lent");
	msleep(300);
	check(!child_done(w), "... and waits");
	CHECK_EQ(give_back(mfd, pd, 0), 0, "RETURN takes die %u back", pd);
	check(bound_to(fd, pd, "bar_swap"), "sysfs: the driver link is bar_swap again");
	CHECK_EQ(DI(fd, pd).lend_state, BAR_SWAP_LEND_NONE, "DIE_INFO: not lent");
	check(!peek((volatile uint32_t *)map, &v) && v == PATTERN + pd, "the owner's mapping works again, data intact");
	msleep(200);
	check(!child_done(w), "the owner keeps the slot after RETURN");
	CHECK_EQ(give_back(mfd, pd, 0), 0, "RETURN of a die that is not lent: 0");
	munmap(map, len);
	CHECK_EQ(release(mfd), 0, "release");
	CHECK_EQ(wait_child(w), 0, "the waiter gets the slot once the die is back and released");

	/* The lender's close returns it, then the slot moves on. */
	close(mfd);
	mfd = bs_open(0);
	CHECK_EQ(acquire(mfd, pd), 0, "acquire die %u again", pd);
	CHECK_EQ(lend(mfd, pd, STANDIN), 0, "LEND it again");
	w = waiter(other);
	check(wait_waiters(fd, 1), "a waiter queues");
	close(mfd);
	CHECK_EQ(wait_child(w), 0, "closing the lender's file returns the die and the slot moves on");
	check(bound_to(fd, pd, "bar_swap"), "sysfs: back on bar_swap after the close");

	/* So does its death. */
	if (pipe(sync))
		die_hard("pipe");
	lender = fork_child();
	if (lender == 0) {
		int lfd;
		char c;

		close_all_but(sync[1]);
		lfd = bs_open(0);
		c = acquire(lfd, pd) || lend(lfd, pd, STANDIN) ? 'n' : 'y';
		if (write(sync[1], &c, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	{
		char c = 'n';
		check(read(sync[0], &c, 1) == 1 && c == 'y', "a child acquires and lends die %u", pd);
	}
	check(bound_to(fd, pd, STANDIN), "sysfs: lent to " STANDIN " by the child");
	w = waiter(other);
	check(wait_waiters(fd, 1), "a waiter queues behind the lender");
	kill(lender, SIGKILL);
	CHECK_EQ(wait_child(lender), 128 + SIGKILL, "the lender is killed");
	CHECK_EQ(wait_child(w), 0, "the lender's death returns the die and the slot moves on");
	check(bound_to(fd, pd, "bar_swap"), "sysfs: back on bar_swap after the lender's death");
	close(sync[0]);
	close(sync[1]);

	if (simd >= 0) {
		CHECK_EQ(acquire(fd, (unsigned int)simd), 0, "acquire the RAM die %d", simd);
		CHECK_EQ(lend(fd, (unsigned int)simd, STANDIN), -EOPNOTSUPP, "a RAM die (sim_dies=) cannot be lent");
		CHECK_EQ(release(fd), 0, "release it");
	}
	close(fd);
}

static void t_resident(unsigned int pd)
{
	int fd = bs_open(0), admin = bs_open(0);
	void *map = map_unshared(fd);
	uint32_t v;

	catch_sigbus();
	CHECK_EQ(set_policy(admin, pd, BAR_SWAP_POLICY_RESIDENT), 0, "policy resident for die %u", pd);
	CHECK_EQ(DI(fd, pd).policy, BAR_SWAP_POLICY_RESIDENT, "DIE_INFO says resident");
	CHECK_EQ(acquire(fd, pd), 0, "acquire it");
	CHECK_EQ(lend(fd, pd, STANDIN), 0, "LEND it to " STANDIN);
	CHECK_EQ(release(fd), 0, "release: the slot moves on at once");
	CHECK_EQ(Q(fd).active_die, -1, "the slot is empty");
	check(bound_to(fd, pd, STANDIN), "a resident die stays bound to its driver");
	CHECK_EQ(decoding(fd, pd), 0, "... parked: decode off");
	CHECK_EQ(DI(fd, pd).lend_state, BAR_SWAP_LEND_LENT, "DIE_INFO: still lent");
	CHECK_EQ(acquire(fd, pd), 0, "acquire it again: it comes back into the slot");
	CHECK_EQ(decoding(fd, pd), 1, "... decoding for its driver");
	CHECK_EQ(peek((volatile uint32_t *)map, &v), -1, "our mapping of a lent resident die SIGBUSes");
	CHECK_EQ(lend(fd, pd, STANDIN), 0, "LEND to the same driver: the caller is its lender");
	CHECK_EQ(give_back(fd, pd, 0), 0, "RETURN takes it back");
	check(bound_to(fd, pd, "bar_swap"), "back on bar_swap");
	check(!peek((volatile uint32_t *)map, &v), "our mapping works again");
	CHECK_EQ(release(fd), 0, "release");
	CHECK_EQ(set_policy(admin, pd, BAR_SWAP_POLICY_PINNED), 0, "policy pinned again");
	close(fd);
	close(admin);
}

/*
 * A holder that sleeps through the lease: it acquires die, writes, says so
 * on out, waits for a byte on in, then checks what the lease did to it.
 */
static pid_t sleeper(unsigned int die, bool lent, int in, int out)
{
	pid_t pid = fork_child();

	if (pid == 0) {
		int hfd = bs_open(0), ok;
		void *map = map_slot(hfd, Q(hfd).slot_size);
		struct bar_swap_query q;
		char c = 'y';

		catch_sigbus();
		if (acquire(hfd, die) || poke((volatile uint32_t *)map, PATTERN) || (lent && lend(hfd, die, STANDIN)))
			c = 'n';
		if (write(out, &c, 1) != 1 || read(in, &c, 1) != 1)
			_exit(2);
		CHECK_EQ(poke((volatile uint32_t *)map, 1), -1, "the revoked holder's mapping SIGBUSes");
		q = Q(hfd);
		ok = (q.flags & BAR_SWAP_QUERY_REVOKED) && (q.flags & BAR_SWAP_QUERY_LEASE) &&
		     !(q.flags & BAR_SWAP_QUERY_OWNER);
		check(ok, "QUERY: REVOKED|LEASE, not the owner (flags %#x)", q.flags);
		if (lent)
			CHECK_EQ(give_back(hfd, die, 0), -EPERM, "its RETURN: EPERM (the die came back by itself)");
		CHECK_EQ(release(hfd), -ETIME, "its next RELEASE: ETIME");
		CHECK_EQ(release(hfd), -EPERM, "... reported once, then EPERM");
		CHECK_EQ(acquire(hfd, die), 0, "it can queue again and get the slot");
		_exit(failures ? 1 : 0);
	}
	return pid;
}

static void t_lease(unsigned int pd, unsigned int other, bool lent)
{
	int fd = bs_open(0), to[2], from[2];
	struct bar_swap_queue_entry e[4];
	struct bar_swap_queue qq = { .size = sizeof(qq), .capacity = 4, .entries = (uintptr_t)e };
	struct bar_swap_query q;
	double t0;
	char c = 'n';
	pid_t holder, w;

	CHECK_EQ(set_lease(fd, 400), 0, "SET_LEASE 400 ms");
	CHECK_EQ(Q(fd).lease_ms, 400, "QUERY says so");
	if (pipe(to) || pipe(from))
		die_hard("pipe");
	holder = sleeper(pd, lent, to[0], from[1]);
	check(read(from[0], &c, 1) == 1 && c == 'y', "a holder acquires die %u%s", pd, lent ? " and lends it" : "");
	CHECK_EQ(Q(fd).lease_left_ms, -1, "the lease does not run while nobody waits");
	msleep(600);
	CHECK_EQ(Q(fd).owner_pid, holder, "without waiters the holder keeps the slot past its lease");
	t0 = now();
	w = waiter(other);
	check(wait_waiters(fd, 1), "a waiter for die %u queues", other);
	q = Q(fd);
	check(q.lease_left_ms >= 0 && q.lease_left_ms <= 400, "the holder's lease runs (%d ms left)", q.lease_left_ms);
	CHECK_EQ(ioctl(fd, BAR_SWAP_IOC_QUEUE, &qq) ? -errno : 0, 0, "QUEUE");
	check(qq.total == 1 && qq.count == 1 && e[0].pid == w && e[0].die == other,
	      "QUEUE lists the waiter's pid and die");
	CHECK_EQ(wait_child(w), 0, "the waiter gets the slot once the lease ran out");
	check(now() - t0 >= 0.3 && now() - t0 < 10, "... after %.2f s", now() - t0);
	if (lent)
		check(bound_to(fd, pd, "bar_swap"), "the lent die came back to bar_swap before the slot moved on");
	if (write(to[1], "y", 1) != 1)
		die_hard("pipe");
	CHECK_EQ(wait_child(holder), 0, "the revoked holder's own checks");
	CHECK_EQ(set_lease(fd, 0), 0, "SET_LEASE 0: no lease");
	close(to[0]);
	close(to[1]);
	close(from[0]);
	close(from[1]);
	close(fd);
}

static void t_refused(unsigned int pd)
{
	int fd = bs_open(0);

	CHECK_EQ(acquire(fd, pd), 0, "acquire die %u", pd);
	CHECK_EQ(lend(fd, pd, STANDIN), -EPERM, "with lend_drivers= empty, every LEND is EPERM");
	check(bound_to(fd, pd, "bar_swap"), "the die stays on bar_swap");
	CHECK_EQ(release(fd), 0, "release");
	close(fd);
}

static void t_slot(unsigned int pd, unsigned long long slot, int bar)
{
	int fd = bs_open(0);
	void *map = map_unshared(fd);
	struct bar_swap_die_info di = DI(fd, pd);
	unsigned long long orig = sysfs_bar_start(di.bus_id, bar);

	catch_sigbus();
	CHECK_EQ(acquire(fd, pd), 0, "acquire die %u (slot mode)", pd);
	check(!poke((volatile uint32_t *)map, PATTERN + 7), "write through the slot");
	CHECK_EQ(lend(fd, pd, STANDIN), 0, "LEND it to " STANDIN " in slot mode");
	CHECK_EQ(sysfs_bar_start(di.bus_id, bar), slot, "the lent die's BAR%d resource is the slot", bar);
	CHECK_EQ(sysfs_bar_word(di.bus_id, bar), PATTERN + 7, "the driver's view of the slot holds our data");
	CHECK_EQ(give_back(fd, pd, 0), 0, "RETURN");
	CHECK_EQ(sysfs_bar_start(di.bus_id, bar), orig, "its resource is where firmware put it again");
	CHECK_EQ(release(fd), 0, "release");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "lend") && argc == 5)
		t_lend(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(cmd, "resident") && argc == 3)
		t_resident(atoi(argv[2]));
	else if (!strcmp(cmd, "lease") && argc == 4)
		t_lease(atoi(argv[2]), atoi(argv[3]), false);
	else if (!strcmp(cmd, "lease-lent") && argc == 4)
		t_lease(atoi(argv[2]), atoi(argv[3]), true);
	else if (!strcmp(cmd, "refused") && argc == 3)
		t_refused(atoi(argv[2]));
	else if (!strcmp(cmd, "slot") && argc == 5)
		t_slot(atoi(argv[2]), strtoull(argv[3], NULL, 0), atoi(argv[4]));
	else {
		fprintf(stderr, "usage: bs_lend lend DIE OTHER SIMDIE | resident DIE | lease DIE OTHER | "
		                "lease-lent DIE OTHER | refused DIE | slot DIE SLOT BAR\n");
		return 2;
	}
	return failures ? 1 : 0;
}
