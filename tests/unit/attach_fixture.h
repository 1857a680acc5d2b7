/* SPDX-License-Identifier: MIT */
/*
 * The attachment registry's tests (test_attach*.c): a registry in a fresh
 * directory against a fake /proc whose stat files the test writes, so that
 * a process's death and a reused pid are both under the test's control,
 * and real children for what only a real process shows (pidfds).
 */
#ifndef ACCEL_TEST_ATTACH_FIXTURE_H
#define ACCEL_TEST_ATTACH_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "core/state/attach.h"

#define ID_A "3f2a9c1e0b4d5e6f77aa"
#define ID_B "77aa00112233445566bb"

struct fx {
	char dir[64];
	char proc[96];
	struct accel_attach *a;
	pid_t children[4]; /* real processes a test made (child()): teardown ends those still running */
	size_t n_children;
};

/* Make /proc/<pid>/stat say the process runs (state R or Z) since start; or take it away. */
void proc_set(struct fx *f, pid_t pid, char state, unsigned long long start);
void proc_gone(struct fx *f, pid_t pid);
/* Close and open the registry again: a restart. */
struct accel_attach *reopen(struct fx *f);
int setup(void **state);
int teardown(void **state);
/* How many containers job instance uuid has, as a reader sees them. */
size_t count(struct fx *f, const char *job, const char *uuid);
/* Every job exists (a sweep's exists()). */
bool yes(void *ctx, const char *job, const char *uuid);
/* A sweep, as the reclaimer's pass runs one: how many events it reported. */
size_t sweep(struct fx *f);
/* A file's text (malloc'd) and its stat. */
char *slurp(const char *path, struct stat *st);
/* A real child process that waits to be killed (teardown ends it), and reaping one. */
pid_t child(struct fx *f);
void reap(struct fx *f, pid_t pid);
/* Does this kernel have pidfd_open?  Is fd readable now? */
bool have_pidfds(void);
bool readable(int fd);

#endif
