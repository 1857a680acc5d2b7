/* SPDX-License-Identifier: MIT */
/*
 * <root>/<vendor>/counters: a small file every process of one simulated
 * vendor maps (MAP_SHARED), so that counting a call costs one atomic add in
 * memory, never a write of state.json.  It holds
 *
 *   - the number of calls received per ABI function ("sim calls"), in
 *     slots that carry their function's name: two builds whose X-macro
 *     lists differ still count each function in its own slot;
 *   - the generation of state.json last written, so that a process can
 *     tell whether its cached copy is current without opening the file.
 *
 * The file has a fixed size (SIM_COUNTERS_SIZE) and is never shrunk, so a
 * mapping never reaches past its end.  Names are added, and the file made,
 * only under the state's flock; counts and the generation are 64-bit atomics.
 */
#ifndef ACCEL_SIM_COUNTERS_H
#define ACCEL_SIM_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/accelsim.h"
#include "sim/common/sim_calls.h"

#define SIM_COUNTERS_SIZE 8192

struct sim_counters_file;

/* One process's view: the mapping, and where each of its functions counts. */
struct sim_counters {
	struct sim_counters_file *map; /* NULL while not open */
	int slot[SIM_FN_COUNT];        /* index into the file's slots; -1: not counted (file full) */
};

/*
 * Map path (creating or adopting it), under the state's flock.  A file that
 * is not a counters file (wrong size, no magic) is started afresh.
 * Returns 0 or -errno with a message.
 */
int sim_counters_open(struct sim_counters *c, const char *path, char *err, size_t errlen);
void sim_counters_close(struct sim_counters *c);

/* One call of fn received (nothing when not open, or fn is SIM_FN_NONE). */
void sim_counters_hit(struct sim_counters *c, enum sim_fn fn);

/* Every slot of the file, in file order: *n in: room, out: how many there are. */
void sim_counters_list(const struct sim_counters *c, accelsim_call_count_t *out, unsigned *n);
/* Zero every count (the generation is kept). */
void sim_counters_reset(struct sim_counters *c);

/* The generation of state.json as last written by any process; 0 when unknown. */
uint64_t sim_counters_generation(const struct sim_counters *c);
void sim_counters_set_generation(struct sim_counters *c, uint64_t generation);

#endif
