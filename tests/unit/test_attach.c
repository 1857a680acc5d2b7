/* SPDX-License-Identifier: MIT */
/*
 * Attachments (core/attach.c): which containers hold a job, against a fake
 * /proc whose stat files the test writes, so that a process's death and a
 * reused pid are both under the test's control.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/attach.h"
#include "core/fileio.h"

#define ID_A "3f2a9c1e0b4d5e6f77aa"
#define ID_B "77aa00112233445566bb"

struct fx {
	char dir[64];
	char proc[96];
	struct accel_attach *a;
	pid_t children[4]; /* real processes a test made (child()): teardown ends those still running */
	size_t n_children;
};

/* Make /proc/<pid>/stat say the process runs (state R or Z) since start. */
static void proc_set(struct fx *f, pid_t pid, char state, unsigned long long start)
{
	char path[160], text[256];

	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/stat", f->proc, (int)pid);
	/* A command with a space and a parenthesis: the fields start after the last ')'. */
	snprintf(text, sizeof(text), "%d (sle)ep x) %c 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 %llu 1000 10\n",
	         (int)pid, state, start);
	assert_int_equal(accel_atomic_write(path, text, strlen(text), 0644), 0);
}

static void proc_gone(struct fx *f, pid_t pid)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%d/stat", f->proc, (int)pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)pid);
	rmdir(path);
}

static struct accel_attach *reopen(struct fx *f)
{
	char err[512] = "";

	accel_attach_close(f->a);
	f->a = accel_attach_open(f->dir, f->proc, err, sizeof(err));
	assert_non_null(f->a);
	return f->a;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_attach.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->proc, sizeof(f->proc), "%s/proc", f->dir);
	mkdir(f->proc, 0755);
	reopen(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	accel_attach_close(f->a);
	for (size_t i = 0; i < f->n_children; i++)
		if (f->children[i] > 0 && kill(f->children[i], SIGKILL) == 0)
			waitpid(f->children[i], NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static size_t count(struct fx *f, const char *job, const char *uuid)
{
	struct accel_attachment *c;
	size_t n;

	assert_int_equal(accel_attach_list(f->a, job, uuid, &c, &n), 0);
	free(c);
	return n;
}

static void attach_list_detach(void **state)
{
	struct fx *f = *state;
	struct accel_attachment *c;
	char why[512];
	bool due = true;
	size_t n;

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	/* the same container again (its hook ran twice, or it restarted): one attachment */
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_list(f->a, "job1", "MIG-a", &c, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].id, ID_A);
	assert_int_equal(c[0].pid, 100);
	assert_int_equal(c[0].start, 5000);
	assert_true(c[0].since > 0);
	free(c);
	assert_int_equal(count(f, "job2", NULL), 0);
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-a", ID_A, &due), 0);
	assert_false(due);
	assert_int_equal(count(f, "job1", NULL), 0);
	/* a poststop hook that runs again, or for a container never attached */
	assert_int_equal(accel_attach_remove(f->a, "job1", NULL, ID_A, &due), 0);
}

static void refusals(void **state)
{
	struct fx *f = *state;
	char why[512] = "";

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", "bad id", 100, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not a container id"));
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 101, why, sizeof(why)), -ESRCH);
	assert_non_null(strstr(why, "101 does not exist"));
	proc_set(f, 102, 'Z', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 102, why, sizeof(why)), -ESRCH);
	assert_int_equal(count(f, "job1", NULL), 0);
	assert_true(accel_container_id_valid("a"));
	assert_true(accel_container_id_valid("ctr_1.2+3-x"));
	assert_false(accel_container_id_valid(""));
	assert_false(accel_container_id_valid("a/b"));
}

static void rmdir_guard(void **state)
{
	struct fx *f = *state;
	char why[512] = "";
	bool due;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_B, 200, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), -EBUSY);
	/* the containers by the short id podman shows, with their pids, and what to do */
	assert_non_null(
		strstr(why, "job1 is attached to 2 containers: 3f2a9c1e0b4d (pid 100), 77aa00112233 (pid 200)"));
	assert_non_null(strstr(why, "stop them first"));
	assert_int_equal(accel_attach_remove(f->a, "job1", NULL, ID_A, &due), 0);
	proc_gone(f, 200); /* the other one exited without its poststop hook */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), 0);
	/* while the removal runs nothing attaches */
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "being removed"));
	/* a removal that failed leaves the job attachable */
	accel_attach_rmdir_end(f->a, "job1", "MIG-a", false);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_remove(f->a, "job1", NULL, ID_A, &due), 0);
	/* a removal that succeeded forgets the job */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), 0);
	accel_attach_rmdir_end(f->a, "job1", "MIG-a", true);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", NULL), ACCEL_RECLAIM_MANUAL);
}

