/* SPDX-License-Identifier: MIT */
/*
 * One loaded simulated driver: its vendor, its init count, its cached copy
 * of each card and of the node, and the handles it has given out.  Each
 * library (libhgml.so, libnvidia-ml.so.1) has exactly one, defined next to
 * its export shims; everything in sim/common takes it as the first argument.
 *
 * Every API call runs between sim_enter() and sim_leave(), and what it
 * holds in between is only what it touches:
 *
 *   - the lifetime lock, shared (only Init and Shutdown take it alone);
 *   - its call counted (one atomic add in the counters file);
 *   - the armed faults, looked at only when the counters file's fault mask
 *     says one matches this call: then the node (node_mutex, then the
 *     node's byte lock) for as long as it takes to count the call down;
 *   - the one card it is about (sim_call_card, through the handle it was
 *     given): that card's mutex (the threads of this process), and, when
 *     the call changes the card or its copy is stale, the card's byte lock
 *     (other processes) and a reread of that card's file alone.
 *
 * So calls on different cards share no lock, in a process or between
 * processes, and no call looks at more than one card.  The lock order is
 * lifetime, node, card, handles; a call never holds two cards, nor the node
 * and a card (the node is let go once the faults have counted the call).
 * Only the first Init, holding the lifetime lock alone, holds the node
 * while it takes each card in turn.
 */
#ifndef ACCEL_SIM_CTX_H
#define ACCEL_SIM_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sim/common/sim_calls.h"
#include "sim/common/sim_counters.h"
#include "sim/common/sim_fs.h"
#include "sim/common/sim_model.h"
#include "sim/common/sim_vendor.h"

struct sim_handle;
struct sim_health_file;

/* One card as this process last read it. */
struct sim_card {
	pthread_mutex_t mutex; /* one call of this process at a time on this card */
	bool loaded;           /* dev's fixed part and profile tables are read (cards/<N>.hw.json) */
	bool valid;            /* dev's changing part is cards/<N>.json at `generation` */
	bool locked;           /* the call holding mutex holds the card's byte lock too */
	uint64_t generation;
	struct sim_device dev;
};

/*
 * Handles interned twice over, in one allocation: by address (is this
 * pointer ours?) in slot[0..cap), by identity in slot[cap..2 cap).  Open
 * addressing, at most half full.  A grown table replaces the current one
 * but is kept (retired) until the last Shutdown, so a lookup may go on
 * reading the table it started with: lookups take no lock.
 */
struct sim_handle_slots {
	struct sim_handle_slots *retired;
	size_t cap;
	struct sim_handle *slot[];
};

struct sim_handle_table {
	struct sim_handle_slots *cur; /* published with a release store, read with an acquire load */
	size_t n;                     /* under handles_mutex */
};

struct sim_ctx {
	const struct sim_vendor *vendor;
	/* Calls hold it shared; Init and Shutdown alone, so nothing is freed under a call. */
	pthread_rwlock_t lifetime;
	unsigned refcount; /* Init_v2 minus Shutdown */
	struct sim_paths paths;
	struct sim_counters counters;   /* mapped from first Init to last Shutdown */
	struct sim_health_file *health; /* likewise (sim_health.h) */
	uint32_t *health_wake;          /* its futex word, in a file of its own */

	pthread_mutex_t lock_fd_mutex; /* only to open lock_fd afresh after a fork */
	int lock_fd;                   /* <root>/locks, for open-file-description byte locks */
	pid_t lock_pid;                /* the process lock_fd was opened in: a fork must open its own */

	unsigned n_devices; /* fixed at power-on */
	struct sim_card *cards;

	pthread_mutex_t node_mutex; /* node, node_valid */
	bool node_valid;
	struct sim_node node;

	pthread_mutex_t handles_mutex; /* a leaf: held only to add a handle */
	struct sim_handle_table handles;
};

#define SIM_CTX_INITIALIZER(vendor_desc)                                                                               \
	{                                                                                                              \
		.vendor = &(vendor_desc), .lifetime = PTHREAD_RWLOCK_INITIALIZER,                                      \
		.lock_fd_mutex = PTHREAD_MUTEX_INITIALIZER, .lock_fd = -1, .node_mutex = PTHREAD_MUTEX_INITIALIZER,    \
		.handles_mutex = PTHREAD_MUTEX_INITIALIZER                                                             \
	}

/* What one API call holds: on the caller's stack, so that threads never share it. */
struct sim_call {
	struct sim_ctx *ctx;
	enum sim_fn fn;
	struct sim_card *card; /* the card it holds, or NULL */
	bool node;             /* it holds the node (node_mutex and the node's byte lock) */
};

/*
 * Start an API call: fn is the ABI function answering (for the armed
 * faults), SIM_FN_NONE for a control-extension call, which faults never hit.
 * On SUCCESS the caller must end with sim_leave(); on anything else (a
 * fault that fired included) nothing is held and nothing was changed.
 */
mig_return_t sim_enter(struct sim_ctx *ctx, enum sim_fn fn, struct sim_call *call);
/* Drop what the call holds; returns r, so a call can end with `return sim_leave(&call, r);`. */
mig_return_t sim_leave(struct sim_call *call, mig_return_t r);

/*
 * Take card `ordinal` for this call and make *d its current state:
 * INVALID_ARGUMENT past the last card, UNKNOWN when its files cannot be
 * read (said on stderr).  Whatever it answers, sim_leave() lets it go.
 */
mig_return_t sim_call_card(struct sim_call *call, unsigned ordinal, struct sim_device **d);
/* Take the node (its faults) for this call; UNKNOWN when node.json cannot be read. */
mig_return_t sim_call_node(struct sim_call *call);
/* Persist what this call changed: its card's file, or node.json. */
mig_return_t sim_commit(struct sim_call *call);

mig_return_t sim_init(struct sim_ctx *ctx);
mig_return_t sim_shutdown(struct sim_ctx *ctx);
/* The library is being unloaded: free everything, whatever the init count. */
void sim_ctx_unload(struct sim_ctx *ctx);

/* Every message says which simulator speaks: a reader must never mistake it for hardware. */
void sim_complain(const struct sim_ctx *ctx, const char *msg);

/* The first Init of a process (sim_boot.c): find, migrate or make the hardware, and its files. */
mig_return_t sim_boot(struct sim_ctx *ctx);
/* Count a call against the armed faults while holding the node: SUCCESS, or what the call answers. */
mig_return_t sim_fault_hit_locked(struct sim_ctx *ctx, enum sim_fn fn);
/* Free what the first Init made (cards, node, handles, counters, lock file). */
void sim_release(struct sim_ctx *ctx);

#endif
