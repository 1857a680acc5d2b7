/* SPDX-License-Identifier: MIT */
#include "fs/service.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "core/model/log.h"

bool fs_service_managed(void)
{
	const char *s = getenv("NOTIFY_SOCKET");

	return s && *s;
}

/* sd_notify answers > 0 when told, 0 when there is no manager to tell, < 0 (-errno) when telling failed. */
static void told(int ret, const char *what)
{
	if (ret < 0)
		log_warn("cannot tell the service manager %s (NOTIFY_SOCKET=%s): %s", what, getenv("NOTIFY_SOCKET"),
		         strerror(-ret));
}

void fs_service_ready(const char *mountpoint, bool simulated)
{
	if (!fs_service_managed())
		return;
	/* MAINPID too: harmless for Type=notify, and right if a unit forks us (NotifyAccess=all). */
	told(sd_notifyf(0, "READY=1\nSTATUS=Serving %s%s\nMAINPID=%lu", mountpoint,
	                simulated ? " (a simulated node)" : "", (unsigned long)getpid()),
	     "that the mount is ready");
}

void fs_service_stopping(const char *mountpoint)
{
	if (!fs_service_managed())
		return;
	told(sd_notifyf(0, "STOPPING=1\nSTATUS=Unmounting %s", mountpoint), "that it is stopping");
}
