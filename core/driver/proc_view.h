/* SPDX-License-Identifier: MIT */
/*
 * Who may see a process's details (its command, its arguments), by the rule
 * the kernel keeps for /proc.  On a node whose /proc is mounted hidepid=1, 2
 * or 4, a user sees only their own processes there; accelfs, which reads
 * /proc as root, must not hand out what the kernel hides.  So every file that
 * names another process's command (holders, processes) asks here, for the
 * reader of the request, what /proc would show that reader.
 *
 * The rule is the kernel's (fs/proc/base.c: has_pid_permissions, then
 * ptrace_may_access with the reader's filesystem credentials):
 *   - /proc without hidepid shows every process to everyone;
 *   - a reader with CAP_SYS_PTRACE (root, normally) sees every process;
 *   - a reader in hidepid's gid= group sees every process;
 *   - otherwise a process is seen when its real, effective and saved uids
 *     are all the reader's uid, its three gids the reader's gid, and it is
 *     dumpable (a non-dumpable process's /proc files are root's).
 */
#ifndef ACCEL_PROC_VIEW_H
#define ACCEL_PROC_VIEW_H

#include <stdbool.h>
#include <sys/types.h>

/* Whose a process is, as its /proc entries say. */
struct accel_proc_owner {
	bool known;   /* false: /proc could not say (gone): treated as root's */
	uid_t uid[3]; /* real, effective, saved */
	gid_t gid[3];
	bool dumpable; /* its /proc directory is owned by its effective uid and gid, not root's */
};

/* The owner of process pid (a directory name under proc_root); out->known false when /proc cannot say. */
void accel_proc_owner_read(const char *proc_root, const char *pid, struct accel_proc_owner *out);

/* The reader of a request, by the credentials the kernel checks. */
#define ACCEL_VIEWER_GROUPS 64
struct accel_viewer {
	uid_t uid; /* filesystem uid and gid, as FUSE hands them */
	gid_t gid;
	gid_t groups[ACCEL_VIEWER_GROUPS]; /* supplementary groups (hidepid's gid= exception); more are not looked at */
	size_t n_groups;
	bool ptrace; /* CAP_SYS_PTRACE in its effective set, or uid 0 */
};

/*
 * What one reader may see, decided once per text: all (no hidepid, or a
 * privileged reader), or only processes it owns.  A NULL viewer stands for
 * nobody in particular: it sees all only where /proc hides nothing.
 */
struct accel_proc_gate {
	bool all;
	bool someone; /* there is a viewer: its uid and gid below */
	uid_t uid;
	gid_t gid;
};

/* What /proc's mount hides now (read at each call: an operator may remount it with hidepid at any time). */
struct accel_proc_hiding {
	bool hides; /* hidepid=1, 2 or 4 (noaccess, invisible, ptraceable) */
	bool has_gid;
	gid_t gid; /* hidepid's gid=: its members see every process */
};
/*
 * Of the topmost proc mount at proc_root ("/proc").  Where the mount cannot
 * be read, it hides: a reader is then shown less, never more.
 */
void accel_proc_hiding_read(const char *proc_root, struct accel_proc_hiding *out);
/* Parse a proc mount's options ("rw,gid=27,hidepid=invisible"); for tests and accel_proc_hiding_read. */
void accel_proc_hiding_parse(const char *options, struct accel_proc_hiding *out);

/* The gate for viewer v (NULL: nobody in particular) over /proc at proc_root, as mounted now. */
void accel_proc_gate_for(const char *proc_root, const struct accel_viewer *v, struct accel_proc_gate *out);
/* The gate over a known hiding (no reading of mountinfo): what accel_proc_gate_for decides. */
void accel_proc_gate_of(const struct accel_proc_hiding *h, const struct accel_viewer *v, struct accel_proc_gate *out);
/* May the gate's viewer see the details of a process owned so? */
bool accel_proc_gate_lets(const struct accel_proc_gate *g, const struct accel_proc_owner *o);
/* CAP_SYS_PTRACE in the effective set of thread tid, from <proc_root>/<tid>/status; false when it cannot be read. */
bool accel_proc_has_ptrace(const char *proc_root, pid_t tid);

#endif