/* Every job exists. */
static bool yes(void *ctx, const char *job, const char *uuid)
{
	(void)ctx;
	(void)job;
	(void)uuid;
	return true;
}

static void dead_and_reused_pids(void **state)
{
	struct fx *f = *state;
	struct accel_sweep_event *ev;
	char why[512];
	size_t n;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job2", "MIG-b", ID_B, 200, why, sizeof(why)), 0);
	/* pid 100 now belongs to another process: the container is gone */
	proc_set(f, 100, 'S', 9999);
	assert_int_equal(count(f, "job1", NULL), 0);
	/* pid 200 exited: a sweep clears it and says so */
	proc_gone(f, 200);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	proc_gone(f, 100);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ev[0].job, "job1");
	assert_string_equal(ev[0].gone.id, ID_A);
	assert_false(ev[0].due);
	assert_string_equal(ev[1].job, "job2");
	assert_int_equal(ev[1].gone.pid, 200);
	free(ev);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	assert_int_equal(n, 0);
	free(ev);
}

static char *slurp(const char *path, struct stat *st)
{
	FILE *f = fopen(path, "r");
	char *text = calloc(1, 65536);

	assert_non_null(f);
	assert_non_null(text);
	assert_int_equal(fstat(fileno(f), st), 0);
	assert_true(fread(text, 1, 65535, f) > 0);
	fclose(f);
	return text;
}

/* A --read-only daemon's registry: it shows what is true and never writes its file. */
static void read_only_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct accel_sweep_event *ev;
	char path[128], why[512] = "", *before, *after;
	struct stat st0, st1;
	bool due;
	size_t n;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_B, 200, why, sizeof(why)), 0);
	snprintf(path, sizeof(path), "%s/attachments.json", f->dir);
	before = slurp(path, &st0);
	accel_attach_set_read_only(f->a);
	/* a container gone: shown so, kept in the file */
	proc_gone(f, 200);
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	free(ev);
	/* what must be recorded is refused, and not taken in memory either */
	assert_int_equal(accel_attach_add(f->a, "job2", "MIG-b", ID_B, 100, why, sizeof(why)), -EROFS);
	assert_non_null(strstr(why, "cannot record the attachment"));
	assert_int_equal(count(f, "job2", "MIG-b"), 0);
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), -EROFS);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_MANUAL);
	after = slurp(path, &st1);
	assert_string_equal(after, before);
	assert_true(st1.st_ino == st0.st_ino && st1.st_mtim.tv_sec == st0.st_mtim.tv_sec &&
	            st1.st_mtim.tv_nsec == st0.st_mtim.tv_nsec);
	assert_non_null(strstr(after, ID_B));
	free(before);
	free(after);
}

/* Only job1 exists (ctx: its uuid). */
static bool only_job1(void *ctx, const char *job, const char *uuid)
{
	return !strcmp(job, "job1") && (!uuid[0] || !strcmp(uuid, ctx));
}

static void reclaim_when_detached(void **state)
{
	struct fx *f = *state;
	struct accel_sweep_event *ev;
	char why[512];
	bool due = false;
	size_t n;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_MANUAL);
	/* never given to a container: nothing is due, whatever the policy */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_false(due);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_WHEN_DETACHED);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_B, 200, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-a", ID_A, &due), 0);
	assert_false(due); /* one left */
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-a", ID_B, &due), 0);
	assert_true(due); /* the last one went */
	/* a sweep says so too, every pass, until the job is gone */
	assert_int_equal(accel_attach_sweep(f->a, only_job1, "MIG-a", &ev, &n), 0);
	assert_int_equal(n, 1);
	assert_true(ev[0].due);
	assert_string_equal(ev[0].gone.id, "");
	assert_string_equal(ev[0].uuid, "MIG-a"); /* which instance is due, not only which name */
	free(ev);
	/* back to manual: nothing due; when-detached again with none attached: due at once */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_MANUAL, &due), 0);
	assert_false(due);
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_true(due);
	/* the policy is kept across a restart */
	reopen(f);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_WHEN_DETACHED);
	/* a job that no longer exists is forgotten by a sweep */
	assert_int_equal(accel_attach_sweep(f->a, only_job1, "MIG-other", &ev, &n), 0);
	free(ev);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", NULL), ACCEL_RECLAIM_MANUAL);
}

