/* SPDX-License-Identifier: MIT */
/*
 * Ownership records: one JSON file per job, the only state accelfs keeps of
 * its own.  Everything else is read back from the driver.  A record is
 * written durably before mkdir returns (write, fsync, rename, fsync of the
 * directory), so a crash at any point leaves either no record (and an orphan
 * the reconciler reclaims) or a complete one.
 *
 * Layout: <state-dir>/records/<tree prefix>/<card uuid>/<job>.json
 * The card is named by UUID, not ordinal: ordinals can move between boots,
 * a card's UUID does not.
 */
#ifndef ACCEL_RECORD_H
#define ACCEL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/ledger.h"
#include "core/state/fileio.h"
#include "core/model/model.h"
#include "core/state/state_file.h"

#define ACCEL_RECORD_VERSION 1

enum accel_record_phase {
	ACCEL_RECORD_ACTIVE,   /* the job exists */
	ACCEL_RECORD_REMOVING, /* rmdir started: finish it after a crash, never resurrect */
};

struct accel_record {
	char family[8];                 /* "ppu" */
	char card_uuid[ACCEL_UUID_MAX]; /* must equal the directory it sits in */
	unsigned ordinal;               /* informational: where the card was */
	char job[ACCEL_JOB_NAME_MAX + 1];
	char profile[ACCEL_NAME_MAX]; /* vendor spelling, "4g48gb" (the driver's, below the published name) */
	unsigned profile_id;
	unsigned gi;
	unsigned ci;
	unsigned ci_profile_id;
	struct accel_span placement;
	char uuid[ACCEL_UUID_MAX]; /* MIG-...: GI ids are reused, the UUID proves identity */
	uid_t uid;
	gid_t gid;
	int64_t created;
	enum accel_record_phase phase;
	/* In memory only: what stopped an rmdir midway (the driver's words), for status. */
	char note[ACCEL_TEXT_MAX];
	/* In memory only: the MIG device index it was last found at (UINT_MAX: unknown), a lookup hint. */
	unsigned mig_index;
};

/* The directory holding one card's records. */
int accel_record_dir(char *buf, size_t len, const char *state_dir, const char *family, const char *card_uuid);

/* Serialize / parse.  Parsing fails closed: any missing or mistyped field, or a
 * card or job that does not match where the file lives, is an error with a reason. */
char *accel_record_to_json(const struct accel_record *r);
int accel_record_parse(const char *text, const char *expect_family, const char *expect_card, const char *expect_job,
                       struct accel_record *out, char *why, size_t whylen);

/* Durable write (creates the directories), load one, remove one (durably). */
int accel_record_write(const char *state_dir, const struct accel_record *r, char *why, size_t whylen);
int accel_record_load(const char *path, const char *expect_family, const char *expect_card, struct accel_record *out,
                      char *why, size_t whylen);
int accel_record_remove(const char *state_dir, const struct accel_record *r, char *why, size_t whylen);

/*
 * Every record of one card.  Records that fail to parse are returned in
 * bad (paths, with reasons: core/state/state_file.h) so the caller can hold the
 * card: ownership on a card with an unreadable record is unknowable, and
 * nothing there may be reclaimed as an orphan.
 */
int accel_record_load_card(const char *state_dir, const char *family, const char *card_uuid, struct accel_record **out,
                           size_t *n_out, struct accel_record_bad **bad, size_t *n_bad);

#endif
