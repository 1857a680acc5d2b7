/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * bar_swap user API: /dev/bar_swap, one CPU-visible BAR slot shared by many
 * GPU dies.  This header is included unchanged by the kernel module and by
 * userspace (barswap/barswap.c); it needs only <linux/types.h> and <linux/ioctl.h>.
 *
 * Model
 *   - There are num_dies dies (index 0..num_dies-1) and num_slots (== 1) slot.
 *   - At most one open file of /dev/bar_swap owns the slot at a time; the
 *     slot then holds exactly one die ("the active die").  Ownership belongs
 *     to the open file (struct file), not to a process or thread: threads and
 *     fork()ed children sharing the file share the ownership.  Closing the
 *     last reference to the file, or the process dying, releases the slot.
 *   - ACQUIRE queues in FIFO order; RELEASE hands the slot to the next waiter.
 *   - mmap(fd, len, ..., MAP_SHARED, offset) maps the slot: while the file
 *     owns the slot, offset 0.. of the mapping is the active die's VRAM.  The
 *     mapping is faulted in lazily and revoked (zapped) on every ownership or
 *     die change, so touching it while the file does not own the slot, or
 *     past the active die's vram_size, raises SIGBUS.  A mapping survives
 *     release and re-acquire: it simply faults in again, onto whatever die the
 *     file then owns.  MAP_PRIVATE fails with EINVAL; offset + length beyond
 *     slot_size fails with EINVAL; with no die bound, mmap fails with ENODEV.
 *
 * Extensible structs
 *   Every struct starts with __u32 size, which the caller sets to
 *   sizeof(the struct as it knows it).  The kernel accepts any size >= the
 *   version-1 size (BAR_SWAP_*_SIZE_VER1); it reads min(size, its own size)
 *   bytes, requires any bytes beyond its own size to be zero (else E2BIG),
 *   writes back at most size bytes and stores in size the number of bytes it
 *   filled.  The kernel dispatches on the ioctl type and number only, so the
 *   size encoded in the ioctl command may differ from the caller's struct.
 *   Fields are only ever appended.  BAR_SWAP_UAPI_VERSION counts the changes.
 *
 * Errors common to every ioctl
 *   EFAULT  bad pointer;  EINVAL  size below the version-1 size, unknown
 *   flag bit, or a reserved field not zero;  E2BIG  trailing bytes past the
 *   kernel's struct are not zero;  ENOTTY  unknown ioctl.
 */
#ifndef _UAPI_BAR_SWAP_H
#define _UAPI_BAR_SWAP_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define BAR_SWAP_UAPI_VERSION	2
#define BAR_SWAP_DEVICE		"/dev/bar_swap"
#define BAR_SWAP_MAX_DIES	64
#define BAR_SWAP_BUS_ID_LEN	32
#define BAR_SWAP_DRIVER_LEN	32	/* a driver name, NUL included */

/*
 * Lending (version 2).  The owner of the slot may hand the die in it to
 * another PCI driver (a GPU driver) named in the module's lend_drivers=
 * allowlist: the die is unbound from bar_swap and bound to that driver
 * (driver_override, then probe), decoding in the slot.  A die's policy says
 * what happens when its holder lets go:
 *   PINNED (default)  the die comes back (unbound from the driver, bound to
 *                     bar_swap again) before the slot moves on; until it is
 *                     back the slot does not move.  A driver whose remove()
 *                     waits for its users (nvidia, vfio-pci) holds it there.
 *   RESIDENT          the die stays bound to the driver and is only parked
 *                     (decode off) when the slot moves on, and put back in
 *                     the slot by whoever acquires it next; it comes back
 *                     to bar_swap only through BAR_SWAP_IOC_RETURN.
 * While a die is lent, bar_swap's own mapping of it faults (SIGBUS): its
 * memory belongs to the driver.
 */
#define BAR_SWAP_LEND_NONE	0	/* bound to bar_swap */
#define BAR_SWAP_LEND_LENDING	1	/* being handed to the driver */
#define BAR_SWAP_LEND_LENT	2	/* bound to the driver */
#define BAR_SWAP_LEND_RETURNING	3	/* waiting for the driver to let go */

#define BAR_SWAP_POLICY_PINNED	 0
#define BAR_SWAP_POLICY_RESIDENT 1

/*
 * BAR_SWAP_IOC_QUERY: the slot's state.  Never blocks, never fails except for
 * the common errors.
 */
