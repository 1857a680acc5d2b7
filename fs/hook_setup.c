/* SPDX-License-Identifier: MIT */
#include "fs/hook_setup.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/state/cdi.h"

/* An absolute, executable program: what a runtime can run as a hook. */
static int usable(const char *path, char *out)
{
	if (!realpath(path, out))
		return -errno;
	return access(out, X_OK) ? -errno : 0;
}

int fs_hook_setup(const char *hook_option, const char *mountpoint, char *err, size_t errlen)
{
	char self[PATH_MAX], dir[PATH_MAX], beside[PATH_MAX + 32], build[PATH_MAX + 32], prog[PATH_MAX];
	ssize_t n;
	int ret;

	if (hook_option) {
		ret = usable(hook_option, prog);
		if (ret) {
			snprintf(err, errlen, "the OCI hook program %s (--hook) cannot be run: %s", hook_option,
			         strerror(-ret));
			return ret;
		}
		accel_cdi_configure(prog, mountpoint);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot tell where accelfs is (/proc/self/exe: %s): pass --hook=PATH",
		         strerror(errno));
		return ret;
	}
	self[n] = '\0';
	snprintf(dir, sizeof(dir), "%s", dirname(self));
	snprintf(beside, sizeof(beside), "%s/accelfs-hook", dir);
	snprintf(build, sizeof(build), "%s/../tools/accelfs-hook", dir);
	if (!usable(beside, prog) || !usable(build, prog)) {
		accel_cdi_configure(prog, mountpoint);
		return 0;
	}
	snprintf(err, errlen,
	         "the OCI hook program accelfs-hook is neither at %s nor at %s: without it a container given a job "
	         "by CDI is not recorded and the job could be removed from under it; install it beside accelfs or "
	         "pass --hook=PATH",
	         beside, build);
	return -ENOENT;
}
