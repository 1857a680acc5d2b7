/* SPDX-License-Identifier: MIT */
/*
 * udev, for what udev knows: which PCI function a card is and which kernel
 * driver is bound to it, what device numbers udev has for a node, and
 * events when a device appears, goes or changes driver.  What udev cannot
 * see (the MIG mode, instances carved by hand) the node's poller re-reads
 * from the drivers.
 */
#ifndef ACCEL_UDEV_WATCH_H
#define ACCEL_UDEV_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct accel_udev;

/*
 * Start watching.  on_event runs on the watcher's thread for every add,
 * remove, bind, unbind or change of a PCI function or a misc/character
 * device.  Returns NULL (and logs why) when udev is unusable here; callers
 * then rely on polling alone.
 */
struct accel_udev *accel_udev_start(void (*on_event)(void *ctx, const char *action, const char *syspath), void *ctx);
void accel_udev_stop(struct accel_udev *u);

/*
 * The kernel driver bound to the PCI function with this bus id (NVML's
 * "00000000:00:06.0" or sysfs's "0000:00:06.0") and its sysfs path.
 * Returns 0, or -ENOENT when udev does not know the function.
 */
int accel_udev_pci(struct accel_udev *u, const char *bus_id, char *driver, size_t dlen, char *syspath, size_t slen);

/* The device node udev knows for a character device number, or -ENOENT. */
int accel_udev_devnode(struct accel_udev *u, dev_t rdev, char *devnode, size_t len);

#endif
