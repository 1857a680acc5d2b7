/* SPDX-License-Identifier: MIT */
/*
 * One simulated node for a whole test program (core's node over both
 * simulated drivers, started as accelfs --sim starts it), with what the
 * tests need to stage faults and check the answers against the driver.
 */
#ifndef ACCEL_TESTS_NODE_FIXTURE_H
#define ACCEL_TESTS_NODE_FIXTURE_H

#include <limits.h>
#include <stdbool.h>

#include "core/driver/family.h"
#include "core/engine/node.h"
#include "sim/accelsim.h"

struct env {
	char state[PATH_MAX];
	char libs[ACCEL_MAX_FAMILIES][PATH_MAX];
	char dev[ACCEL_MAX_FAMILIES][PATH_MAX];
	char proc[ACCEL_MAX_FAMILIES][PATH_MAX];
	struct accel_node_options opt;
	struct accel_node *node;
};

/* The two families as the tests use them: a card and a profile with two placements. */
struct fam_case {
	const struct accel_family *family;
	const char *device;
	const char *profile;
};

extern const struct fam_case thead, nvidia;

/* cmocka group set-up and tear-down: start and stop the node. */
int node_group_setup(void **state);
int node_group_teardown(void **state);
/* Each test starts on an idle node (start) and leaves it so (stop checks both families). */
void start(struct env *e);
void stop(struct env *e);

/* Stop the node and start it again on its state directory with e->opt, as a daemon restarts; the fixture follows. */
void restart(struct env *e);

/* Arm a fault in a family's simulator; disarm all, saying whether any fired. */
void arm(struct env *e, const struct accel_family *f, const char *fn, mig_return_t r, unsigned skip, unsigned times);
bool disarm(struct env *e, const struct accel_family *f);
/* A control-extension function of a family's simulator. */
void *control(struct env *e, const struct accel_family *f, const char *suffix);
/* Is there a record file for job on any card? */
bool record_exists(struct env *e, const char *job);
/* After one poller pass over c's card: every invariant of the engine against the driver. */
void check_invariants(struct env *e, const struct fam_case *c);
const struct accel_job *job_in(const struct accel_snapshot *s, const char *device, const char *job);
/* Driver calls since the last reset, all functions together (printed when print). */
unsigned long long calls(struct env *e, const struct accel_family *f, bool print);
void reset_calls(struct env *e, const struct accel_family *f);

#endif
