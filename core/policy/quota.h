/* SPDX-License-Identifier: MIT */
/*
 * Quotas: how much of the node each user and group may carve
 * (/accel/quota, docs/tree.md).  A principal is a user (by uid), a group
 * (by gid) or the default (every user but root without a line of its own); its
 * limits are memory slices (a 4g.48gb costs 4), instances of one profile,
 * and jobs.  A job is charged to its owner: the user of its record's uid
 * and the group of its record's gid (the owner's effective group at mkdir,
 * what status shows as owner: uid:gid), once, whatever view carved it.
 *
 * The text (quota_parse.c) and the arithmetic (quota_use.c) are pure
 * functions; the node keeps the table and checks it at carve time
 * (quota_check.c).
 */
#ifndef ACCEL_QUOTA_H
#define ACCEL_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/model/model.h"

#define ACCEL_QUOTA_PROFILES 16     /* profile limits on one line */
#define ACCEL_QUOTA_MAX 1000000UL   /* the largest limit */
#define ACCEL_QUOTA_TEXT_MAX 65536  /* one write of the whole table */
#define ACCEL_QUOTA_PRINCIPALS 1024 /* lines of a table */

enum accel_quota_kind {
	ACCEL_QUOTA_USER,
	ACCEL_QUOTA_GROUP,
	ACCEL_QUOTA_DEFAULT,
};

struct accel_quota_profile_limit {
	char profile[ACCEL_NAME_MAX]; /* published name, 4g.48gb */
	unsigned long n;
};

struct accel_quota_entry {
	enum accel_quota_kind kind;
	unsigned id;    /* uid or gid; 0 for the default */
	char label[64]; /* as the operator wrote it ("alice", "1000"); "" for the default */
	bool has_slices, has_jobs;
	unsigned long slices, jobs;
	size_t n_profiles;
	struct accel_quota_profile_limit profiles[ACCEL_QUOTA_PROFILES];
};

struct accel_quota_table {
	struct accel_quota_entry *entries;
	size_t n;
};

void accel_quota_table_free(struct accel_quota_table *t);
int accel_quota_table_copy(struct accel_quota_table *dst, const struct accel_quota_table *src);

/*
 * Parse the whole text of a write: lines `user:<name|uid> <limit>...`,
 * `group:<name|gid> <limit>...`, `default <limit>...`, a limit being
 * slices=<n>, jobs=<n> or <profile>=<n> (n from 0 to ACCEL_QUOTA_MAX);
 * blank lines and lines starting with '#' are skipped.  Names are looked up
 * (getpwnam, getgrnam) unless stored is set: then principals are numeric,
 * as accel_quota_format writes them (`user:1000=alice`).  0, or -EINVAL
 * with why naming the line and saying what to write; nothing in *out then.
 */
int accel_quota_parse(const char *text, bool stored, struct accel_quota_table *out, char *why, size_t whylen);
/* The table as the state directory keeps it (numeric principals, labels kept); malloc'd, NULL on ENOMEM. */
char *accel_quota_format(const struct accel_quota_table *t);
/* "user:alice", "group:1000", "default" */
void accel_quota_principal(const struct accel_quota_entry *e, char *buf, size_t len);

/* ---- use (quota_use.c) -------------------------------------------------- */

/* What one job costs, and whom. */
struct accel_quota_charge {
	const char *job;
	uid_t uid;
	gid_t gid;
	const char *profile; /* published name */
	unsigned slices;     /* its placement's size */
};

struct accel_quota_use {
	unsigned long slices, jobs;
	unsigned long profiles[ACCEL_QUOTA_PROFILES]; /* indexed like the entry's profile limits */
};

/* Does entry e govern a job of uid:gid?  A default entry governs uid (the caller knows it has no line). */
bool accel_quota_governs(const struct accel_quota_entry *e, uid_t uid, gid_t gid);
/* What the jobs that e governs use (for a default entry: those of uid). */
void accel_quota_use_of(const struct accel_quota_entry *e, uid_t uid, const struct accel_quota_charge *c, size_t n,
                        struct accel_quota_use *use);
/* The entries that govern a job of uid:gid: the user's (or the default), the group's; NULL where none. */
void accel_quota_governing(const struct accel_quota_table *t, uid_t uid, gid_t gid,
                           const struct accel_quota_entry **user, const struct accel_quota_entry **group);
/*
 * May job `add` be carved beside the jobs c[0..n)?  0, or -EDQUOT with why
 * naming the principal, the limit, the use and what to do.
 */
int accel_quota_check(const struct accel_quota_table *t, const struct accel_quota_charge *c, size_t n,
                      const struct accel_quota_charge *add, char *why, size_t whylen);
/*
 * Every job of a snapshot as a charge (the views' jobs, every state: a job
 * is its owner's until rmdir forgets it).  *out malloc'd (free it); -ENOMEM.
 */
int accel_quota_charges(const struct accel_snapshot *s, struct accel_quota_charge **out, size_t *n);
/*
 * One line of what the node shows (the file, metrics, node.json): each
 * principal with a line of its own, then each user the default governs
 * that has a job (by_default), with what it uses now.  The default itself
 * is not a row.  *out malloc'd (free it); -ENOMEM.
 */
struct accel_quota_row {
	char principal[80]; /* "user:alice", "group:ml", "user:1001" */
	const struct accel_quota_entry *entry;
	bool by_default;
	struct accel_quota_use use;
};
int accel_quota_rows(const struct accel_quota_table *t, const struct accel_quota_charge *c, size_t n,
                     struct accel_quota_row **out, size_t *n_out);

#endif