struct bar_swap_query {
	__u32 size;		/* in/out, see "Extensible structs" */
	__u32 version;		/* out: BAR_SWAP_UAPI_VERSION */
	__u32 num_dies;		/* dies ever bound (removed ones keep their index) */
	__u32 num_slots;	/* 1 */
	__s32 active_die;	/* die in the slot, or -1 when the slot is empty */
	__s32 owner_pid;	/* process (tgid) that acquired it, as seen from the
				 * caller's pid namespace; 0 if none or not visible */
	__u32 waiters;		/* ACQUIREs queued behind the owner */
	__u32 open_files;	/* open files of /dev/bar_swap */
	__u64 swaps;		/* times a die was put into the slot for an
				 * owner (grants and die switches) */
	__u64 slot_size;	/* largest vram_size of any present die: the most
				 * that one mmap may cover */
	__u32 flags;		/* out: BAR_SWAP_QUERY_* about the calling file */
	__u32 __reserved;
	/* version 2 */
	__u32 lease_ms;		/* the lease (BAR_SWAP_IOC_SET_LEASE); 0: none */
	__s32 lease_left_ms;	/* what is left of the owner's lease; -1 when it
				 * does not run (no lease, no owner, nobody waits) */
	__s32 lent_die;		/* the die in the slot if it is lent, else -1 */
	__u32 lend_state;	/* BAR_SWAP_LEND_* of lent_die */
	__s32 lender_pid;	/* the process that lent it (caller's pid ns) */
	__u32 returning_ms;	/* how long its return has waited for the driver */
	__u32 slot_flags;	/* BAR_SWAP_SLOT_* */
	__u32 __reserved2;
	char lent_driver[BAR_SWAP_DRIVER_LEN];	/* the driver lent_die is bound to */
};
#define BAR_SWAP_QUERY_OWNER	(1u << 0)	/* the calling file owns the slot */
#define BAR_SWAP_QUERY_REVOKED	(1u << 1)	/* it lost the slot to unbind/disable/lease */
#define BAR_SWAP_QUERY_LEASE	(1u << 2)	/* ... to the lease: its next RELEASE is ETIME */
#define BAR_SWAP_SLOT_EXPIRED	(1u << 0)	/* the owner's lease ran out; its die is on the
						 * way back from the driver first */
#define BAR_SWAP_SLOT_LEAVING	(1u << 1)	/* the owner let go of a lent die; the slot
						 * moves once the die is back */
#define BAR_SWAP_QUERY_SIZE_VER1 56
#define BAR_SWAP_QUERY_SIZE_VER2 120

/*
 * BAR_SWAP_IOC_DIE_INFO: one die.  Set size and die; the rest is output.
 *   EINVAL  die >= num_dies.  A removed (unbound) die still answers, with
 *           BAR_SWAP_DIE_PRESENT clear.
 */
struct bar_swap_die_info {
	__u32 size;
	__u32 die;		/* in */
	__u32 flags;		/* BAR_SWAP_DIE_* */
	__u16 vendor;		/* PCI ids; 0 for a simulated die */
	__u16 device;
	__u64 vram_size;	/* bytes reachable through the slot */
	__u64 acquires;		/* times this die was put into the slot */
	__u64 bar_phys;		/* CPU physical address the die decodes at while
				 * active (the slot address in slot mode);
				 * 0 for a simulated die */
	char bus_id[BAR_SWAP_BUS_ID_LEN]; /* "0000:03:00.0", or "sim:<n>" */
	/* version 2 */
	__u32 policy;		/* BAR_SWAP_POLICY_* */
	__u32 lend_state;	/* BAR_SWAP_LEND_* */
	__s32 lender_pid;	/* who lent it, while lent; 0 otherwise */
	__u32 __reserved;
	char driver[BAR_SWAP_DRIVER_LEN];	/* the driver it is bound to now:
						 * "bar_swap", or the one it is lent to */
};
#define BAR_SWAP_DIE_PRESENT	(1u << 0)	/* bound to bar_swap (or lent by it) */
#define BAR_SWAP_DIE_ENABLED	(1u << 1)	/* not quarantined */
#define BAR_SWAP_DIE_ACTIVE	(1u << 2)	/* in the slot now */
#define BAR_SWAP_DIE_SIM	(1u << 3)	/* RAM-backed, no PCI device */
#define BAR_SWAP_DIE_LENT	(1u << 4)	/* lend_state is not NONE */
#define BAR_SWAP_DIE_INFO_SIZE_VER1 72
#define BAR_SWAP_DIE_INFO_SIZE_VER2 120

