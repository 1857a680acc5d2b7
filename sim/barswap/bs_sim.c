/* SPDX-License-Identifier: MIT */
/*
 * The simulated slot's operations: the module's ACQUIRE/RELEASE/QUERY/
 * DIE_INFO/SET_ENABLED over the shared state of bs_sim_state.c, and the
 * mapping.
 *
 * The mapping: each die's backing file is mapped once per handle, PROT_NONE,
 * and made read-write only while the handle owns the slot with that die in
 * it.  So a stale pointer faults, as the module's zapped mapping does
 * (SIGSEGV here, SIGBUS there), and re-acquiring a die finds its pages still
 * mapped.  A handle re-checks its protection under the state lock on every
 * operation; a handle of this process that loses the slot to quarantine is
 * closed off at once.  (One of another process is closed off at its next
 * operation: user space cannot zap another process's mapping.)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim/barswap/bs_sim.h"
#include "sim/barswap/bs_sim_slot.h"
#include "sim/barswap/bs_sim_state.h"

/* This process's open handles, so that a quarantine closes off their mappings at once. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_slot *registry;

void sync_others(struct sim_slot *self)
{
	pthread_mutex_lock(&registry_lock);
	for (struct sim_slot *o = registry; o; o = o->next)
		if (o != self && !strcmp(o->st.dir, self->st.dir))
			sync_protection(o);
	pthread_mutex_unlock(&registry_lock);
}

static int sim_query(struct bs_slot *bs, bs_status *out)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	struct sim_handle *me;

	sim_lock(&s->st);
	sim_reap(&s->st);
	memset(out, 0, sizeof(*out));
	out->open_files = sim_count_handles(&s->st); /* drops dead handles and their queue entries */
	me = sim_handle_rec(&s->st, s->id);
	out->num_dies = sh->num_dies;
	out->num_slots = 1;
	out->active_die = sh->active;
	out->owner_pid = sh->owner_pid;
	out->waiters = sh->nqueue;
	out->swaps = sh->swaps;
	for (uint32_t i = 0; i < sh->num_dies; i++)
		if (sh->dies[i].vram_size > out->slot_size)
			out->slot_size = sh->dies[i].vram_size;
	out->owner = sh->owner == s->id;
	out->revoked = me && me->revoked;
	sync_protection(s);
	sim_unlock(&s->st);
	return 0;
}

static int sim_die_info(struct bs_slot *bs, uint32_t die, bs_die_info *out)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	int ret = 0;

	sim_lock(&s->st);
	if (die >= sh->num_dies) {
		ret = -EINVAL;
	} else {
		memset(out, 0, sizeof(*out));
		out->die = die;
		out->flags = BS_DIE_PRESENT | BS_DIE_SIM | (sh->dies[die].enabled ? BS_DIE_ENABLED : 0) |
		             ((sh->owner || sh->leaving) && sh->active == (int32_t)die ? BS_DIE_ACTIVE : 0) |
		             (sh->dies[die].lend != BS_LEND_NONE ? BS_DIE_LENT : 0);
		out->vram_size = sh->dies[die].vram_size;
		out->acquires = sh->dies[die].acquires;
		snprintf(out->bus_id, sizeof(out->bus_id), "sim:%u", die);
	}
	sim_unlock(&s->st);
	return ret;
}

/* How a wait ended, once someone took us off the queue: 1 granted, else -errno. */
static int served(const struct sim_handle *me)
{
	return me->result == 1 ? 0 : me->result < 0 ? me->result : -EIO;
}

