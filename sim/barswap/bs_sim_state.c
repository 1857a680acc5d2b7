/* SPDX-License-Identifier: MIT */
#include "sim/barswap/bs_sim_state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/record.h"

/* ---- this process's identity --------------------------------------------- */

/*
 * A handle record whose pid and nonce are ours belongs to this very process
 * image, and a record is freed when its handle closes: it is alive without
 * asking the kernel.  The nonce tells a recycled pid (or an exec) apart.
 */
static uint64_t process_nonce(void)
{
	static uint64_t nonce;
	static pid_t nonce_pid;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pid_t pid = getpid();
	uint64_t n;

	pthread_mutex_lock(&lock);
	if (nonce_pid != pid) { /* first use, or a forked child: a new identity */
		if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
			nonce = ((uint64_t)pid << 32) ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&lock;
		nonce_pid = pid;
	}
	n = nonce;
	pthread_mutex_unlock(&lock);
	return n;
}

/* ---- handles -------------------------------------------------------------- */

static void handle_path(const struct sim_state *st, uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/handles/%llu", st->dir, (unsigned long long)id);
}

struct sim_handle *sim_handle_rec(struct sim_state *st, uint64_t id)
{
	for (size_t i = 0; id && i < SIM_MAX_HANDLES; i++)
		if (st->sh->handles[i].id == id)
			return &st->sh->handles[i];
	return NULL;
}

/*
 * Is the handle's lock file still locked by someone?  Our probe is a new
 * open file description, so it conflicts even with a lock held by this
 * process; a forked child that inherited the handle keeps it locked too.
 */
