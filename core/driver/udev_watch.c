/* SPDX-License-Identifier: MIT */
#include "core/driver/udev_watch.h"

#include <errno.h>
#include <libudev.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/model/log.h"

struct accel_udev {
	struct udev *udev;
	struct udev_monitor *mon;
	pthread_mutex_t lock; /* libudev contexts are not thread-safe */
	pthread_t thread;
	bool thread_started;
	int stop_pipe[2];
	void (*on_event)(void *ctx, const char *action, const char *syspath);
	void *ctx;
};

static void *watch_main(void *arg)
{
	struct accel_udev *u = arg;
	struct pollfd fds[2] = {
		{ .fd = udev_monitor_get_fd(u->mon), .events = POLLIN },
		{ .fd = u->stop_pipe[0], .events = POLLIN },
	};

	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_warn("udev watch stopped: %s; relying on polling", strerror(errno));
			return NULL;
		}
		if (fds[1].revents)
			return NULL;
		if (!(fds[0].revents & POLLIN))
			continue;
		pthread_mutex_lock(&u->lock);
		struct udev_device *d = udev_monitor_receive_device(u->mon);
		char action[32] = "", syspath[512] = "";
		if (d) {
			snprintf(action, sizeof(action), "%s",
			         udev_device_get_action(d) ? udev_device_get_action(d) : "");
			snprintf(syspath, sizeof(syspath), "%s", udev_device_get_syspath(d));
			udev_device_unref(d);
		}
		pthread_mutex_unlock(&u->lock);
		if (d) {
			log_debug("udev: %s %s", action, syspath);
			u->on_event(u->ctx, action, syspath);
		}
	}
}

static struct udev_monitor *open_monitor(struct udev *udev)
{
	/* Events as udevd has processed them; the raw kernel stream when there is no udevd. */
	static const char *const sources[] = { "udev", "kernel" };

	for (size_t i = 0; i < 2; i++) {
		struct udev_monitor *m = udev_monitor_new_from_netlink(udev, sources[i]);
		if (!m)
			continue;
		if (udev_monitor_filter_add_match_subsystem_devtype(m, "pci", NULL) ||
		    udev_monitor_filter_add_match_subsystem_devtype(m, "misc", NULL) ||
		    udev_monitor_enable_receiving(m)) {
			udev_monitor_unref(m);
			continue;
		}
		return m;
	}
	return NULL;
}

struct accel_udev *accel_udev_start(void (*on_event)(void *ctx, const char *action, const char *syspath), void *ctx)
{
	struct accel_udev *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->stop_pipe[0] = u->stop_pipe[1] = -1;
	pthread_mutex_init(&u->lock, NULL);
	u->on_event = on_event;
	u->ctx = ctx;
	u->udev = udev_new();
	if (!u->udev) {
		log_warn("udev unavailable; device changes are noticed by polling only");
		goto fail;
	}
	u->mon = open_monitor(u->udev);
	if (!u->mon) {
		log_info("no udev event source here; device changes are noticed by polling only");
		return u; /* lookups still work */
	}
	if (pipe2(u->stop_pipe, O_CLOEXEC) || pthread_create(&u->thread, NULL, watch_main, u)) {
		log_warn("cannot start the udev watcher; device changes are noticed by polling only");
		udev_monitor_unref(u->mon);
		u->mon = NULL;
		return u;
	}
	pthread_setname_np(u->thread, "udev");
	u->thread_started = true;
	return u;
fail:
	accel_udev_stop(u);
	return NULL;
}

void accel_udev_stop(struct accel_udev *u)
{
	if (!u)
		return;
	if (u->thread_started) {
		char b = 0;
		if (write(u->stop_pipe[1], &b, 1) != 1)
			log_warn("cannot stop the udev watcher cleanly");
		pthread_join(u->thread, NULL);
	}
	if (u->stop_pipe[0] >= 0)
		close(u->stop_pipe[0]);
	if (u->stop_pipe[1] >= 0)
		close(u->stop_pipe[1]);
	if (u->mon)
		udev_monitor_unref(u->mon);
	if (u->udev)
		udev_unref(u->udev);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* NVML writes an 8-digit domain ("00000000:00:06.0"); sysfs uses 4 ("0000:00:06.0"). */
static void sysfs_bus_id(const char *bus_id, char *out, size_t len)
{
	const char *colon = strchr(bus_id, ':');
	size_t domain = colon ? (size_t)(colon - bus_id) : 0;

	if (domain > 4)
		snprintf(out, len, "%s", bus_id + (domain - 4));
	else
		snprintf(out, len, "%s", bus_id);
	for (char *p = out; *p; p++)
		if (*p >= 'A' && *p <= 'F')
			*p = (char)(*p - 'A' + 'a');
}

int accel_udev_pci(struct accel_udev *u, const char *bus_id, char *driver, size_t dlen, char *syspath, size_t slen)
{
	char name[64];
	struct udev_device *d;

	if (!u || !bus_id[0])
		return -ENOENT;
	sysfs_bus_id(bus_id, name, sizeof(name));
	pthread_mutex_lock(&u->lock);
	d = udev_device_new_from_subsystem_sysname(u->udev, "pci", name);
	if (d) {
		const char *drv = udev_device_get_driver(d);
		snprintf(driver, dlen, "%s", drv ? drv : "none");
		snprintf(syspath, slen, "%s", udev_device_get_syspath(d));
		udev_device_unref(d);
	}
	pthread_mutex_unlock(&u->lock);
	return d ? 0 : -ENOENT;
}

int accel_udev_devnode(struct accel_udev *u, dev_t rdev, char *devnode, size_t len)
{
	struct udev_device *d;
	int ret = -ENOENT;

	if (!u)
		return -ENOENT;
	pthread_mutex_lock(&u->lock);
	d = udev_device_new_from_devnum(u->udev, 'c', rdev);
	if (d) {
		const char *node = udev_device_get_devnode(d);
		if (node) {
			snprintf(devnode, len, "%s", node);
			ret = 0;
		}
		udev_device_unref(d);
	}
	pthread_mutex_unlock(&u->lock);
	return ret;
}
