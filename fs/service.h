/* SPDX-License-Identifier: MIT */
/*
 * accelfs as a systemd service (systemd/accelfs.service, Type=notify):
 * readiness and stopping told to the service manager with libsystemd's
 * sd_notify.  Without NOTIFY_SOCKET (a plain start) every call is a no-op.
 */
#ifndef ACCELFS_SERVICE_H
#define ACCELFS_SERVICE_H

#include <stdbool.h>

/* Started by a service manager that waits for READY=1 (NOTIFY_SOCKET is set): stay in the foreground. */
bool fs_service_managed(void);
/*
 * The mount serves a complete tree (the first complete snapshot is
 * published and the mount is up): READY=1, with a status line naming it.
 */
void fs_service_ready(const char *mountpoint, bool simulated);
/* The session ended (umount, SIGTERM): STOPPING=1, so the manager does not take the exit for a crash. */
void fs_service_stopping(const char *mountpoint);

#endif