static void instances_do_not_mix(void **state)
{
	struct fx *f = *state;
	char why[512];
	bool due;

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-old", ID_A, 100, why, sizeof(why)), 0);
	/* a later job1 is another instance: the old one's containers are not its own */
	assert_int_equal(count(f, "job1", "MIG-new"), 0);
	assert_int_equal(count(f, "job1", "MIG-old"), 1);
	/* and while one of them lives, the name cannot be taken over */
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-new", ID_B, 100, why, sizeof(why)), -ESTALE);
	assert_non_null(strstr(why, "MIG-old"));
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-old", ID_A, &due), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-new", ID_B, 100, why, sizeof(why)), 0);
	assert_int_equal(count(f, "job1", "MIG-new"), 1);
}

static void kept_across_restart_and_fails_closed(void **state)
{
	struct fx *f = *state;
	char why[512], path[160], err[512] = "";

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	reopen(f);
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), -EBUSY);
	/* an unreadable record refuses to open, naming the file and what to do */
	accel_attach_close(f->a);
	f->a = NULL;
	snprintf(path, sizeof(path), "%s/attachments.json", f->dir);
	assert_int_equal(accel_atomic_write(path, "{\"job1\": [", 10, 0644), 0);
	assert_null(accel_attach_open(f->dir, f->proc, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "unreadable"));
	assert_int_equal(accel_atomic_write(path, "{\"job1\": {\"uuid\": 3}}", 21, 0644), 0);
	assert_null(accel_attach_open(f->dir, f->proc, err, sizeof(err)));
	assert_non_null(strstr(err, "not an attachment record"));
	unlink(path);
	reopen(f);
}

static void init_and_the_daemon_are_not_containers(void **state)
{
	struct fx *f = *state;
	char why[512] = "";

	proc_set(f, 1, 'S', 1);
	proc_set(f, getpid(), 'S', 2);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 1, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "pid 1 is init, which never exits"));
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, getpid(), why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "is accelfs itself"));
	assert_non_null(strstr(why, "the runtime passes its container's first process"));
	assert_int_equal(count(f, "job1", NULL), 0);
}

static void removing_one_instance_leaves_another_alone(void **state)
{
	struct fx *f = *state;
	char why[512] = "";
	bool due;

	proc_set(f, 100, 'S', 5000);
	/* job1 was removed and made again: what the registry holds is the new one's */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-new", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-new", ID_A, 100, why, sizeof(why)), 0);
	/* a removal of the old one, by a caller that read its uuid earlier, is refused by the new one's container */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-old", why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "job1 is attached to 1 container"));
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-new", ID_A, &due), 0);
	assert_true(due);
	/* and without one, it neither resets nor forgets the new one's policy, whatever it answers */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-old", why, sizeof(why)), 0);
	accel_attach_rmdir_end(f->a, "job1", "MIG-old", true);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-new"), ACCEL_RECLAIM_WHEN_DETACHED);
	reopen(f);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-new"), ACCEL_RECLAIM_WHEN_DETACHED);
	/* the new one's own removal forgets it */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-new", why, sizeof(why)), 0);
	accel_attach_rmdir_end(f->a, "job1", "MIG-new", true);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", NULL), ACCEL_RECLAIM_MANUAL);
}

/* A real process, for a pidfd to follow; its /proc/<pid>/stat is the fake one the test writes. */
static pid_t child(struct fx *f)
{
	pid_t pid;

	assert_true(f->n_children < 4);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	f->children[f->n_children++] = pid;
	return pid;
}

static void reap(struct fx *f, pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	for (size_t i = 0; i < f->n_children; i++)
		if (f->children[i] == pid)
			f->children[i] = 0;
}

