/* SPDX-License-Identifier: MIT */
/*
 * A fresh simulated node per test: a temporary state directory, the
 * environment pointed at it exactly as accelfs --sim does
 * (sim/locate.h), and the simulated library opened through the
 * product's own seam (accel_family_open_lib -> core/driver/mig_lib.c).
 */
#ifndef ACCEL_TESTS_SIM_FIXTURE_H
#define ACCEL_TESTS_SIM_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "core/driver/family.h"
#include "core/driver/mig_lib.h"
#include "sim/accelsim.h"

struct sim_fixture {
	const struct accel_family *family;
	char state_dir[PATH_MAX];   /* the temporary --state-dir */
	char vendor_root[PATH_MAX]; /* <state_dir>/sim/<vendor> */
	char lib_path[PATH_MAX];
	struct mig_lib lib;
	bool open;
};

/* mkdtemp + env; topology is a file name under sim/topologies, an absolute path, or NULL. */
void fx_prepare(struct sim_fixture *fx, const struct accel_family *f, const char *topology);
/* Open (and Init) the library through accel_family_open_lib; asserts success. */
void fx_open(struct sim_fixture *fx);
/* Close it (Shutdown + dlclose), keeping the state directory. */
void fx_close(struct sim_fixture *fx);
/* Close and remove the state directory. */
void fx_destroy(struct sim_fixture *fx);

/* A control-extension function (<prefix>Sim...) of the open library. */
void *fx_sym(struct sim_fixture *fx, const char *suffix);
#define FX_CONTROL(fx, name) ((accelsim_fn_##name##_t)fx_sym(fx, #name))

/* A path under the vendor root: fx_path(fx, buf, "dev/alixpu_ppu3"). */
const char *fx_path(struct sim_fixture *fx, char *buf, const char *rel);
/* The whole of a file under the vendor root; "" when absent.  Static buffer. */
const char *fx_read(struct sim_fixture *fx, const char *rel);
/* Does a file exist under the vendor root? */
bool fx_exists(struct sim_fixture *fx, const char *rel);
/* DeviceFileMinor of a capability record under the vendor's proc; -1 if absent. */
long fx_record_minor(struct sim_fixture *fx, const char *rel);
/* The rdev major/minor of a node under the vendor root; -1 if not a char device. */
long fx_node_minor(struct sim_fixture *fx, const char *rel);
long fx_node_major(struct sim_fixture *fx, const char *rel);

/* The card at index (asserts success). */
mig_device_t fx_device(struct sim_fixture *fx, unsigned index);

/*
 * A child process that holds O_PATH descriptors on the given nodes (paths
 * under the vendor root, NULL-terminated) until fx_release kills it.  Its
 * comm is "simholder".  Returns its pid.
 */
pid_t fx_hold(struct sim_fixture *fx, const char *const *rels);
/*
 * A child process holding bytes [start, start+len) of the node's lock file
 * (len 0: to its end; byte 0 is the node's, byte 1+n card n's) until
 * *release_fd is closed; returns once the lock is held.
 */
/* cmocka set-up and tear-down: a fresh simulated node of one family, opened (state is the fixture). */
int fx_setup_thead(void **state);
int fx_setup_nvidia(void **state);
int fx_teardown(void **state);

/* Create a GPU instance at a placement, or a compute instance, asserting what the driver answers. */
mig_gpu_instance_t fx_create_gi(struct sim_fixture *fx, mig_device_t dev, unsigned profile, unsigned start,
                                unsigned size, mig_return_t expect);
mig_compute_instance_t fx_create_ci(struct sim_fixture *fx, mig_gpu_instance_t gi, unsigned profile,
                                    mig_return_t expect);
/* A GPU instance's id, as the driver reports it. */
unsigned fx_gi_id(struct sim_fixture *fx, mig_gpu_instance_t gi);

pid_t fx_hold_lock(struct sim_fixture *fx, off_t start, off_t len, int *release_fd);
void fx_release(pid_t pid);

/* The topology directory (sim/topologies of the source tree). */
const char *fx_topology_dir(void);

#endif
