/* SPDX-License-Identifier: MIT */
/*
 * accelfs-hook: the OCI hook the CDI specs of accelfs name (core/state/cdi.h).
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
 * Everything it is given is checked before anything is written, by the
 * rules the daemon checks again (core/model/container_id.h): the state must be a
 * JSON object whose id is a container id (runc's rule: no newline, no
 * space, nothing that could become a second command or another word), for
 * attach with the pid of a process, and MIG-UUID must be one.  The line it
 * writes is then exactly one command for exactly that container.
 *
 * A job whose health is `failed` (JOBDIR/health: the driver reported a
 * fault the partition cannot be trusted after) is not given to a new
 * container: attach exits 1 with the health file's first line, before
 * writing anything (the daemon refuses such an attach too, with EIO).
 *
 * A failed attach exits 1 with the reason on stderr, and the runtime does
 * not start the container (it shows the reason).  A detach whose job is
 * already gone has nothing to do and succeeds; a detach it cannot read
 * (an empty or invalid id) fails like an attach: the runtime logs it, and
 * the daemon still clears the attachment once the process is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/model/container_id.h"

/* statfs(2)'s f_type of a FUSE mount (linux/magic.h has no name for it). */
#define FUSE_SUPER_MAGIC 0x65735546

static int usage(void)
{
	fprintf(stderr, "usage: accelfs-hook attach|detach JOBDIR MIG-UUID  (the OCI state on standard input)\n"
	                "an OCI hook for the CDI specs of accelfs: it records in JOBDIR/containers which containers "
	                "hold the job\n");
	return 2;
}

/*
 * Why JOBDIR/containers cannot be opened, in words: the job gone from a
 * served tree is one thing; a tree that nobody serves (the daemon stopped:
 * the mountpoint is a plain directory, or a dead mount) is another, and the
 * job may well exist and come back with the daemon.  The profile directory
 * above JOBDIR tells them apart: on a FUSE mount the daemon answers for it.
 */
