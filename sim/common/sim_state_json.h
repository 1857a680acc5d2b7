/* SPDX-License-Identifier: MIT */
/*
 * The state files as JSON (format 2, docs/simulator.md "State layout"):
 *
 *   node.json          what is node-wide: the card count and the armed faults
 *   cards/<N>.hw.json  what card N is, fixed at power-on: identity, geometry,
 *                      profile tables (written once, read once per process)
 *   cards/<N>.json     what changes on card N: presence, mode, instances
 *
 * A change to one card writes that card's small file and nothing else, and
 * a process that must reread a card parses only it: no cost grows with the
 * number of cards.  Format 1 (one state.json holding the whole node) is
 * still read, to migrate it.  Readers are strict: every file names its
 * format and vendor, and unknown keys are errors with the key named.
 */
#ifndef ACCEL_SIM_STATE_JSON_H
#define ACCEL_SIM_STATE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/common/sim_model.h"

#define SIM_STATE_FORMAT 2

json_t *sim_json_node(const struct sim_node *n, const char *vendor);
int sim_json_read_node(json_t *root, const char *vendor, struct sim_node *n, char *err, size_t errlen);

/* What the card is (d's fixed fields and profile tables). */
json_t *sim_json_card_hw(const struct sim_device *d, const char *vendor);
/* Into d's fixed fields; d->gi_profiles and d->ci_profiles are allocated (sim_device_free). */
int sim_json_read_card_hw(json_t *root, const char *vendor, unsigned ordinal, struct sim_device *d, char *err,
                          size_t errlen);

/* What changes on the card, at this generation. */
json_t *sim_json_card(const struct sim_device *d, uint64_t generation, const char *vendor);
/* Into d's changing fields only (the fixed ones and the tables are left alone). */
int sim_json_read_card(json_t *root, const char *vendor, unsigned ordinal, struct sim_device *d, uint64_t *generation,
                       char *err, size_t errlen);

/* The "format" a state file says it has (0 when it names none). */
unsigned sim_json_format_of(json_t *root);

#endif
