/* SPDX-License-Identifier: MIT */
/*
 * <root>/<vendor>/health: what the simulated cards report about their
 * health, in a small file every process of one simulated vendor maps
 * (MAP_SHARED), like the counters file (sim_counters.h):
 *
 *   - a ring of the events the cards raised (Xid errors, ECC errors, a
 *     recovery action that changed), each stamped with its sequence number;
 *   - per card, its ECC counts (corrected and uncorrected, volatile and
 *     aggregate, per memory location), the recovery action the driver asks
 *     for, and whether the card is on the bus.
 *
 * A raiser (accel-smi sim xid, in any process) claims a slot with one
 * atomic add, fills it, stamps it last (release) and wakes every waiter
 * through a futex word in a file of its own, <root>/<vendor>/health.wake:
 * a waiter (EventSetWait_v2) sleeps in the kernel until then, so a daemon
 * waiting for events costs nothing.  The word is apart because the kernel
 * takes a waiter's page as written to, which would move the health file's
 * mtime: a process that only waits changes nothing of the hardware.
 * A waiter that falls more than the ring behind loses the oldest events,
 * as a real driver's bounded queue does.
 */
#ifndef ACCEL_SIM_HEALTH_H
#define ACCEL_SIM_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model/mig_abi.h"
#include "sim/common/sim_model.h"

#define SIM_HEALTH_RING 4096
#define SIM_HEALTH_CARDS 64

struct sim_health_event {
	uint64_t stamp; /* sequence number + 1 once complete: 0 or stale while being written */
	uint32_t ordinal;
	uint32_t gi, ci;
	uint32_t pad;
	uint64_t type;
	uint64_t data;
};

struct sim_health_card {
	uint32_t absent;                               /* the card fell off the bus (SimSetDevicePresent) */
	uint32_t recovery_action;                      /* MIG_GPU_RECOVERY_ACTION_* */
	uint64_t ecc[2][2][MIG_MEMORY_LOCATION_COUNT]; /* [errorType][counterType][location] */
};

/*
 * What the simulated GPM counters and energy meter say (sim_api_usage.c):
 * one target per GPU instance id and one for the card.  A rate is in
 * hundredths of a percent; acc_* integrate it over CLOCK_MONOTONIC
 * nanoseconds since the file was made, up to set_ns, so that a sample
 * taken at t reads acc + rate * (t - set_ns), as a hardware counter would.
 */
struct sim_usage_target {
	int64_t set_ns;
	uint32_t sm, occ, dram; /* rates, 0..10000 */
	uint32_t pad;
	uint64_t acc_sm, acc_occ, acc_dram;
	uint64_t mem_used; /* bytes the instance (or the card) uses */
};

#define SIM_USAGE_CARD SIM_MAX_GI /* targets[SIM_USAGE_CARD] is the card's own */

struct sim_usage_card {
	uint32_t no_gpm; /* the card answers GpmQueryDeviceSupport with isSupportedDevice 0 */
	uint32_t pad;
	uint64_t energy_mj; /* DeviceGetTotalEnergyConsumption */
	struct sim_usage_target targets[SIM_MAX_GI + 1];
};

struct sim_health_file {
	char magic[8];
	uint64_t next; /* the next sequence number to claim */
	struct sim_health_card cards[SIM_HEALTH_CARDS];
	struct sim_health_event ring[SIM_HEALTH_RING];
	struct sim_usage_card usage[SIM_HEALTH_CARDS];
};

/* Map path and its wake word path (creating or adopting them); NULL with a message in err. */
struct sim_health_file *sim_health_open(const char *path, const char *wake_path, uint32_t **wake, char *err,
                                        size_t errlen);
void sim_health_close(struct sim_health_file *f, uint32_t *wake);

/* Raise an event on card ordinal (gi, ci: MIG_EVENT_NO_INSTANCE for the card) and wake every waiter. */
void sim_health_raise(struct sim_health_file *f, uint32_t *wake, unsigned ordinal, uint64_t type, uint64_t data,
                      unsigned gi, unsigned ci);

/* The sequence number the next event will carry: a new event set sees only what comes after. */
uint64_t sim_health_now(const struct sim_health_file *f);

/*
 * The event numbered *seq when it is complete: 1 (*out filled, *seq moved
 * past it), 0 when none is there yet, or -1 when it was overwritten (*seq
 * moved to the oldest event still in the ring).
 */
int sim_health_take(const struct sim_health_file *f, uint64_t *seq, struct sim_health_event *out);

/*
 * Sleep until an event after *seq may be there, or timeout_ms passes
 * (deadline in CLOCK_MONOTONIC nanoseconds): false on timeout or a signal.
 */
bool sim_health_sleep(struct sim_health_file *f, uint32_t *wake, uint64_t seq, int64_t deadline_ns);

int64_t sim_health_clock_ns(void);

#endif