/* Under the state lock, queued: wait until served, interrupted or out of time. */
static int wait_turn(struct sim_slot *s, struct sim_handle *me, uint32_t timeout_ms)
{
	uint64_t deadline = timeout_ms ? sim_now_ms() + timeout_ms : 0;

	for (;;) {
		uint32_t seen = __atomic_load_n(&s->st.sh->futex, __ATOMIC_SEQ_CST);
		uint32_t left = 0;
		int r;

		if (deadline) {
			uint64_t t = sim_now_ms();
			left = t >= deadline ? 1 : (uint32_t)(deadline - t);
		}
		sim_unlock(&s->st);
		r = sim_wait(&s->st, seen, left);
		sim_lock(&s->st);
		if (!me->queued)
			return served(me);
		if (r == -EINTR || (deadline && sim_now_ms() >= deadline)) {
			/* Never restarted, as the module's: a restart would lose the place in the queue. */
			sim_dequeue(&s->st, s->id);
			return r == -EINTR ? -EINTR : -ETIMEDOUT;
		}
		sim_reap(&s->st); /* a dead owner or an expired lease hands the slot on, perhaps to us */
		if (!me->queued)
			return served(me);
	}
}

static int sim_acquire(struct bs_slot *bs, uint32_t die, unsigned flags, uint32_t timeout_ms, uint64_t *vram_size)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	struct sim_handle *me;
	int ret = 0;

	sim_lock(&s->st);
	sim_reap(&s->st);
	me = sim_handle_rec(&s->st, s->id);
	if (!me)
		ret = -EBADF;
	else if (die >= sh->num_dies)
		ret = -EINVAL;
	else if (!sh->dies[die].enabled)
		ret = -ENODEV;
	else if (me->queued)
		ret = -EBUSY;
	if (ret)
		goto out;
	me->revoked = 0;
	if (sh->owner == s->id) { /* the owner moves the slot at will, unless its die is lent */
		if (sh->active != (int32_t)die && sim_die_pins(sh, sh->active))
			ret = -EBUSY;
		else if (sh->active != (int32_t)die)
			sim_switch(&s->st, s->id, die);
		if (ret)
			goto out;
	} else if (sim_slot_free(sh) && !sh->nqueue) {
		sim_switch(&s->st, s->id, die);
	} else if (flags & BS_NONBLOCK) {
		ret = -EAGAIN;
	} else {
		if (sh->nqueue >= SIM_MAX_HANDLES) {
			ret = -EAGAIN;
			goto out;
		}
		sh->queue[sh->nqueue++] =
			(struct sim_wait){ .handle = s->id, .die = die, .pid = me->pid, .since_ms = sim_now_ms() };
		me->queued = 1;
		me->result = 0;
		sim_lease_update(&s->st); /* someone waits: the owner's lease runs */
		ret = wait_turn(s, me, timeout_ms);
	}
	if (!ret) {
		ret = sync_protection(s);
		if (ret) /* owned but not mappable: hand it on rather than sit on it */
			sim_vacate(&s->st);
		else if (vram_size)
			*vram_size = sh->dies[die].vram_size;
	}
out:
	sync_protection(s);
	sim_unlock(&s->st);
	return ret;
}

static int sim_release(struct bs_slot *bs)
{
	struct sim_slot *s = S(bs);
	struct sim_handle *me;
	int ret = -EPERM;

	sim_lock(&s->st);
	sim_reap(&s->st);
	me = sim_handle_rec(&s->st, s->id);
	if (s->st.sh->owner == s->id) {
		sim_leave(&s->st); /* a pinned lent die comes back first */
		ret = 0;
	} else if (me && me->revoked) {
		ret = -me->revoked; /* ENODEV or ETIME, reported once */
	}
	if (me)
		me->revoked = 0;
	sync_protection(s);
	sim_unlock(&s->st);
	return ret;
}

static int sim_set_enabled(struct bs_slot *bs, uint32_t die, bool enabled)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh = s->st.sh;
	int ret = 0;

	if (!has_cap_sys_admin())
		return -EPERM; /* as the module */
	sim_lock(&s->st);
	if (die >= sh->num_dies) {
		ret = -EINVAL;
	} else if (!enabled && sh->dies[die].lend != BS_LEND_NONE) {
		ret = -EBUSY; /* bound to its driver: return it first */
	} else if (sh->dies[die].enabled != (uint32_t)enabled) {
		sh->dies[die].enabled = enabled;
		if (!enabled)
			sim_revoke_die(&s->st, die);
		sync_protection(s);
		sync_others(s);
	}
	sim_unlock(&s->st);
	return ret;
}

