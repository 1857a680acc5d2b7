/* SPDX-License-Identifier: MIT */
/*
 * Where the OCI hook program is (tools/accelfs-hook.c): --hook=PATH, else
 * accelfs-hook beside the accelfs executable (an installation), else
 * ../tools/accelfs-hook from it (a build tree).  The CDI specs name it with
 * the mountpoint (core/state/cdi.h), so a runtime can record which containers a
 * job was given.  Without it a container could keep a job's device numbers
 * after rmdir: then no CDI spec is handed out (fs/main.c writes no node
 * spec, a job has no cdi.json), and a --hook that cannot run is refused.
 */
#ifndef ACCELFS_HOOK_SETUP_H
#define ACCELFS_HOOK_SETUP_H

#include <stddef.h>

/* Find the hook and configure the CDI specs: 0, or -errno with err saying what to do. */
int fs_hook_setup(const char *hook_option, const char *mountpoint, char *err, size_t errlen);

#endif
