/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_health.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "simhlt2"

/* A shared mapping of len bytes of path, the file grown to it from nothing if shorter; NULL with err. */
static void *map_file(const char *path, size_t len, char *err, size_t errlen)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	/* Only ever grown from nothing: a mapping elsewhere never loses its pages. */
	if (st.st_size < (off_t)len && ftruncate(fd, (off_t)len) != 0) {
		snprintf(err, errlen, "cannot size %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
		return NULL;
	}
	return p;
}

struct sim_health_file *sim_health_open(const char *path, const char *wake_path, uint32_t **wake, char *err,
                                        size_t errlen)
{
	struct sim_health_file *f = map_file(path, sizeof(*f), err, errlen);

	if (!f)
		return NULL;
	*wake = map_file(wake_path, sizeof(**wake), err, errlen);
	if (!*wake) {
		munmap(f, sizeof(*f));
		return NULL;
	}
	/*
	 * New (all zeros) or not ours: start it.  Two processes starting it at
	 * once both write the same zeros and magic.
	 */
	if (memcmp(f->magic, MAGIC, sizeof(f->magic)) != 0) {
		memset(f, 0, sizeof(*f));
		memcpy(f->magic, MAGIC, sizeof(f->magic));
	}
	return f;
}

void sim_health_close(struct sim_health_file *f, uint32_t *wake)
{
	if (f)
		munmap(f, sizeof(*f));
	if (wake)
		munmap(wake, sizeof(*wake));
}

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	/* Not FUTEX_PRIVATE: waiters and raisers are different processes sharing the page. */
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

void sim_health_raise(struct sim_health_file *f, uint32_t *wake, unsigned ordinal, uint64_t type, uint64_t data,
                      unsigned gi, unsigned ci)
{
	uint64_t seq = __atomic_fetch_add(&f->next, 1, __ATOMIC_ACQ_REL);
	struct sim_health_event *e = &f->ring[seq % SIM_HEALTH_RING];

	/*
	 * A sequence lock without fences (ThreadSanitizer has none): each
	 * field's store is a release, so no reader sees it before the stamp's 0.
	 */
	__atomic_store_n(&e->stamp, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->ordinal, ordinal, __ATOMIC_RELEASE);
	__atomic_store_n(&e->gi, gi, __ATOMIC_RELEASE);
	__atomic_store_n(&e->ci, ci, __ATOMIC_RELEASE);
	__atomic_store_n(&e->type, type, __ATOMIC_RELEASE);
	__atomic_store_n(&e->data, data, __ATOMIC_RELEASE);
	__atomic_store_n(&e->stamp, seq + 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(wake, 1, __ATOMIC_RELEASE);
	futex(wake, FUTEX_WAKE, INT32_MAX, NULL);
}

uint64_t sim_health_now(const struct sim_health_file *f)
{
	return __atomic_load_n(&f->next, __ATOMIC_ACQUIRE);
}

int sim_health_take(const struct sim_health_file *f, uint64_t *seq, struct sim_health_event *out)
{
	const struct sim_health_event *e = &f->ring[*seq % SIM_HEALTH_RING];
	uint64_t stamp = __atomic_load_n(&e->stamp, __ATOMIC_ACQUIRE), next;

	if (stamp == *seq + 1) {
		/* Each field's load is an acquire, so the stamp is read again after all of them. */
		memset(out, 0, sizeof(*out));
		out->stamp = stamp;
		out->ordinal = __atomic_load_n(&e->ordinal, __ATOMIC_ACQUIRE);
		out->gi = __atomic_load_n(&e->gi, __ATOMIC_ACQUIRE);
		out->ci = __atomic_load_n(&e->ci, __ATOMIC_ACQUIRE);
		out->type = __atomic_load_n(&e->type, __ATOMIC_ACQUIRE);
		out->data = __atomic_load_n(&e->data, __ATOMIC_ACQUIRE);
		/* Read again: a raiser that lapped the ring while we copied has made the copy worthless. */
		if (__atomic_load_n(&e->stamp, __ATOMIC_RELAXED) == stamp) {
			(*seq)++;
			return 1;
		}
	}
	next = sim_health_now(f);
	if (next > *seq + SIM_HEALTH_RING) {
		*seq = next - SIM_HEALTH_RING;
		return -1;
	}
	return 0;
}

int64_t sim_health_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool sim_health_sleep(struct sim_health_file *f, uint32_t *wake, uint64_t seq, int64_t deadline_ns)
{
	uint32_t word = __atomic_load_n(wake, __ATOMIC_ACQUIRE);
	int64_t left = deadline_ns - sim_health_clock_ns();
	struct timespec ts;

	/* Checked after reading the word: an event raised in between changes it, and the kernel sees that. */
	if (sim_health_now(f) > seq)
		return true;
	if (left <= 0)
		return false;
	ts.tv_sec = left / 1000000000;
	ts.tv_nsec = left % 1000000000;
	if (futex(wake, FUTEX_WAIT, word, &ts) == 0 || errno == EAGAIN)
		return true;
	return false; /* ETIMEDOUT or EINTR */
}