static int sim_window(struct bs_slot *bs, uint32_t die, void **addr)
{
	struct sim_slot *s = S(bs);
	int ret;

	if (die >= s->st.sh->num_dies)
		return -EINVAL;
	pthread_mutex_lock(&s->local);
	ret = ensure_region(s, die);
	if (!ret)
		*addr = s->region[die].addr;
	pthread_mutex_unlock(&s->local);
	return ret;
}

static void sim_close(struct bs_slot *bs)
{
	struct sim_slot *s = S(bs);

	pthread_mutex_lock(&registry_lock);
	for (struct sim_slot **p = &registry; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	sim_handle_unregister(&s->st, s->id, s->lock_fd);
	for (uint32_t i = 0; i < BS_SIM_MAX_DIES; i++)
		if (s->region[i].addr)
			munmap(s->region[i].addr, s->region[i].size);
	sim_state_close(&s->st);
	pthread_mutex_destroy(&s->local);
	free(s);
}

const struct bs_slot_ops sim_ops = {
	.backend = "simulated",
	.query = sim_query,
	.die_info = sim_die_info,
	.acquire = sim_acquire,
	.release = sim_release,
	.set_enabled = sim_set_enabled,
	.window = sim_window,
	.close = sim_close,
	.lend = sim_lend,
	.return_die = sim_return,
	.die_lend = sim_die_lend,
	.set_policy = sim_set_policy,
	.set_lease = sim_set_lease,
	.lease = sim_lease,
	.queue = sim_queue,
};

struct bs_slot *bs_slot_sim_open(const char *dir, const struct bs_sim_geometry *g, int *ret, char *err, size_t errlen)
{
	struct sim_slot *s = calloc(1, sizeof(*s));

	if (!s) {
		*ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*ret = sim_state_open(&s->st, dir, g, err, errlen);
	if (*ret) {
		free(s);
		return NULL;
	}
	*ret = sim_handle_register(&s->st, &s->id, &s->lock_fd);
	if (*ret) {
		snprintf(err, errlen, "cannot open a handle on the simulated slot in %s: %s", dir, strerror(-*ret));
		sim_state_close(&s->st);
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->local, NULL);
	s->owned = -1;
	s->base.ops = &sim_ops;
	pthread_mutex_lock(&registry_lock);
	s->next = registry;
	registry = s;
	pthread_mutex_unlock(&registry_lock);
	return &s->base;
}

int bs_sim_driver_use(struct bs_slot *bs, uint32_t die, char *driver, size_t len, int *fd)
{
	struct sim_slot *s = S(bs);
	struct sim_shared *sh;
	char path[PATH_MAX];
	int ret = 0;

	if (bs->ops != &sim_ops)
		return -EOPNOTSUPP;
	sh = s->st.sh;
	snprintf(path, sizeof(path), "%s/users", s->st.dir);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	sim_lock(&s->st);
	sim_reap(&s->st);
	if (die >= sh->num_dies) {
		ret = -EINVAL;
	} else if (sh->dies[die].lend != BS_LEND_LENT) {
		ret = -ENODEV; /* nothing to use it through (or on its way back) */
	} else {
		/* Under the state lock, where returns look: a return cannot slip in between. */
		sim_user_path(s->st.dir, die, path, sizeof(path));
		*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (*fd < 0 || flock(*fd, LOCK_SH | LOCK_NB))
			ret = -errno;
		if (ret && *fd >= 0)
			close(*fd);
		if (!ret)
			snprintf(driver, len, "%s", sh->dies[die].driver);
	}
	sim_unlock(&s->st);
	return ret;
}
