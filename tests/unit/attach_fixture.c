/* SPDX-License-Identifier: MIT */
/* What the registry's tests share (tests/unit/attach_fixture.h). */
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

#include "core/state/attach.h"
#include "core/state/fileio.h"

#include "tests/unit/attach_fixture.h"

/* Make /proc/<pid>/stat say the process runs (state R or Z) since start. */
void proc_set(struct fx *f, pid_t pid, char state, unsigned long long start)
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

void proc_gone(struct fx *f, pid_t pid)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%d/stat", f->proc, (int)pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)pid);
	rmdir(path);
}

struct accel_attach *reopen(struct fx *f)
{
	char err[512] = "";

	accel_attach_close(f->a);
	f->a = accel_attach_open(f->dir, f->proc, err, sizeof(err));
	assert_non_null(f->a);
	return f->a;
}

int setup(void **state)
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

int teardown(void **state)
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

size_t count(struct fx *f, const char *job, const char *uuid)
{
	struct accel_attachment *c;
	size_t n;

	assert_int_equal(accel_attach_list(f->a, job, uuid, &c, &n), 0);
	free(c);
	return n;
}

bool yes(void *ctx, const char *job, const char *uuid)
{
	(void)ctx;
	(void)job;
	(void)uuid;
	return true;
}

/* A sweep, as the reclaimer's pass runs one: how many events it reported. */
size_t sweep(struct fx *f)
{
	struct accel_sweep_event *ev;
	size_t n;

	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	free(ev);
	return n;
}

char *slurp(const char *path, struct stat *st)
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

pid_t child(struct fx *f)
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

void reap(struct fx *f, pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	for (size_t i = 0; i < f->n_children; i++)
		if (f->children[i] == pid)
			f->children[i] = 0;
}

/* Does this kernel (and whatever runs the test: valgrind does not know the call) open pidfds? */
bool have_pidfds(void)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Is fd readable now (its process exited)? */
bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}
