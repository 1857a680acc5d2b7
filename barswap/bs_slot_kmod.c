/* SPDX-License-Identifier: MIT */
/*
 * The slot seam over /dev/bar_swap: one open file of the module per handle,
 * the ioctls of kmod/bar_swap_uapi.h, and one mapping of the whole slot.
 *
 * The module does all the arbitration (FIFO, ownership per open file,
 * release on close or death, revocation by zapping every mapping); this file
 * only translates structs and errnos.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "barswap/bs_slot.h"
#include "kmod/bar_swap_uapi.h"

struct kmod_slot {
	struct bs_slot base;
	int fd;
	pthread_mutex_t map_lock; /* the mapping is made once, by whichever thread asks first */
	void *map;
	uint64_t map_len;
};

static struct kmod_slot *K(struct bs_slot *s)
{
	return (struct kmod_slot *)s;
}

static int kioctl(struct kmod_slot *k, unsigned long cmd, void *arg)
{
	return ioctl(k->fd, cmd, arg) ? -errno : 0;
}

static int kmod_query(struct bs_slot *s, bs_status *out)
{
	struct bar_swap_query q = { .size = sizeof(q) };
	int ret = kioctl(K(s), BAR_SWAP_IOC_QUERY, &q);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->num_dies = q.num_dies;
	out->num_slots = q.num_slots;
	out->active_die = q.active_die;
	out->owner_pid = q.owner_pid;
	out->waiters = q.waiters;
	out->open_files = q.open_files;
	out->swaps = q.swaps;
	out->slot_size = q.slot_size;
	out->owner = !!(q.flags & BAR_SWAP_QUERY_OWNER);
	out->revoked = !!(q.flags & BAR_SWAP_QUERY_REVOKED);
	return 0;
}

/* The uapi's die flags are the seam's, bit for bit; say so at compile time. */
_Static_assert(BS_DIE_PRESENT == BAR_SWAP_DIE_PRESENT && BS_DIE_ENABLED == BAR_SWAP_DIE_ENABLED &&
                       BS_DIE_ACTIVE == BAR_SWAP_DIE_ACTIVE && BS_DIE_SIM == BAR_SWAP_DIE_SIM &&
                       BS_DIE_LENT == BAR_SWAP_DIE_LENT,
               "die flags differ between barswap.h and bar_swap_uapi.h");
_Static_assert(BS_BUS_ID_LEN == BAR_SWAP_BUS_ID_LEN, "bus id length differs");

static int kmod_die_info(struct bs_slot *s, uint32_t die, bs_die_info *out)
{
	struct bar_swap_die_info d = { .size = sizeof(d), .die = die };
	int ret = kioctl(K(s), BAR_SWAP_IOC_DIE_INFO, &d);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->die = d.die;
	out->flags = d.flags;
	out->vendor = d.vendor;
	out->device = d.device;
	out->vram_size = d.vram_size;
	out->acquires = d.acquires;
	out->bar_phys = d.bar_phys;
	memcpy(out->bus_id, d.bus_id, sizeof(out->bus_id));
	out->bus_id[sizeof(out->bus_id) - 1] = '\0';
	return 0;
}

static int kmod_acquire(struct bs_slot *s, uint32_t die, unsigned flags, uint32_t timeout_ms, uint64_t *vram_size)
{
	struct bar_swap_acquire a = {
		.size = sizeof(a),
		.die = die,
		.flags = (flags & BS_NONBLOCK) ? BAR_SWAP_ACQUIRE_NONBLOCK : 0,
		.timeout_ms = timeout_ms,
	};
	int ret = kioctl(K(s), BAR_SWAP_IOC_ACQUIRE, &a);

	if (!ret && vram_size)
		*vram_size = a.vram_size;
	return ret;
}

static int kmod_release(struct bs_slot *s)
{
	return kioctl(K(s), BAR_SWAP_IOC_RELEASE, NULL);
}