static const char *why_not_opened(const char *jobdir, int err)
{
	char parent[PATH_MAX];
	struct statfs sf;
	char *slash;

	if (err == ENOTCONN)
		return " (the accelfs daemon that served it is gone: start it again; the job is kept and comes back "
		       "with it)";
	if (err != ENOENT)
		return "";
	snprintf(parent, sizeof(parent), "%s", jobdir);
	while ((slash = strrchr(parent, '/')) && slash[1] == '\0' && slash != parent)
		*slash = '\0'; /* JOBDIR/ as JOBDIR */
	slash = strrchr(parent, '/');
	if (slash)
		*(slash == parent ? slash + 1 : slash) = '\0';
	else
		snprintf(parent, sizeof(parent), ".");
	if (!statfs(parent, &sf) && sf.f_type == FUSE_SUPER_MAGIC)
		return " (the job was removed: a container cannot be given it)";
	return " (no accelfs serves that directory: is the daemon running? A job outlives the daemon and is "
	       "served again when it starts)";
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

/* 1 with the reason on stderr when JOBDIR/health says failed; 0 otherwise (unreadable: the daemon decides). */
static int refuse_failed(const char *jobdir)
{
	char path[PATH_MAX + 16], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/health", jobdir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (strncmp(buf, "failed:", 7))
		return 0;
	buf[strcspn(buf, "\n")] = '\0';
	fprintf(stderr,
	        "accelfs-hook: the job %s is %s; a failed partition is given to no new container: do what its "
	        "health file's recovery line says, or remove the job and make another\n",
	        jobdir, buf);
	return 1;
}

/*
 * What the OCI state must say: an object, its id a container id, and for
 * attach its pid a process id.  0, or 1 with the reason on stderr.
 */
static int check_state(json_t *state, bool attach, const char **cid, long long *pid)
{
	const char *when = attach ? "createRuntime" : "poststop";
	json_t *id = json_object_get(state, "id"), *p = json_object_get(state, "pid");
	char quoted[48];
	size_t len;

	if (!json_is_object(state)) {
		fprintf(stderr,
		        "accelfs-hook: the OCI state on standard input is not a JSON object: is this hook run at "
		        "%s?\n",
		        when);
		return 1;
	}
	if (!json_is_string(id)) {
		fprintf(stderr,
		        "accelfs-hook: the OCI state lacks the container's id (a string): is this hook run at %s?\n",
		        when);
		return 1;
	}
	*cid = json_string_value(id);
	len = json_string_length(id);
	if (!len) {
		fprintf(stderr, "accelfs-hook: the container id is empty: the runtime names every container it runs\n");
		return 1;
	}
	if (len > ACCEL_CONTAINER_ID_MAX) {
		fprintf(stderr, "accelfs-hook: the container id '%s' is longer than %d bytes: not a container id\n",
		        accel_word_quote(*cid, len, quoted, sizeof(quoted)), ACCEL_CONTAINER_ID_MAX);
		return 1;
	}
	if (!accel_container_id_ok(*cid, len)) {
		fprintf(stderr, "accelfs-hook: '%s' is not a container id (" ACCEL_CONTAINER_ID_RULE ")\n",
		        accel_word_quote(*cid, len, quoted, sizeof(quoted)));
		return 1;
	}
	if (!attach)
		return 0; /* a stopped container's state may carry no pid, or 0: detach needs none */
	if (!json_is_integer(p)) {
		fprintf(stderr,
		        "accelfs-hook: the OCI state lacks the container's pid (an integer): is this hook run at "
		        "%s?\n",
		        when);
		return 1;
	}
	*pid = (long long)json_integer_value(p);
	if (*pid <= 0 || *pid > INT_MAX) {
		fprintf(stderr,
		        "accelfs-hook: pid %lld is not a process id: the OCI state names the container's first "
		        "process\n",
		        *pid);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX + 16], line[512], quoted[48];
	const char *cid;
	long long pid = 0;
	json_error_t jerr;
	json_t *state;
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
	if (!accel_mig_uuid_ok(argv[3], strlen(argv[3]))) {
		fprintf(stderr,
		        "accelfs-hook: '%s' is not a MIG UUID: run me with the arguments the CDI spec of accelfs "
		        "names\n",
		        accel_word_quote(argv[3], strlen(argv[3]), quoted, sizeof(quoted)));
		return 1;
	}
	state = json_loadf(stdin, JSON_DECODE_ANY, &jerr);
	if (!state) {
		fprintf(stderr,
		        "accelfs-hook: the OCI state on standard input is not JSON (%s, line %d): run me as a "
		        "hook of the container runtime\n",
		        jerr.text, jerr.line);
		return 1;
	}
	ret = check_state(state, attach, &cid, &pid);
	if (ret) {
		json_decref(state);
		return ret;
	}
	if (attach && refuse_failed(argv[2])) {
		json_decref(state);
		return 1;
	}
	if (attach)
		len = snprintf(line, sizeof(line), "attach %s %lld %s\n", cid, pid, argv[3]);
	else
		len = snprintf(line, sizeof(line), "detach %s %s\n", cid, argv[3]);
	if (len < 0 || (size_t)len >= sizeof(line)) {
		fprintf(stderr, "accelfs-hook: the command for container %.12s does not fit in one line\n", cid);
		json_decref(state);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/containers", argv[2]);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !attach)
		goto out; /* the job is gone: nothing holds it any more */
	if (fd < 0) {
		int err = errno;
		fprintf(stderr, "accelfs-hook: cannot %s container %.12s %s %s: %s%s\n", argv[1], cid,
		        attach ? "to" : "from", argv[2], strerror(err), why_not_opened(argv[2], err));
		ret = 1;
		goto out;
	}
	/* One write: the daemon takes the line whole and answers it with an errno. */
	w = write(fd, line, (size_t)len);
	if (w != len) {
		int err = w < 0 ? errno : EIO;
		fprintf(stderr, "accelfs-hook: cannot %s container %.12s %s %s: %s\n", argv[1], cid,
		        attach ? "to" : "from", argv[2], strerror(err));
		print_reason(argv[2]);
		ret = 1;
	}
	close(fd);
out:
	json_decref(state);
	return ret;
}
