/* SPDX-License-Identifier: MIT */
/*
 * Health: what the driver says about each job and each card, from its
 * events (Xid errors, ECC errors, a recovery action asked for).
 *
 * A card's health book (struct accel_health_book) is the authority: the
 * event thread (core/engine/node_health.c) writes what each event says into it,
 * under the card's lock, and every view the card installs copies it into
 * the view (accel_device.health, accel_job.health), so the files, node.json
 * and metrics render it from the snapshot like everything else, and a
 * change wakes poll() like any other change.  The book is kept on disk
 * (core/state/health_store.c), so a daemon killed and started again shows what
 * the driver still reports.
 *
 *   health_xid.c     what each Xid means and how bad it is
 *   health_book.c    an event written into a card's book: who it touched
 *   health_store.c   the book on disk
 *   health_text.c    the `health` files' text
 */
#ifndef ACCEL_HEALTH_H
#define ACCEL_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ordered by how bad: a state only ever rises until the driver reports a recovery. */
enum accel_health_state {
	ACCEL_HEALTH_OK = 0,
	ACCEL_HEALTH_UNKNOWN,  /* nothing can be known: the driver has no event seam, or it failed */
	ACCEL_HEALTH_DEGRADED, /* a fault the partition survives (an application's Xid, drain P2P) */
	ACCEL_HEALTH_FAILED,   /* the partition cannot be trusted until the recovery action is done */
};

/* The driver does not say (no recovery-action field): not one of MIG_GPU_RECOVERY_ACTION_*. */
#define ACCEL_HEALTH_ACTION_UNKNOWN 0xffffffffU
#define ACCEL_HEALTH_XIDS 8
#define ACCEL_HEALTH_WHY_MAX 200
#define ACCEL_HEALTH_TOUCHED_MAX 320

/* Events counted here, by Xid (the first ACCEL_HEALTH_XIDS distinct ones; more fold into the last). */
struct accel_health_count {
	unsigned xid;
	unsigned pad;
	unsigned long long events;
};

/*
 * One job's or one card's health.  Plain data, compared by bytes with the
 * rest of a view (core/model/model.c): always start from zeroed memory.
 */
struct accel_health {
	enum accel_health_state state;
	unsigned xid;    /* of the fault that set the state; 0: not an Xid (ECC, the card unavailable) */
	unsigned action; /* MIG_GPU_RECOVERY_ACTION_* the driver asked for then, or ACCEL_HEALTH_ACTION_UNKNOWN */
	unsigned gi, ci; /* where the driver placed it; MIG_EVENT_NO_INSTANCE: the card */
	unsigned pad;
	int64_t since;                          /* unix seconds of that event */
	char why[ACCEL_HEALTH_WHY_MAX];         /* one line: what happened, or why health is unknown */
	char touched[ACCEL_HEALTH_TOUCHED_MAX]; /* a card-level fault: the jobs it touched, space-separated */
	struct accel_health_count counts[ACCEL_HEALTH_XIDS];
	/* A card's volatile ECC counts at the last reading (ecc_known: the driver answered). */
	bool ecc_known;
	unsigned long long ecc_corrected, ecc_uncorrected;
};

const char *accel_health_state_str(enum accel_health_state s);
/* "GPU_RESET", "NONE", ..., "unknown" for ACCEL_HEALTH_ACTION_UNKNOWN. */
const char *accel_health_action_name(unsigned action);
/* What an operator does for it, in a few words. */
const char *accel_health_action_advice(unsigned action);
/* How bad an action is by itself: OK (none), DEGRADED (drain P2P) or FAILED (a reset or a reboot). */
enum accel_health_state accel_health_action_state(unsigned action);
/* All events counted in h. */
unsigned long long accel_health_events(const struct accel_health *h);

#endif