static int kmod_set_enabled(struct bs_slot *s, uint32_t die, bool enabled)
{
	struct bar_swap_set_enabled e = { .size = sizeof(e), .die = die, .enabled = enabled };

	return kioctl(K(s), BAR_SWAP_IOC_SET_ENABLED, &e);
}

/*
 * One mapping of the whole slot, made on first use: the module faults in
 * whichever die the file owns, so every die appears at the same address.
 */
static int kmod_window(struct bs_slot *s, uint32_t die, void **addr)
{
	struct kmod_slot *k = K(s);
	bs_status st;
	int ret = 0;

	pthread_mutex_lock(&k->map_lock);
	if (!k->map) {
		ret = kmod_query(s, &st);
		if (!ret && !st.slot_size)
			ret = -ENODEV;
		if (!ret) {
			void *m = mmap(NULL, st.slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
			if (m == MAP_FAILED) {
				ret = -errno;
			} else {
				k->map = m;
				k->map_len = st.slot_size;
			}
		}
	}
	if (!ret) {
		bs_die_info d;
		ret = kmod_die_info(s, die, &d);
		/* A die bound later, larger than the slot was when it was mapped. */
		if (!ret && d.vram_size > k->map_len)
			ret = -E2BIG;
	}
	if (!ret)
		*addr = k->map;
	pthread_mutex_unlock(&k->map_lock);
	return ret;
}

/* The uapi's lend states and policies are the seam's, value for value. */
_Static_assert(BS_LEND_NONE == BAR_SWAP_LEND_NONE && BS_LEND_LENDING == BAR_SWAP_LEND_LENDING &&
                       BS_LEND_LENT == BAR_SWAP_LEND_LENT && BS_LEND_RETURNING == BAR_SWAP_LEND_RETURNING,
               "lend states differ between barswap.h and bar_swap_uapi.h");
_Static_assert(BS_POLICY_PINNED == BAR_SWAP_POLICY_PINNED && BS_POLICY_RESIDENT == BAR_SWAP_POLICY_RESIDENT,
               "policies differ between barswap.h and bar_swap_uapi.h");
_Static_assert(BS_SLOT_EXPIRED == BAR_SWAP_SLOT_EXPIRED && BS_SLOT_LEAVING == BAR_SWAP_SLOT_LEAVING,
               "slot flags differ between barswap.h and bar_swap_uapi.h");
_Static_assert(BS_DRIVER_LEN == BAR_SWAP_DRIVER_LEN, "driver name length differs");

static int kmod_lend(struct bs_slot *s, uint32_t die, const char *driver)
{
	struct bar_swap_lend l = { .size = sizeof(l), .die = die };

	if (strlen(driver) >= sizeof(l.driver))
		return -EINVAL;
	strcpy(l.driver, driver);
	return kioctl(K(s), BAR_SWAP_IOC_LEND, &l);
}

static int kmod_return(struct bs_slot *s, uint32_t die, unsigned flags)
{
	struct bar_swap_return r = {
		.size = sizeof(r),
		.die = die,
		.flags = (flags & BS_NONBLOCK) ? BAR_SWAP_RETURN_NONBLOCK : 0,
	};

	return kioctl(K(s), BAR_SWAP_IOC_RETURN, &r);
}

static int kmod_die_lend(struct bs_slot *s, uint32_t die, bs_die_lend *out)
{
	struct bar_swap_die_info d = { .size = sizeof(d), .die = die };
	int ret = kioctl(K(s), BAR_SWAP_IOC_DIE_INFO, &d);

	if (ret)
		return ret;
	if (d.size < BAR_SWAP_DIE_INFO_SIZE_VER2)
		return -EPROTO; /* a module without lending */
	memset(out, 0, sizeof(*out));
	out->die = d.die;
	out->policy = d.policy;
	out->state = d.lend_state;
	out->lender_pid = d.lender_pid;
	memcpy(out->driver, d.driver, sizeof(out->driver));
	out->driver[sizeof(out->driver) - 1] = '\0';
	return 0;
}

static int kmod_set_policy(struct bs_slot *s, uint32_t die, uint32_t policy)
{
	struct bar_swap_set_policy p = { .size = sizeof(p), .die = die, .policy = policy };

	return kioctl(K(s), BAR_SWAP_IOC_SET_POLICY, &p);
}

static int kmod_set_lease(struct bs_slot *s, uint32_t lease_ms)
{
	struct bar_swap_set_lease l = { .size = sizeof(l), .lease_ms = lease_ms };

	return kioctl(K(s), BAR_SWAP_IOC_SET_LEASE, &l);
}

static int kmod_lease(struct bs_slot *s, bs_lease_info *out)
{
	struct bar_swap_query q = { .size = sizeof(q) };
	int ret = kioctl(K(s), BAR_SWAP_IOC_QUERY, &q);

	if (ret)
		return ret;
	if (q.size < BAR_SWAP_QUERY_SIZE_VER2)
		return -EPROTO; /* a module without leases */
	memset(out, 0, sizeof(*out));
	out->lease_ms = q.lease_ms;
	out->lease_left_ms = q.lease_left_ms;
	out->lent_die = q.lent_die;
	out->lend_state = q.lend_state;
	out->lender_pid = q.lender_pid;
	out->returning_ms = q.returning_ms;
	out->slot_flags = q.slot_flags;
	out->revoked_by_lease = !!(q.flags & BAR_SWAP_QUERY_LEASE);
	memcpy(out->lent_driver, q.lent_driver, sizeof(out->lent_driver));
	out->lent_driver[sizeof(out->lent_driver) - 1] = '\0';
	return 0;
}

_Static_assert(sizeof(bs_queue_entry) == sizeof(struct bar_swap_queue_entry), "queue entries differ");

static int kmod_queue(struct bs_slot *s, bs_queue_entry *out, uint32_t max, uint32_t *total)
{
	struct bar_swap_queue q = { .size = sizeof(q), .capacity = max, .entries = (uintptr_t)out };
	int ret = kioctl(K(s), BAR_SWAP_IOC_QUEUE, &q);

	if (ret)
		return ret;
	if (total)
		*total = q.total;
	return (int)q.count;
}

static void kmod_close(struct bs_slot *s)
{
	struct kmod_slot *k = K(s);

	if (k->map)
		munmap(k->map, k->map_len);
	close(k->fd); /* releases the slot if this file owned it */
	pthread_mutex_destroy(&k->map_lock);
	free(k);
}

static const struct bs_slot_ops kmod_ops = {
	.backend = "bar_swap",
	.query = kmod_query,
	.die_info = kmod_die_info,
	.acquire = kmod_acquire,
	.release = kmod_release,
	.set_enabled = kmod_set_enabled,
	.window = kmod_window,
	.close = kmod_close,
	.lend = kmod_lend,
	.return_die = kmod_return,
	.die_lend = kmod_die_lend,
	.set_policy = kmod_set_policy,
	.set_lease = kmod_set_lease,
	.lease = kmod_lease,
	.queue = kmod_queue,
};

struct bs_slot *bs_slot_kmod_open(const char *path, int *err)
{
	struct kmod_slot *k = calloc(1, sizeof(*k));
	struct bar_swap_query q = { .size = sizeof(q) };

	if (!k) {
		*err = -ENOMEM;
		return NULL;
	}
	k->fd = open(path ? path : BAR_SWAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		*err = -errno;
		free(k);
		return NULL;
	}
	/* Not the module (or a module speaking another API): refuse now, not at first use. */
	*err = ioctl(k->fd, BAR_SWAP_IOC_QUERY, &q) ? -errno : q.version < 1 ? -EPROTO : 0;
	if (*err) {
		close(k->fd);
		free(k);
		return NULL;
	}
	pthread_mutex_init(&k->map_lock, NULL);
	k->base.ops = &kmod_ops;
	return &k->base;
}
