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

#include "core/state/record.h"

/* ---- this process's identity --------------------------------------------- */

/*
 * A handle record whose pid and nonce are ours belongs to this very process
 * image, and a record is freed when its handle closes: it is alive without
 * asking the kernel.  The nonce tells a recycled pid (or an exec) apart.
 */
uint64_t sim_process_nonce(void)
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

void sim_handle_path(const struct sim_state *st, uint64_t id, char *buf, size_t len)
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
bool sim_handle_alive(struct sim_state *st, const struct sim_handle *h)
{
	char path[PATH_MAX];
	bool alive;
	int fd;

	if (h->pid == getpid() && h->nonce == sim_process_nonce())
		return true;
	sim_handle_path(st, h->id, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	alive = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

void sim_handle_drop(struct sim_state *st, struct sim_handle *h)
{
	char path[PATH_MAX];

	sim_handle_path(st, h->id, path, sizeof(path));
	unlink(path);
	memset(h, 0, sizeof(*h));
}

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
		/* Counted, not reaped: the rules reap (bs_sim_rules.c); a re-shape starts afresh anyway. */
		live = 0;
		for (size_t i = 0; i < SIM_MAX_HANDLES; i++)
			live += st->sh->handles[i].id && sim_handle_alive(st, &st->sh->handles[i]);
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