/*
 * BAR_SWAP_IOC_ACQUIRE: put die into the slot, owned by this file.
 *   Returns 0 once the file owns the slot with that die in it.  If the file
 *   already owns the slot it switches die at once (no queueing; acquiring
 *   the same die again is a no-op).  Otherwise, if the slot is free and
 *   nobody is queued, it is granted at once; else the caller queues behind
 *   the owner and every earlier waiter (strict FIFO, one waiter woken per
 *   hand-over).  Output fields are written on success only.
 *   EAGAIN     the slot is busy (owned by another file or waiters queued) and
 *              the file is O_NONBLOCK or flags has BAR_SWAP_ACQUIRE_NONBLOCK
 *   EINTR      a signal arrived while queued.  Never restarted (SA_RESTART
 *              or not): a restart would lose the queue position
 *   ETIMEDOUT  timeout_ms > 0 elapsed while queued
 *   EINVAL     die >= num_dies
 *   ENODEV     the die is removed, disabled or unusable (no VRAM window),
 *              also when it is removed or disabled while the caller waits
 *   EBUSY      another thread is already queued on this same file
 */
struct bar_swap_acquire {
	__u32 size;
	__u32 die;		/* in */
	__u32 flags;		/* in: BAR_SWAP_ACQUIRE_* */
	__u32 timeout_ms;	/* in: 0 = wait as long as it takes */
	__u64 vram_size;	/* out: the die's VRAM size; map this much */
	__u64 wait_ns;		/* out: time spent queued */
};
#define BAR_SWAP_ACQUIRE_NONBLOCK (1u << 0)
#define BAR_SWAP_ACQUIRE_SIZE_VER1 32

/*
 * BAR_SWAP_IOC_RELEASE (no argument): empty the slot and hand it to the next
 * waiter.  Every mapping of the slot is zapped first.  A die lent under the
 * PINNED policy comes back first: the slot moves on once it is back.
 *   EPERM   the file does not own the slot
 *   ENODEV  the file had lost the slot to an unbind or disable (reported
 *           once; the slot is already gone)
 *   ETIME   the file had lost the slot to the lease (reported once)
 */

/*
 * BAR_SWAP_IOC_SET_ENABLED: quarantine (enabled = 0) or re-enable a die.
 * Disabling the active die revokes it from its owner at once (its mappings
 * SIGBUS; its next RELEASE reports ENODEV) and fails every ACQUIRE queued for
 * it with ENODEV.  Needs CAP_SYS_ADMIN.
 *   EPERM   no CAP_SYS_ADMIN
 *   EINVAL  die >= num_dies, or enabled not 0 or 1
 *   ENODEV  the die is removed, or has no usable VRAM window (see its
 *           kernel log line: e.g. an unassigned BAR without slot_addr=)
 */
struct bar_swap_set_enabled {
	__u32 size;
	__u32 die;
	__u32 enabled;
	__u32 __reserved;
};
#define BAR_SWAP_SET_ENABLED_SIZE_VER1 16

/*
 * BAR_SWAP_IOC_LEND (version 2): bind the die in the slot to driver.
 * The caller must own the slot with that die in it.  Returns once the
 * driver has probed the die.  Lending a die already lent to the same driver
 * (a RESIDENT die acquired again) makes the caller its lender.
 *   EPERM       the file does not own the slot with die in it, or driver is
 *               not in the lend_drivers= allowlist (empty by default)
 *   EINVAL      die >= num_dies, an empty or unterminated name, "bar_swap"
 *               (use RETURN), a flag or reserved field not zero
 *   EOPNOTSUPP  a simulated die (sim_dies=): no device to bind
 *   ENOENT      no PCI driver of that name is loaded
 *   ENXIO       the driver did not take the die (its probe refused it); the
 *               die is back on bar_swap
 *   EBUSY       the die is lent to another driver, or on its way back
 *   ENODEV      the die is removed or quarantined
 */
struct bar_swap_lend {
	__u32 size;
	__u32 die;
	__u32 flags;		/* none yet: 0 */
	__u32 __reserved;
	char driver[BAR_SWAP_DRIVER_LEN];
};
#define BAR_SWAP_LEND_SIZE_VER1 48

