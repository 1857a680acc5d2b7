// SPDX-License-Identifier: MIT
/*
 * bs_bind: what /dev/bar_swap's dies are bound to and how they decode,
 * inside the QEMU guest (the ioctl battery itself: bs_test.c).
 *
 *   bs_bind query N            num_dies == N and every die present
 *   bs_bind parked             every PCI die bound to bar_swap, decode off
 *   bs_bind unbind             unbind/rebind/rmmod with a holder (PCI dies)
 *   bs_bind slotmode ADDR      every die decodes at ADDR while active
 *   bs_bind enabled DIE 0|1    DIE_INFO says the die is (not) enabled
 *   bs_bind unusable DIE       the die is bound but has no VRAM window (ENODEV)
 *
 * Prints one "PASS: name" or "FAIL: name (why)" line per check and exits 1
 * if any failed.  Linked statically: the guest has no libc.
 */
#include <sys/syscall.h>

#include "bs_lib.h"

static uint64_t slot_size;

/* ---- PCI-only ---- */
static void t_parked(void)
{
	int fd = bs_open(0);
	unsigned int n = Q(fd).num_dies;

	for (unsigned int i = 0; i < n; i++) {
		struct bar_swap_die_info di;
		char path[160], link[160] = "";
		ssize_t l;

		die_info(fd, i, &di);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", di.bus_id);
		l = readlink(path, link, sizeof(link) - 1);
		check(l > 0 && strstr(link, "/bar_swap"), "parked: die %u (%s) bound to bar_swap", i, di.bus_id);
		CHECK_EQ(decoding(fd, i), 0, "parked: die %u memory decode off", i);
		CHECK_EQ(di.vram_size, sysfs_bar_len(di.bus_id), "parked: die %u vram size is its largest BAR", i);
	}
	close(fd);
}

static void t_unbind(void)
{
	int fd = bs_open(0), pfd[2], gfd[2];
	struct bar_swap_die_info di;
	char bus[BAR_SWAP_BUS_ID_LEN], path[160];
	pid_t kid, waiter;
	uint32_t v;
	void *m;
	char c;

	catch_sigbus();
	slot_size = Q(fd).slot_size;
	die_info(fd, 0, &di);
	snprintf(bus, sizeof(bus), "%s", di.bus_id);
	if (pipe(pfd) || pipe(gfd))
		die_hard("pipe");
	kid = fork_child();
	if (kid == 0) {
		int cfd = bs_open(0), ok;
		void *cm = map_slot(cfd, slot_size);

		c = !acquire(cfd, 0) && !poke(at(cm, 8), 0xabcd1234) ? 'y' : 'n';
		if (write(pfd[1], &c, 1) != 1 || read(gfd[0], &c, 1) != 1)
			_exit(3);
		ok = peek(at(cm, 8), &v) == -1 && (Q(cfd).flags & BAR_SWAP_QUERY_REVOKED) && release(cfd) == -ENODEV;
		_exit(ok ? 0 : 1);
	}
	CHECK_EQ(read(pfd[0], &c, 1) == 1 && c == 'y', 1, "unbind: child holds die 0 (%s)", bus);
	waiter = fork_child();
	if (waiter == 0) {
		int cfd = bs_open(0);

		_exit(acquire(cfd, 0) == -ENODEV ? 0 : 1);
	}
	check(wait_waiters(fd, 1), "unbind: a waiter queued for die 0");
	CHECK_EQ(syscall(SYS_delete_module, "bar_swap", O_NONBLOCK) ? -errno : 0, -EWOULDBLOCK,
	         "rmmod with open files: EWOULDBLOCK");
	CHECK_EQ(write_str("/sys/bus/pci/drivers/bar_swap/unbind", bus), 0, "unbind die 0 with a holder");
	CHECK_EQ(wait_child(waiter), 0, "unbind: waiter for die 0 got ENODEV");
	if (write(gfd[1], "g", 1) != 1)
		die_hard("pipe");
	CHECK_EQ(wait_child(kid), 0, "unbind: holder's mapping SIGBUS, REVOKED, RELEASE ENODEV");
	close(pfd[0]);
	close(pfd[1]);
	close(gfd[0]);
	close(gfd[1]);

	die_info(fd, 0, &di);
	check(!(di.flags & BAR_SWAP_DIE_PRESENT) && !strcmp(di.bus_id, bus),
	      "unbind: die 0 keeps its index, not present (flags %#x)", di.flags);
	CHECK_EQ(acquire(fd, 0), -ENODEV, "unbind: acquire removed die: ENODEV");
	CHECK_EQ(set_enabled(fd, 0, 1), -ENODEV, "unbind: set_enabled removed die: ENODEV");
	CHECK_EQ(decoding(fd, 0), 0, "unbind: die 0 left parked");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bus);
	check(access(path, F_OK) != 0, "unbind: die 0 has no driver");

	CHECK_EQ(write_str("/sys/bus/pci/drivers/bar_swap/bind", bus), 0, "rebind die 0");
	die_info(fd, 0, &di);
	check((di.flags & BAR_SWAP_DIE_PRESENT) && !strcmp(di.bus_id, bus), "rebind: same index 0");
	CHECK_EQ(decoding(fd, 0), 0, "rebind: parked");
	m = map_slot(fd, slot_size);
	CHECK_EQ(acquire(fd, 0), 0, "rebind: acquire die 0");
	check(!peek(at(m, 8), &v) && v == 0xabcd1234, "rebind: die 0 data intact");
	release(fd);
	munmap(m, slot_size);
	close(fd);
}

