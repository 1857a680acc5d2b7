/* SPDX-License-Identifier: MIT */
/*
 * A card's health book: the card's own health and each job's, by job name
 * and instance UUID (a job made again under its name is another instance,
 * and starts ok).  Guarded by the card's lock; plain data otherwise, so
 * that it can be tested without a driver.
 */
#ifndef ACCEL_HEALTH_BOOK_H
#define ACCEL_HEALTH_BOOK_H

#include "core/model/health.h"
#include "core/model/model.h"

struct accel_health_entry {
	char job[ACCEL_JOB_NAME_MAX + 1];
	char uuid[ACCEL_UUID_MAX];
	struct accel_health h;
};

struct accel_health_book {
	struct accel_health device;
	struct accel_health_entry *jobs;
	size_t n_jobs, cap;
	char unknown[ACCEL_HEALTH_WHY_MAX]; /* why nothing can be known about the card now; "" when watched */
	bool dirty;                         /* changed since it was last stored */
};

/* One event as the event thread read it from the driver. */
struct accel_health_event {
	unsigned long long type; /* one MIG_EVENT_TYPE_* bit */
	unsigned xid;            /* the event's data, for an Xid */
	unsigned gi, ci;         /* MIG_EVENT_NO_INSTANCE: the card */
	unsigned action;         /* the recovery action the driver asks for now, or ACCEL_HEALTH_ACTION_UNKNOWN */
	int64_t when;            /* unix seconds */
	bool ecc_known;          /* the card's volatile ECC counts, read with it */
	unsigned long long ecc_corrected, ecc_uncorrected;
};

/* What an event did, for the log. */
struct accel_health_outcome {
	size_t n_touched;      /* jobs whose health it changed or counted */
	bool unknown_instance; /* it named an instance no job of the card holds */
	bool recovered;        /* the driver reported the recovery: every fault of the card is cleared */
	char touched[ACCEL_HEALTH_TOUCHED_MAX];
};

/*
 * Write event e into the book, attributed against the card's current view
 * v (its jobs and their instance ids): an instance's event touches the job
 * holding it; a card's touches every job on the card, and the card; one
 * naming an instance no job holds touches the card alone.  -ENOMEM leaves
 * the book as it was.
 */
int accel_health_book_event(struct accel_health_book *b, const struct accel_device *v,
                            const struct accel_health_event *e, struct accel_health_outcome *out);

/*
 * The driver reports the card recovered (recovery action none after a
 * fault): every fault of the card and its jobs is cleared; counts stay.
 */
void accel_health_book_recover(struct accel_health_book *b);

/*
 * The operator acknowledges the card's faults (a write to <dev>/health once
 * the cause is dealt with): as a recovery, every fault of the card and its
 * jobs is cleared; counts stay.  Returns how many faults were shown.
 */
size_t accel_health_book_acknowledge(struct accel_health_book *b);
/*
 * The card answers again after it fell off the bus (Xid 79, or the driver
 * called it unavailable): it was reset or plugged again, so that fault is
 * over (HGML reports no recovery).  Clears as acknowledge does when the
 * card's fault is that one; returns how many faults were cleared (0: none).
 */
size_t accel_health_book_back(struct accel_health_book *b);

/*
 * Copy the book into a view being installed: the card's health and each
 * job's (ok for a job the book has no fault for; unknown when the card is
 * not watched).  Entries of jobs the view no longer shows are dropped.
 */
void accel_health_book_apply(struct accel_health_book *b, struct accel_device *v);

/* The card's volatile ECC counts read with e (when e->ecc_known): uncorrected ones degrade the card. */
void accel_health_book_ecc(struct accel_health_book *b, const struct accel_health_event *e);

void accel_health_book_clear(struct accel_health_book *b);

/* The entry of (job, uuid), made when absent; NULL when out of memory. */
struct accel_health_entry *accel_health_book_entry(struct accel_health_book *b, const char *job, const char *uuid);

#endif