/*
 * BAR_SWAP_IOC_RETURN (version 2): take the die in the slot back from the
 * driver it is lent to.  Waits until it is back (the driver's remove() may
 * wait for its own users) unless BAR_SWAP_RETURN_NONBLOCK.  The caller keeps
 * the slot with the die in it, bound to bar_swap again.  0 at once if the
 * die is not lent.
 *   EPERM        the file does not own the slot with die in it
 *   EINVAL       die >= num_dies, unknown flag
 *   EINPROGRESS  NONBLOCK and the driver has not let go yet (the return goes on)
 *   EINTR        a signal arrived while waiting (the return goes on)
 *   EBUSY        the die is still being lent (another thread of the file)
 *   ENODEV       the die could not be bound back and is gone (see the log)
 */
struct bar_swap_return {
	__u32 size;
	__u32 die;
	__u32 flags;		/* BAR_SWAP_RETURN_* */
	__u32 __reserved;
};
#define BAR_SWAP_RETURN_NONBLOCK (1u << 0)
#define BAR_SWAP_RETURN_SIZE_VER1 16

/*
 * BAR_SWAP_IOC_SET_POLICY (version 2): PINNED or RESIDENT for one die.
 * Needs CAP_SYS_ADMIN.
 *   EPERM   no CAP_SYS_ADMIN;  EINVAL  die >= num_dies, unknown policy
 *   EBUSY   the die is lent (return it first)
 */
struct bar_swap_set_policy {
	__u32 size;
	__u32 die;
	__u32 policy;
	__u32 __reserved;
};
#define BAR_SWAP_SET_POLICY_SIZE_VER1 16

/*
 * BAR_SWAP_IOC_SET_LEASE (version 2): while others wait, an owner keeps the
 * slot at most lease_ms (0: for ever, the default).  The clock runs from the
 * later of the grant and the first waiter's arrival, and stops when nobody
 * waits.  When it runs out, a die lent under PINNED comes back first (a
 * driver that does not let go keeps it, and the slot, for as long as it
 * wants: the log says so), then the owner is revoked: its mappings fault,
 * QUERY shows REVOKED|LEASE, its next RELEASE fails with ETIME, and the
 * next waiter gets the slot.  Needs CAP_SYS_ADMIN.
 *   EPERM   no CAP_SYS_ADMIN
 */
struct bar_swap_set_lease {
	__u32 size;
	__u32 lease_ms;
};
#define BAR_SWAP_SET_LEASE_SIZE_VER1 8

/*
 * BAR_SWAP_IOC_QUEUE (version 2): the waiters, head first.  entries points
 * to capacity struct bar_swap_queue_entry; count says how many were filled,
 * total how many wait.
 */
struct bar_swap_queue_entry {
	__s32 pid;		/* the waiting process (caller's pid ns), 0 if not visible */
	__u32 die;
	__u64 waited_ns;
};
struct bar_swap_queue {
	__u32 size;
	__u32 capacity;		/* in */
	__u32 count;		/* out */
	__u32 total;		/* out */
	__u64 entries;		/* in: user pointer */
};
#define BAR_SWAP_QUEUE_SIZE_VER1 24

#define BAR_SWAP_IOC_MAGIC	0xBA
#define BAR_SWAP_IOC_QUERY	_IOWR(BAR_SWAP_IOC_MAGIC, 0x00, struct bar_swap_query)
#define BAR_SWAP_IOC_DIE_INFO	_IOWR(BAR_SWAP_IOC_MAGIC, 0x01, struct bar_swap_die_info)
#define BAR_SWAP_IOC_ACQUIRE	_IOWR(BAR_SWAP_IOC_MAGIC, 0x02, struct bar_swap_acquire)
#define BAR_SWAP_IOC_RELEASE	_IO(BAR_SWAP_IOC_MAGIC, 0x03)
#define BAR_SWAP_IOC_SET_ENABLED _IOW(BAR_SWAP_IOC_MAGIC, 0x04, struct bar_swap_set_enabled)
#define BAR_SWAP_IOC_LEND	_IOW(BAR_SWAP_IOC_MAGIC, 0x05, struct bar_swap_lend)
#define BAR_SWAP_IOC_RETURN	_IOW(BAR_SWAP_IOC_MAGIC, 0x06, struct bar_swap_return)
#define BAR_SWAP_IOC_SET_POLICY	_IOW(BAR_SWAP_IOC_MAGIC, 0x07, struct bar_swap_set_policy)
#define BAR_SWAP_IOC_SET_LEASE	_IOW(BAR_SWAP_IOC_MAGIC, 0x08, struct bar_swap_set_lease)
#define BAR_SWAP_IOC_QUEUE	_IOWR(BAR_SWAP_IOC_MAGIC, 0x09, struct bar_swap_queue)

#endif /* _UAPI_BAR_SWAP_H */