static void t_slotmode(unsigned long long addr)
{
	int fd = bs_open(0);
	unsigned int n = Q(fd).num_dies;
	void *m;

	catch_sigbus();
	slot_size = Q(fd).slot_size;
	m = map_slot(fd, slot_size);
	for (unsigned int i = 0; i < n; i++) {
		struct bar_swap_die_info di;
		uint32_t lo = 0, hi = 0;

		die_info(fd, i, &di);
		CHECK_EQ(di.bar_phys, addr, "slot mode: die %u decodes at the slot", i);
		CHECK_EQ(acquire(fd, i), 0, "slot mode: acquire die %u", i);
		pci_config(di.bus_id, 0x18, &lo, 4); /* ivshmem: BAR2, 64-bit */
		pci_config(di.bus_id, 0x1c, &hi, 4);
		CHECK_EQ(((unsigned long long)hi << 32 | (lo & ~0xfu)), addr,
		         "slot mode: die %u's BAR moved to the slot", i);
		check(only_decoding(fd, i), "slot mode: only die %u decodes", i);
		check(!poke(at(m, 64), 0x7e570000 + i), "slot mode: write die %u", i);
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t v = 0;

		CHECK_EQ(acquire(fd, i), 0, "slot mode: re-acquire die %u", i);
		check(!peek(at(m, 64), &v) && v == 0x7e570000 + i,
		      "slot mode: die %u has its own data at the shared address (%#x)", i, v);
	}
	release(fd);
	munmap(m, slot_size);
	close(fd);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240); /* a hung check ends the program (and counts as a failure) */
	if (argc >= 3 && !strcmp(argv[1], "query")) {
		int fd = bs_open(0);
		unsigned int n = Q(fd).num_dies, want = strtoul(argv[2], NULL, 0), present = 0;
		struct bar_swap_die_info di;

		for (unsigned int i = 0; i < n; i++)
			present += !die_info(fd, i, &di) && (di.flags & BAR_SWAP_DIE_PRESENT);
		CHECK_EQ(n, want, "query: %u dies", want);
		CHECK_EQ(present, want, "query: all %u present", want);
		if (!want) {
			check(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == ENODEV,
			      "query: no dies: mmap ENODEV");
			CHECK_EQ(acquire(fd, 0), -EINVAL, "query: no dies: acquire EINVAL");
		}
	} else if (argc >= 2 && !strcmp(argv[1], "parked")) {
		t_parked();
	} else if (argc >= 2 && !strcmp(argv[1], "unbind")) {
		t_unbind();
	} else if (argc >= 3 && !strcmp(argv[1], "slotmode")) {
		t_slotmode(strtoull(argv[2], NULL, 0));
	} else if (argc >= 3 && !strcmp(argv[1], "unusable")) {
		int fd = bs_open(0);
		struct bar_swap_die_info di;
		unsigned int die = strtoul(argv[2], NULL, 0);

		CHECK_EQ(die_info(fd, die, &di), 0, "die_info %u", die);
		check((di.flags & BAR_SWAP_DIE_PRESENT) && !(di.flags & BAR_SWAP_DIE_ENABLED) && di.vram_size == 0,
		      "unusable die %u: bound, not enabled, no vram (flags %#x)", die, di.flags);
		CHECK_EQ(acquire(fd, die), -ENODEV, "unusable die %u: acquire ENODEV", die);
		CHECK_EQ(set_enabled(fd, die, 1), -ENODEV, "unusable die %u: enable ENODEV", die);
	} else if (argc >= 4 && !strcmp(argv[1], "enabled")) {
		int fd = bs_open(0);
		struct bar_swap_die_info di;
		unsigned int die = strtoul(argv[2], NULL, 0), want = strtoul(argv[3], NULL, 0);

		CHECK_EQ(die_info(fd, die, &di), 0, "die_info %u", die);
		CHECK_EQ(!!(di.flags & BAR_SWAP_DIE_ENABLED), want, "die %u enabled == %u", die, want);
	} else {
		fprintf(stderr, "usage: see the comment at the top of bs_bind.c\n");
		return 2;
	}
	return failures ? 1 : 0;
}
