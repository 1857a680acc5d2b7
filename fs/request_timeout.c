/* SPDX-License-Identifier: MIT */
#include "fs/request_timeout.h"

#include <stdio.h>

#include "core/model/log.h"
#include "fs/dies.h"

/* One of the sysctls: 0 when it is not there (a kernel before 6.14) or unreadable. */
static unsigned read_sysctl(const char *dir, const char *name)
{
	char path[256];
	unsigned v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%u", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

unsigned fs_request_timeout_s(const char *dir)
{
	unsigned def = read_sysctl(dir, "default_request_timeout");
	unsigned max = read_sysctl(dir, "max_request_timeout");

	/* As the kernel does for a daemon that names no bound: the default, capped by the maximum. */
	if (max && (!def || def > max))
		return max;
	return def;
}

unsigned fs_request_timeout_note(const char *mountpoint, bool has_dies)
{
	unsigned s = fs_request_timeout_s(FS_FUSE_SYSCTL_DIR);

	if (!s)
		return 0;
	if (has_dies)
		log_warn("the kernel aborts the FUSE connection of %s when a request waits more than %u s for its "
		         "answer (fs.fuse.default_request_timeout and fs.fuse.max_request_timeout, as they were when "
		         "it mounted): so an open of dies/<n>/vram queued for the slot, or a write to a lent die's "
		         "driver file waiting for the die, is answered ETIMEDOUT after %u ms (dies/slot's "
		         "wait_limit_ms) instead of waiting its turn, and a driver call that hangs that long ends the "
		         "mount for every caller; set both sysctls to 0 and restart accelfs to let them wait",
		         mountpoint, s, fs_dies_wait_limit_for(s));
	else
		log_notice("the kernel aborts the FUSE connection of %s when a request waits more than %u s for its "
		           "answer (fs.fuse.default_request_timeout and fs.fuse.max_request_timeout): a driver call "
		           "that hangs that long ends the mount for every caller",
		           mountpoint, s);
	return s;
}
