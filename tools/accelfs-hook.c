/* SPDX-License-Identifier: MIT */
/*
 * accelfs-hook: the OCI hook the CDI specs of accelfs name (core/cdi.h).
 *
 *   accelfs-hook attach JOBDIR MIG-UUID    createRuntime: the job is given to this container
 *   accelfs-hook detach JOBDIR MIG-UUID    poststop: the container is gone
 *
 * The runtime passes the container's state on standard input (OCI runtime
 * spec, "State"): its id, and for attach the pid of its first process.  The
 * hook writes one line to JOBDIR/containers, and the daemon records it
 * (fs/jobctl.c): while a container holds a job, rmdir of the job answers
 * EBUSY.  MIG-UUID is the instance the spec was written for: a job removed
 * and made again under the same name is another instance, and the daemon
 * refuses to attach a container to it.
 *
 * A failed attach exits 1 with the reason on stderr, and the runtime does
 * not start the container (it shows the reason).  A detach whose job is
 * already gone has nothing to do and succeeds.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: accelfs-hook attach|detach JOBDIR MIG-UUID  (the OCI state on standard input)\n"
	                "an OCI hook for the CDI specs of accelfs: it records in JOBDIR/containers which containers "
	                "hold the job\n");
	return 2;
}

/* The last failure the daemon recorded for the job's profile directory: why it said no. */
static void print_reason(const char *jobdir)
{
	char path[PATH_MAX + 16], buf[600];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/../last_error", jobdir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		fprintf(stderr, "accelfs-hook: %s%s", buf, buf[n - 1] == '\n' ? "" : "\n");
	}
}

int main(int argc, char **argv)
{
	char path[PATH_MAX + 16], line[512];
	json_error_t jerr;
	json_t *state, *id, *pid;
	bool attach;
	int fd, len, ret = 0;
	ssize_t w;

	if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("accelfs-hook %s\n", ACCELFS_VERSION);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: accelfs-hook attach|detach JOBDIR MIG-UUID  (the OCI state on standard input)\n"
		       "       accelfs-hook --help | --version\n");
		return 0;
	}
	if (argc != 4 || (strcmp(argv[1], "attach") && strcmp(argv[1], "detach")))
		return usage();
	attach = !strcmp(argv[1], "attach");
	state = json_loadf(stdin, 0, &jerr);
	if (!state) {
		fprintf(stderr,
		        "accelfs-hook: the OCI state on standard input is not JSON (%s, line %d): run me as a "
		        "hook of the container runtime\n",
		        jerr.text, jerr.line);
		return 1;
	}
	id = json_object_get(state, "id");
	pid = json_object_get(state, "pid");
	if (!json_is_string(id) || (attach && (!json_is_integer(pid) || json_integer_value(pid) <= 0))) {
		fprintf(stderr, "accelfs-hook: the OCI state lacks the container's %s: is this hook run at %s?\n",
		        json_is_string(id) ? "pid" : "id", attach ? "createRuntime" : "poststop");
		json_decref(state);
		return 1;
	}
	if (attach)
		len = snprintf(line, sizeof(line), "attach %s %lld %s\n", json_string_value(id),
		               (long long)json_integer_value(pid), argv[3]);
	else
		len = snprintf(line, sizeof(line), "detach %s %s\n", json_string_value(id), argv[3]);
	if (len < 0 || (size_t)len >= sizeof(line)) {
		fprintf(stderr, "accelfs-hook: the container id is too long\n");
		json_decref(state);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/containers", argv[2]);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !attach)
		goto out; /* the job is gone: nothing holds it any more */
	if (fd < 0) {
		fprintf(stderr, "accelfs-hook: cannot %s container %.12s %s %s: %s%s\n", argv[1], json_string_value(id),
		        attach ? "to" : "from", argv[2], strerror(errno),
		        errno == ENOENT ? " (the job was removed: a container cannot be given it)" : "");
		ret = 1;
		goto out;
	}
	/* One write: the daemon takes the line whole and answers it with an errno. */
	w = write(fd, line, (size_t)len);
	if (w != len) {
		int err = w < 0 ? errno : EIO;
		fprintf(stderr, "accelfs-hook: cannot %s container %.12s %s %s: %s\n", argv[1], json_string_value(id),
		        attach ? "to" : "from", argv[2], strerror(err));
		print_reason(argv[2]);
		ret = 1;
	}
	close(fd);
out:
	json_decref(state);
	return ret;
}
