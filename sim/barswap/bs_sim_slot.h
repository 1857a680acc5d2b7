/* SPDX-License-Identifier: MIT */
/*
 * One handle on the simulated slot, shared by the files that implement its
 * operations (bs_sim.c: the slot; bs_sim_lend_ops.c: lending and the lease;
 * bs_sim_protect.c: the window on the dies both keep right).
 */
#ifndef ACCEL_SIM_BS_SIM_SLOT_H
#define ACCEL_SIM_BS_SIM_SLOT_H

#include <pthread.h>
#include <stdbool.h>

#include "sim/barswap/bs_sim_state.h"

struct region {
	void *addr;
	uint64_t size;
};

struct sim_slot {
	struct bs_slot base;
	struct sim_state st;
	uint64_t id;
	int lock_fd;
	pthread_mutex_t local; /* regions and owned */
	struct region region[BS_SIM_MAX_DIES];
	int owned; /* the die whose region is read-write now, -1 */
	struct sim_slot *next;
};

static inline struct sim_slot *S(struct bs_slot *s)
{
	return (struct sim_slot *)s;
}

extern const struct bs_slot_ops sim_ops;

/* Under local: map die's file (PROT_NONE) if not yet. */
int ensure_region(struct sim_slot *s, uint32_t die);
/* Under the state lock: open exactly the region of the die this handle may touch now. */
int sync_protection(struct sim_slot *s);
/* ... and the same for this process's other handles on the slot. */
void sync_others(struct sim_slot *self);
bool has_cap_sys_admin(void);

int sim_lend(struct bs_slot *bs, uint32_t die, const char *driver);
int sim_return(struct bs_slot *bs, uint32_t die, unsigned flags);
int sim_die_lend(struct bs_slot *bs, uint32_t die, bs_die_lend *out);
int sim_set_policy(struct bs_slot *bs, uint32_t die, uint32_t policy);
int sim_set_lease(struct bs_slot *bs, uint32_t lease_ms);
int sim_lease(struct bs_slot *bs, bs_lease_info *out);
int sim_queue(struct bs_slot *bs, bs_queue_entry *out, uint32_t max, uint32_t *total);

#endif
