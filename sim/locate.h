/* SPDX-License-Identifier: MIT */
/*
 * Finding the simulated drivers and pointing them at a state directory.
 *
 * This is the only code that knows where the simulators are.  The product
 * reaches a simulator only when the user asked for a simulated node
 * (accelfs --sim, accel-smi --sim); otherwise it loads the real driver by
 * the real lookup and nothing here runs.  A simulator must never become the
 * data path by accident.
 *
 * The daemon's --sim is expected to do:
 *
 *     accel_sim_setup_env(state_dir, topology_or_NULL, err, errlen);
 *     for each family f:
 *         accel_sim_locate_lib(f, path, sizeof(path), err, errlen);
 *         accel_family_open_lib(f, path, &lib, err, errlen);
 *         accel_sim_dev_root(state_dir, f, dev_root, ...);   use instead of "/dev"
 *         accel_sim_proc_root(state_dir, f, proc_root, ...); use instead of "/proc"
 */
#ifndef ACCEL_SIM_LOCATE_H
#define ACCEL_SIM_LOCATE_H

#include <stddef.h>

#include "core/driver/family.h"

#define ACCEL_SIM_DEFAULT_STATE_DIR "/var/lib/accelfs"

/* "thead" | "nvidia": the family's directory below <state_dir>/sim and in the build tree. */
const char *accel_sim_vendor_dir(const struct accel_family *f);

/* The simulated library's path relative to a sim directory ("thead/lib64/libhgml.so", ...). */
const char *accel_sim_lib_relpath(const struct accel_family *f);

/*
 * Set ACCELFS_SIM_ROOT=<state_dir>/sim (creating it) and, when topology is
 * not NULL, ACCELFS_SIM_TOPOLOGY=<its absolute path> (it must exist; the
 * daemon may change directory before the first Init).  Without a topology,
 * ACCELFS_SIM_TOPOLOGY is unset so that the built-in node is used.
 * Returns 0 or -errno with a message.
 */
int accel_sim_setup_env(const char *state_dir, const char *topology, char *err, size_t errlen);

/*
 * A tool's --sim=STATE_DIR must name a directory that exists: a typo would
 * otherwise make a fresh simulated node that no daemon serves, and the tool
 * would report on it as if it were the daemon's.  Returns 0, or -ENOENT /
 * -ENOTDIR with a message saying what to do; `create_option` is the tool's
 * option that asks for a fresh directory instead (named in the message).
 */
int accel_sim_state_dir_check(const char *state_dir, const char *create_option, char *err, size_t errlen);

/*
 * Find f's simulated driver library, trying in order:
 *   $ACCELFS_SIM_LIBDIR/<relpath>
 *   <directory of /proc/self/exe>/../sim/<relpath>    (the build tree)
 *   <DESTDIR><pkglibdir>/sim/<relpath>                 (a staged install: the
 *        executable runs from <DESTDIR><bindir or sbindir>)
 *   <pkglibdir>/sim/<relpath>                         (installed)
 * Returns 0 with the path, or -ENOENT with the places tried in err.
 */
int accel_sim_locate_lib(const struct accel_family *f, char *path, size_t len, char *err, size_t errlen);

/*
 * The simulated barswap slot, a module the daemon loads with dlopen as it
 * loads the simulated drivers (sim/barswap/bs_sim_module.h), found in the
 * same places under this name.
 */
#define ACCEL_SIM_BARSWAP_RELPATH "barswap/libaccelsim-barswap.so"
int accel_sim_locate_barswap(char *path, size_t len, char *err, size_t errlen);

/*
 * The topology file an accelfs --sim=ARG means.  A path (ARG has a '/' or
 * ends in .json, or a file of that name exists) is taken as given and must
 * be readable.  A name (small, default) is an installed topology, found as
 * NAME.json in the same places as the libraries: $ACCELFS_SIM_TOPOLOGIES,
 * <exe>/../sim/topologies (the build tree), <DESTDIR><datadir>/accelfs/
 * topologies, <datadir>/accelfs/topologies.  Returns 0 with the path, or
 * -errno with a message naming the places tried.
 */
int accel_sim_find_topology(const char *arg, char *path, size_t len, char *err, size_t errlen);

/* <state_dir>/sim/<vendor>/dev and .../proc: the simulated node's /dev and /proc. */
int accel_sim_dev_root(const char *state_dir, const struct accel_family *f, char *buf, size_t len);
int accel_sim_proc_root(const char *state_dir, const struct accel_family *f, char *buf, size_t len);

#endif