static bool handle_alive(struct sim_state *st, const struct sim_handle *h)
{
	char path[PATH_MAX];
	bool alive;
	int fd;

	if (h->pid == getpid() && h->nonce == process_nonce())
		return true;
	handle_path(st, h->id, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	alive = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

static void drop_handle(struct sim_state *st, struct sim_handle *h)
{
	char path[PATH_MAX];

	handle_path(st, h->id, path, sizeof(path));
	unlink(path);
	memset(h, 0, sizeof(*h));
}

int sim_handle_register(struct sim_state *st, uint64_t *id, int *lock_fd)
{
	struct sim_handle *free_rec = NULL;
	char path[PATH_MAX];
	int fd, ret = 0;

	sim_lock(st);
	for (int pass = 0; pass < 2 && !free_rec; pass++) {
		if (pass)
			sim_count_handles(st); /* drops the dead, freeing entries */
		for (size_t i = 0; i < SIM_MAX_HANDLES && !free_rec; i++)
			if (!st->sh->handles[i].id)
				free_rec = &st->sh->handles[i];
	}
	if (!free_rec) {
		ret = -EMFILE;
		goto out;
	}
	*id = st->sh->next_id++;
	/* The lock file exists and is held before the record can be seen. */
	handle_path(st, *id, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		close(fd);
		goto out;
	}
	memset(free_rec, 0, sizeof(*free_rec));
	free_rec->pid = getpid();
	free_rec->nonce = process_nonce();
	free_rec->id = *id;
	*lock_fd = fd;
out:
	sim_unlock(st);
	return ret;
}

void sim_handle_unregister(struct sim_state *st, uint64_t id, int lock_fd)
{
	struct sim_handle *h;

	sim_lock(st);
	h = sim_handle_rec(st, id);
	if (h) {
		if (h->queued)
			sim_dequeue(st, id);
		if (st->sh->owner == id)
			sim_leave(st);
		drop_handle(st, h);
	}
	sim_unlock(st);
	close(lock_fd);
}

uint32_t sim_count_handles(struct sim_state *st)
{
	uint32_t n = 0;

	for (size_t i = 0; i < SIM_MAX_HANDLES; i++) {
		struct sim_handle *h = &st->sh->handles[i];
		if (!h->id)
			continue;
		if (handle_alive(st, h)) {
			n++;
			continue;
		}
		if (h->queued)
			sim_dequeue(st, h->id);
		if (st->sh->owner == h->id) {
			drop_handle(st, h);
			sim_leave(st);
		} else {
			drop_handle(st, h);
		}
	}
	return n;
}

void sim_reap(struct sim_state *st)
{
	struct sim_handle *h = sim_handle_rec(st, st->sh->owner);

	if (st->sh->owner && (!h || !handle_alive(st, h))) {
		if (h)
			drop_handle(st, h);
		sim_leave(st); /* a dead lender's die comes back, as with the module */
	}
	sim_advance(st);
}

/* ---- the slot --------------------------------------------------------------- */

void sim_switch(struct sim_state *st, uint64_t handle, uint32_t die)
{
	struct sim_shared *sh = st->sh;
	struct sim_handle *h = sim_handle_rec(st, handle);

	sh->active = (int32_t)die;
	sh->owner_pid = h ? h->pid : 0;
	sh->owner = handle;
	sh->dies[die].acquires++;
	sh->swaps++;
	/* A new tenure: a new lease, running at once if others wait already. */
	sh->leaving = 0;
	sh->expired = 0;
	sh->contended_since = 0;
	sim_lease_update(st);
}

bool sim_slot_free(const struct sim_shared *sh)
{
	return !sh->owner && !sh->leaving && sh->returning < 0;
}

bool sim_die_pins(const struct sim_shared *sh, int32_t die)
{
	const struct sim_die *d;

	if (die < 0)
		return false;
	d = &sh->dies[die];
	return d->lend != BS_LEND_NONE && !(d->lend == BS_LEND_LENT && d->policy == BS_POLICY_RESIDENT);
}

void sim_leave(struct sim_state *st)
{
	struct sim_shared *sh = st->sh;

	if (sim_die_pins(sh, sh->active)) {
		sh->owner = 0;
		sh->owner_pid = 0;
		sh->leaving = 1;
		if (sh->dies[sh->active].lend == BS_LEND_LENT)
			sim_start_return(st, (uint32_t)sh->active);
		sim_wake(st);
		return;
	}
	sim_vacate(st);
}

void sim_dequeue(struct sim_state *st, uint64_t handle)
{
	struct sim_shared *sh = st->sh;

	for (uint32_t i = 0; i < sh->nqueue; i++) {
		if (sh->queue[i].handle != handle)
			continue;
		memmove(&sh->queue[i], &sh->queue[i + 1], (sh->nqueue - i - 1) * sizeof(sh->queue[0]));
		sh->nqueue--;
		break;
	}
	struct sim_handle *h = sim_handle_rec(st, handle);
	if (h)
		h->queued = 0;
	sim_lease_update(st);
}

void sim_vacate(struct sim_state *st)
{
	struct sim_shared *sh = st->sh;

	while (sh->nqueue) {
		struct sim_wait w = sh->queue[0];
		struct sim_handle *h = sim_handle_rec(st, w.handle);

		memmove(&sh->queue[0], &sh->queue[1], (sh->nqueue - 1) * sizeof(sh->queue[0]));
		sh->nqueue--;
		if (!h)
			continue;
		h->queued = 0;
		if (!handle_alive(st, h)) {
			drop_handle(st, h);
			continue;
		}
		if (!sh->dies[w.die].enabled) {
			h->result = -ENODEV;
			continue;
		}
		sim_switch(st, w.handle, w.die);
		h->result = 1;
		sim_wake(st);
		return;
	}
	sh->owner = 0;
	sh->active = -1;
	sh->owner_pid = 0;
	sh->leaving = 0;
	sh->expired = 0;
	sh->contended_since = 0;
	sim_wake(st);
}

void sim_revoke_die(struct sim_state *st, uint32_t die)
{
	struct sim_shared *sh = st->sh;

	for (uint32_t i = 0; i < sh->nqueue;) {
		struct sim_handle *h = sim_handle_rec(st, sh->queue[i].handle);
		if (sh->queue[i].die != die) {
			i++;
			continue;
		}
		memmove(&sh->queue[i], &sh->queue[i + 1], (sh->nqueue - i - 1) * sizeof(sh->queue[0]));
		sh->nqueue--;
		if (h) {
			h->queued = 0;
			h->result = -ENODEV;
		}
	}
	if (sh->owner && sh->active == (int32_t)die) {
		struct sim_handle *h = sim_handle_rec(st, sh->owner);
		if (h)
			h->revoked = ENODEV;
		sim_vacate(st);
	}
	sim_lease_update(st);
	sim_wake(st);
}

/* ---- waiting ---------------------------------------------------------------- */

void sim_wake(struct sim_state *st)
{
	__atomic_add_fetch(&st->sh->futex, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &st->sh->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int sim_wait(struct sim_state *st, uint32_t seen, uint32_t timeout_ms)
{
	struct timespec ts;

	if (!timeout_ms || timeout_ms > 100)
		timeout_ms = 100;
	ts.tv_sec = timeout_ms / 1000;
	ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
	/*
	 * Always with a timeout: a signal then ends the wait with EINTR even
	 * under SA_RESTART, as the module's ACQUIRE does, and a dead owner is
	 * noticed within 100 ms.
	 */
	if (syscall(SYS_futex, &st->sh->futex, FUTEX_WAIT, seen, &ts, NULL, 0) == 0)
		return 0;
	if (errno == EINTR)
		return -EINTR;
	if (errno == ETIMEDOUT)
		return -ETIMEDOUT;
	return 0; /* EAGAIN: it changed before we slept */
}

/* ---- the state file ------------------------------------------------------------ */

void sim_lock(struct sim_state *st)
{
	/* A process killed inside leaves the mutex to us, with every update ordered to be harmless. */
	if (pthread_mutex_lock(&st->sh->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&st->sh->lock);
}

void sim_unlock(struct sim_state *st)
{
	pthread_mutex_unlock(&st->sh->lock);
}

static bool same_shape(const struct sim_shared *sh, const struct bs_sim_geometry *g)
{
	if (sh->num_dies != g->num_dies)
		return false;
	for (uint32_t i = 0; i < g->num_dies; i++)
		if (sh->dies[i].vram_size != g->vram_size)
			return false;
	return true;
}

/* The drivers around the dies: not the shape, so they follow the latest daemon without a re-shape. */
static void set_drivers(struct sim_shared *sh, const struct bs_sim_geometry *g)
{
	sh->n_drivers = g->n_drivers;
	sh->n_lend_drivers = g->n_lend_drivers;
	memcpy(sh->drivers, g->drivers, sizeof(sh->drivers));
	memcpy(sh->lend_drivers, g->lend_drivers, sizeof(sh->lend_drivers));
}

static void init_shared(struct sim_shared *sh, const struct bs_sim_geometry *g)
{
	pthread_mutexattr_t a;

	memset(sh, 0, sizeof(*sh));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&sh->lock, &a);
	pthread_mutexattr_destroy(&a);
	sh->version = SIM_VERSION;
	sh->size = sizeof(*sh);
	sh->num_dies = g->num_dies;
	sh->active = -1;
	sh->returning = -1;
	sh->next_id = 1;
	set_drivers(sh, g);
	for (uint32_t i = 0; i < g->num_dies; i++) {
		sh->dies[i].vram_size = g->vram_size;
		sh->dies[i].enabled = 1;
	}
	/* Last: a reader that sees the magic sees everything above. */
	__atomic_store_n(&sh->magic, SIM_MAGIC, __ATOMIC_RELEASE);
}

/* Every die's backing file, sparse, of the die's size. */
static int size_die_files(const char *dir, const struct sim_shared *sh, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < sh->num_dies; i++) {
		char path[PATH_MAX];
		struct stat sb;
		int fd;

		bs_sim_die_path(dir, i, path, sizeof(path));
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0 || fstat(fd, &sb) ||
		    ((uint64_t)sb.st_size != sh->dies[i].vram_size && ftruncate(fd, (off_t)sh->dies[i].vram_size))) {
			int e = errno;
			snprintf(err, errlen, "simulated die %u: %s: %s", i, path, strerror(e));
			if (fd >= 0)
				close(fd);
			return -e;
		}
		close(fd);
	}
	return 0;
}

int sim_state_open(struct sim_state *st, const char *dir, const struct bs_sim_geometry *g, char *err, size_t errlen)
{
	struct bs_sim_geometry def;
	char path[PATH_MAX];
	struct stat sb;
	bool valid;
	int init_fd, ret = 0;

	memset(st, 0, sizeof(*st));
	st->fd = -1;
	snprintf(st->dir, sizeof(st->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/handles", dir);
	ret = accel_mkdirs(path, 0755);
	if (ret) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(-ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/init.lock", dir);
	init_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (init_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	while (flock(init_fd, LOCK_EX) && errno == EINTR)
		;
	snprintf(path, sizeof(path), "%s/slot.state", dir);
	st->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (st->fd < 0 || fstat(st->fd, &sb) ||
	    ((size_t)sb.st_size != sizeof(*st->sh) && ftruncate(st->fd, sizeof(*st->sh)))) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	st->sh = mmap(NULL, sizeof(*st->sh), PROT_READ | PROT_WRITE, MAP_SHARED, st->fd, 0);
	if (st->sh == MAP_FAILED) {
		st->sh = NULL;
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	valid = (size_t)sb.st_size == sizeof(*st->sh) && st->sh->magic == SIM_MAGIC && st->sh->version == SIM_VERSION &&
	        st->sh->size == sizeof(*st->sh) && st->sh->num_dies <= BS_SIM_MAX_DIES;
	if (valid && g && !same_shape(st->sh, g)) {
		uint32_t live;
		sim_lock(st);
		live = sim_count_handles(st);
		sim_unlock(st);
		if (live) {
			ret = -EBUSY;
			snprintf(
				err, errlen,
				"the simulated dies in %s are open (%u handles) with %u dies of %llu bytes, not %u of %llu",
				dir, live, st->sh->num_dies, (unsigned long long)st->sh->dies[0].vram_size, g->num_dies,
				(unsigned long long)g->vram_size);
			goto out;
		}
		valid = false; /* nobody uses it: re-shape it, keeping what the die files hold */
	}
	bs_sim_geometry_default(&def);
	if (!valid) {
		init_shared(st->sh, g ? g : &def);
	} else if (g) {
		sim_lock(st);
		set_drivers(st->sh, g);
		sim_unlock(st);
	}
	ret = size_die_files(dir, st->sh, err, errlen);
out:
	close(init_fd); /* and its lock */
	if (ret)
		sim_state_close(st);
	return ret;
}

void sim_state_close(struct sim_state *st)
{
	if (st->sh)
		munmap(st->sh, sizeof(*st->sh));
	if (st->fd >= 0)
		close(st->fd);
	st->sh = NULL;
	st->fd = -1;
}

void bs_sim_die_path(const char *dir, uint32_t die, char *buf, size_t len)
{
	snprintf(buf, len, "%s/die%u.vram", dir, die);
}