/* Does this kernel (and whatever runs the test: valgrind does not know the call) open pidfds? */
static bool have_pidfds(void)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Is fd readable now (its process exited)? */
static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void a_pidfd_follows_the_process_not_the_pid(void **state)
{
	struct fx *f = *state;
	char why[512];
	int *fds;
	size_t n;
	pid_t pid;

	if (!have_pidfds())
		skip(); /* without pidfd_open, pid and start time decide: dead_and_reused_pids */
	pid = child(f);

	accel_attach_set_pidfds(f->a, true);
	proc_set(f, pid, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, pid, why, sizeof(why)), 0);
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	assert_int_equal(accel_attach_pidfds(f->a, &fds, &n), 0);
	assert_int_equal(n, 1);
	assert_false(readable(fds[0]));
	reap(f, pid);
	/* the pid is another process now, started in the same clock tick: /proc says what it said */
	assert_true(readable(fds[0]));
	close(fds[0]);
	free(fds);
	assert_int_equal(count(f, "job1", "MIG-a"), 0);
	/* and the registry holds no pidfd for it any more */
	assert_int_equal(accel_attach_pidfds(f->a, &fds, &n), 0);
	assert_int_equal(n, 0);
	free(fds);
}

static void after_a_restart_the_start_time_decides_then_the_pidfd(void **state)
{
	struct fx *f = *state;
	char why[512];
	int *fds;
	size_t n;
	pid_t same, other;

	if (!have_pidfds())
		skip();
	same = child(f);
	other = child(f);

	accel_attach_set_pidfds(f->a, true);
	proc_set(f, same, 'S', 5000);
	proc_set(f, other, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, same, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job2", "MIG-b", ID_B, other, why, sizeof(why)), 0);
	reopen(f); /* a restart: no pidfd survives it */
	accel_attach_set_pidfds(f->a, true);
	/* while no daemon ran, other's pid was taken by a process started later */
	proc_set(f, other, 'S', 6001);
	assert_int_equal(count(f, "job2", "MIG-b"), 0);
	/* same's start time still matches: it is watched again, by a pidfd opened now */
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	assert_int_equal(accel_attach_pidfds(f->a, &fds, &n), 0);
	assert_int_equal(n, 1);
	close(fds[0]);
	free(fds);
	reap(f, same);
	assert_int_equal(count(f, "job1", "MIG-a"), 0);
	reap(f, other);
}

static void pid_alive_on_the_real_proc(void **state)
{
	unsigned long long start = 0;
	char cmd[96], out[64] = "";
	FILE *p;

	(void)state;

	assert_true(accel_pid_alive("/proc", getpid(), 0, &start));
	/* field 22 as another reader counts it (this program's name has no space) */
	snprintf(cmd, sizeof(cmd), "awk '{print $22}' /proc/%d/stat", (int)getpid());
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	assert_int_equal(start, strtoull(out, NULL, 10));
	assert_true(accel_pid_alive("/proc", getpid(), start, NULL));
	assert_false(accel_pid_alive("/proc", getpid(), start + 1, NULL));
	assert_false(accel_pid_alive("/proc", 0, 0, NULL));
}

static void reclaim_words(void **state)
{
	enum accel_reclaim r;

	(void)state;
	assert_int_equal(accel_reclaim_parse("when-detached", &r), 0);
	assert_int_equal(r, ACCEL_RECLAIM_WHEN_DETACHED);
	assert_string_equal(accel_reclaim_str(r), "when-detached");
	assert_int_equal(accel_reclaim_parse("manual", &r), 0);
	assert_string_equal(accel_reclaim_str(r), "manual");
	assert_int_equal(accel_reclaim_parse("auto", &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(attach_list_detach, setup, teardown),
		cmocka_unit_test_setup_teardown(refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(rmdir_guard, setup, teardown),
		cmocka_unit_test_setup_teardown(dead_and_reused_pids, setup, teardown),
		cmocka_unit_test_setup_teardown(reclaim_when_detached, setup, teardown),
		cmocka_unit_test_setup_teardown(instances_do_not_mix, setup, teardown),
		cmocka_unit_test_setup_teardown(kept_across_restart_and_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(init_and_the_daemon_are_not_containers, setup, teardown),
		cmocka_unit_test_setup_teardown(removing_one_instance_leaves_another_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(a_pidfd_follows_the_process_not_the_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(after_a_restart_the_start_time_decides_then_the_pidfd, setup, teardown),
		cmocka_unit_test_setup_teardown(read_only_writes_nothing, setup, teardown),
		cmocka_unit_test(pid_alive_on_the_real_proc),
		cmocka_unit_test(reclaim_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
