/* SPDX-License-Identifier: MIT */
/*
 * <root>/<vendor>/counters: a small file every process of one simulated
 * vendor maps (MAP_SHARED), so that counting a call costs one atomic add in
 * memory, never a write of the state, and so that a process can tell
 * whether its cached copy of a card is current without opening any file.
 * It holds
 *
 *   - the number of calls received per ABI function ("sim calls"), in
 *     slots that carry their function's name: two builds whose X-macro
 *     lists differ still count each function in its own slot;
 *   - the generation of node.json last written, and the set of calls an
 *     armed fault matches (sim_faults_mask): a call outside it never looks
 *     at the node;
 *   - one generation per card, the last written to cards/<N>.json, each in
 *     a cache line of its own: writers on two cards never share a line.
 *
 * The file has a fixed size (SIM_COUNTERS_SIZE) and is never shrunk, so a
 * mapping never reaches past its end.  Names are added, and the file made,
 * only under the node's lock; a card's generation is stored only under its
 * card's lock, the node's generation and fault mask under the node's;
 * every value is a 64-bit atomic.
 */
#ifndef ACCEL_SIM_COUNTERS_H
#define ACCEL_SIM_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/accelsim.h"
#include "sim/common/sim_calls.h"
#include "sim/common/sim_model.h"

#define SIM_COUNTERS_SIZE 16384

struct sim_counters_file;

/* One process's view: the mapping, and where each of its functions counts. */
struct sim_counters {
	struct sim_counters_file *map; /* NULL while not open */
	int slot[SIM_FN_COUNT];        /* index into the file's slots; -1: not counted (file full) */
};

/*
 * Map path (creating or adopting it), under the node's lock.  A file that
 * is not a counters file (wrong size, no magic) is started afresh.
 * Returns 0 or -errno with a message.
 */
int sim_counters_open(struct sim_counters *c, const char *path, char *err, size_t errlen);
void sim_counters_close(struct sim_counters *c);

/* One call of fn received (nothing when not open, or fn is SIM_FN_NONE). */
void sim_counters_hit(struct sim_counters *c, enum sim_fn fn);

/* Every slot of the file, in file order: *n in: room, out: how many there are. */
void sim_counters_list(const struct sim_counters *c, accelsim_call_count_t *out, unsigned *n);
/* Zero every count (the generations are kept). */
void sim_counters_reset(struct sim_counters *c);

/* The generation of node.json as last written by any process; 0 when unknown. */
uint64_t sim_counters_node_generation(const struct sim_counters *c);
void sim_counters_set_node_generation(struct sim_counters *c, uint64_t generation);

/* The calls an armed fault matches (sim_fn_bit); 0: no call needs to look at the faults. */
uint64_t sim_counters_fault_mask(const struct sim_counters *c);
void sim_counters_set_fault_mask(struct sim_counters *c, uint64_t mask);

/* The generation of cards/<ordinal>.json as last written; 0 when unknown. */
uint64_t sim_counters_card_generation(const struct sim_counters *c, unsigned ordinal);
void sim_counters_set_card_generation(struct sim_counters *c, unsigned ordinal, uint64_t generation);

#endif
