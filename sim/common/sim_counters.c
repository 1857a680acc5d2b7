/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_counters.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Format 2 (cnt2): format 1 had no card generations and was 8 KiB; it is started afresh. */
#define MAGIC "accelfs-sim-cnt2"
#define NAME_LEN 56
#define MAX_SLOTS 127

struct slot {
	char name[NAME_LEN]; /* an ABI suffix, NUL-terminated; written once, under the node's lock */
	uint64_t count;
};

/* A card's generation alone in its cache line: two cards' writers never contend for one. */
struct card_slot {
	uint64_t generation;
	uint8_t pad[56];
};

struct sim_counters_file {
	char magic[16];
	uint64_t node_generation;
	uint64_t fault_mask;
	uint32_t n_slots;
	uint8_t reserved[64 - 16 - 8 - 8 - 4];
	struct slot slots[MAX_SLOTS];
	struct card_slot cards[SIM_MAX_DEVICES];
};

_Static_assert(sizeof(struct sim_counters_file) == SIM_COUNTERS_SIZE, "the counters file is exactly its size");
_Static_assert(sizeof(struct slot) == 64, "a slot is one cache line: counting on one never contends with another");
_Static_assert(MAX_SLOTS >= SIM_FN_COUNT, "every ABI function has room in the counters file");
_Static_assert(sizeof(((accelsim_call_count_t *)0)->function) >= NAME_LEN, "names fit accelsim_call_count_t");

/* The slot named name, appended when the file has none yet; -1 when full. */
static int slot_for(struct sim_counters_file *f, const char *name)
{
	uint32_t n = f->n_slots;

	for (uint32_t i = 0; i < n && i < MAX_SLOTS; i++)
		if (!strncmp(f->slots[i].name, name, NAME_LEN))
			return (int)i;
	if (n >= MAX_SLOTS)
		return -1;
	memset(&f->slots[n], 0, sizeof(f->slots[n]));
	snprintf(f->slots[n].name, NAME_LEN, "%s", name);
	__atomic_store_n(&f->n_slots, n + 1, __ATOMIC_RELEASE);
	return (int)n;
}

int sim_counters_open(struct sim_counters *c, const char *path, char *err, size_t errlen)
{
	struct sim_counters_file *f;
	struct stat st;
	int fd;

	int ret;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || fstat(fd, &st) != 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	/* Only ever grown, and only from nothing: a mapping elsewhere never loses its pages. */
	if (st.st_size < SIM_COUNTERS_SIZE && ftruncate(fd, SIM_COUNTERS_SIZE) != 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot size %s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	f = mmap(NULL, SIM_COUNTERS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ret = f == MAP_FAILED ? -errno : 0;
	close(fd);
	if (ret) {
		snprintf(err, errlen, "cannot map %s: %s", path, strerror(-ret));
		return ret;
	}
	if (memcmp(f->magic, MAGIC, sizeof(f->magic)) != 0 || f->n_slots > MAX_SLOTS) {
		/* New (all zeros), of format 1, or not ours: start it; generation 0 makes every reader reread. */
		memset(f, 0, SIM_COUNTERS_SIZE);
		memcpy(f->magic, MAGIC, sizeof(f->magic));
	}
	c->map = f;
	for (int i = 0; i < SIM_FN_COUNT; i++)
		c->slot[i] = slot_for(f, sim_fn_name((enum sim_fn)i));
	return 0;
}

void sim_counters_close(struct sim_counters *c)
{
	if (c->map)
		munmap(c->map, SIM_COUNTERS_SIZE);
	c->map = NULL;
}

void sim_counters_hit(struct sim_counters *c, enum sim_fn fn)
{
	if (c->map && fn >= 0 && fn < SIM_FN_COUNT && c->slot[fn] >= 0)
		__atomic_fetch_add(&c->map->slots[c->slot[fn]].count, 1, __ATOMIC_RELAXED);
}

void sim_counters_list(const struct sim_counters *c, accelsim_call_count_t *out, unsigned *n)
{
	uint32_t have = c->map ? __atomic_load_n(&c->map->n_slots, __ATOMIC_ACQUIRE) : 0;

	for (uint32_t i = 0; out && i < have && i < *n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		memcpy(out[i].function, c->map->slots[i].name, NAME_LEN);
		out[i].function[NAME_LEN - 1] = '\0';
		out[i].count = __atomic_load_n(&c->map->slots[i].count, __ATOMIC_RELAXED);
	}
	*n = have;
}

void sim_counters_reset(struct sim_counters *c)
{
	uint32_t have = c->map ? c->map->n_slots : 0;

	for (uint32_t i = 0; i < have; i++)
		__atomic_store_n(&c->map->slots[i].count, 0, __ATOMIC_RELAXED);
}

uint64_t sim_counters_node_generation(const struct sim_counters *c)
{
	return c->map ? __atomic_load_n(&c->map->node_generation, __ATOMIC_ACQUIRE) : 0;
}

void sim_counters_set_node_generation(struct sim_counters *c, uint64_t generation)
{
	if (c->map)
		__atomic_store_n(&c->map->node_generation, generation, __ATOMIC_RELEASE);
}

uint64_t sim_counters_fault_mask(const struct sim_counters *c)
{
	return c->map ? __atomic_load_n(&c->map->fault_mask, __ATOMIC_ACQUIRE) : 0;
}

void sim_counters_set_fault_mask(struct sim_counters *c, uint64_t mask)
{
	if (c->map)
		__atomic_store_n(&c->map->fault_mask, mask, __ATOMIC_RELEASE);
}

uint64_t sim_counters_card_generation(const struct sim_counters *c, unsigned ordinal)
{
	if (!c->map || ordinal >= SIM_MAX_DEVICES)
		return 0;
	return __atomic_load_n(&c->map->cards[ordinal].generation, __ATOMIC_ACQUIRE);
}

void sim_counters_set_card_generation(struct sim_counters *c, unsigned ordinal, uint64_t generation)
{
	if (c->map && ordinal < SIM_MAX_DEVICES)
		__atomic_store_n(&c->map->cards[ordinal].generation, generation, __ATOMIC_RELEASE);
}
