/* SPDX-License-Identifier: MIT */
/*
 * Whether a process is alive, from /proc alone.  kill(pid, 0) cannot tell:
 * it succeeds on a zombie, and on a process that has been killed but one of
 * whose threads is still blocked inside the kernel (the whole process stays
 * until that thread returns, with its files, locks and mounts' connections).
 * A daemon taking over from a crashed one needs exactly that difference.
 */
#ifndef ACCEL_PROC_LIFE_H
#define ACCEL_PROC_LIFE_H

#include <stddef.h>
#include <sys/types.h>

enum accel_proc_life {
	ACCEL_PROC_GONE,  /* no such process (or nothing left of it but a zombie with no thread) */
	ACCEL_PROC_DEAD,  /* its main thread has exited; threads still in the kernel keep it around */
	ACCEL_PROC_DYING, /* a fatal signal is pending, or it is dumping core */
	ACCEL_PROC_ALIVE,
};

/*
 * What /proc (proc_root, "/proc" but for tests) says of pid.  For DEAD and
 * DYING, why says so in words, naming a thread still in the kernel and what
 * it waits for (its wchan), for the log.
 */
enum accel_proc_life accel_proc_life(const char *proc_root, pid_t pid, char *why, size_t len);

#endif
