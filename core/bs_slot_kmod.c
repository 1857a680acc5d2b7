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

#include "core/bs_slot.h"
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
		       BS_DIE_ACTIVE == BAR_SWAP_DIE_ACTIVE && BS_DIE_SIM == BAR_SWAP_DIE_SIM,
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
