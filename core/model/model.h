/* SPDX-License-Identifier: MIT */
/*
 * The model: what a node looks like at one instant.
 *
 * A snapshot is immutable once published and reference counted, so the
 * filesystem renders from it without holding any lock while the poller and
 * the carve path build the next one.  Everything in here is plain data:
 * strings and numbers a reader can print, nothing that talks to a driver.
 */
#ifndef ACCEL_MODEL_H
#define ACCEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/health.h"
#include "core/model/ledger.h"
#include "core/model/names.h"

#define ACCEL_JOB_NAME_MAX 63
#define ACCEL_UUID_MAX 96
#define ACCEL_TEXT_MAX 512

struct accel_family;

/* One device node a job needs: where a container sees it, where it is on the host. */
struct accel_devnode {
	char path[128];      /* "/dev/alixpu_ppu3": the path a container sees */
	char host_path[512]; /* the node on this host (differs under --sim) */
	unsigned major;
	unsigned minor;
	/*
	 * 1 for a node every card of the family shares (nvidiactl, nvidia-uvm,
	 * alixpu_ctl): holding it holds the driver, not this card (core/driver/holders.h).
	 * An unsigned, not a bool: views compare nodes with memcmp, so no padding.
	 */
	unsigned control;
};

struct accel_profile {
	unsigned index;                   /* the probe index it was found at */
	unsigned id;                      /* the driver's profile id: carried, never computed */
	char driver_name[96];             /* "MIG 4g48gb", as reported */
	char vendor_name[ACCEL_NAME_MAX]; /* "4g48gb" */
	char name[ACCEL_NAME_MAX];        /* "4g.48gb": the directory */
	unsigned slice_count;             /* the GI's compute slices (driver's sliceCount) */
	unsigned instance_count;          /* the driver's instanceCount */
	unsigned long long memory_mib;
	unsigned multiprocessors, copy_engines, decoders, encoders, jpegs, ofas;
	unsigned span; /* memory slices, from the placement records */
	struct accel_span *placements;
	size_t n_placements;
	unsigned free;      /* placements free of every live instance of the snapshot */
	unsigned available; /* free, or 0 when the card takes no new job (struct accel_admits) */
};

enum accel_job_state {
	ACCEL_JOB_READY,
	ACCEL_JOB_LOST,     /* the record's instance is gone: fails closed */
	ACCEL_JOB_REMOVING, /* rmdir started and has not finished: rmdir again resumes it */
};

struct accel_job {
	char name[ACCEL_JOB_NAME_MAX + 1];
	char profile[ACCEL_NAME_MAX]; /* published name of its profile directory */
	enum accel_job_state state;
	char state_reason[ACCEL_TEXT_MAX]; /* why lost, or what stopped its removal, for status */
	unsigned profile_id;
	unsigned gi, ci;
	struct accel_span placement;
	char uuid[ACCEL_UUID_MAX]; /* MIG-... */
	uid_t uid;
	gid_t gid;
	int64_t created; /* unix seconds */
	struct accel_devnode *nodes;
	size_t n_nodes;
	struct accel_health health; /* what the driver's events said about it (core/model/health.h) */
};

/* A GPU instance as the driver reports it, whoever made it. */
struct accel_instance {
	unsigned gi;
	unsigned profile_id;
	struct accel_span placement;
	unsigned n_ci;
	unsigned ci[8];
	char uuid[ACCEL_UUID_MAX];         /* of its first compute instance; "" if none */
	char profile_name[ACCEL_NAME_MAX]; /* published, or the raw vendor name if not offered */
	char job[ACCEL_JOB_NAME_MAX + 1];  /* owning job, "" if unmanaged */
	char note[160];                    /* "orphan: reclaim in 8s", "subdivided", ... */
	bool foreign;                      /* made by nobody accelfs knows of (core/policy/reconcile.h) */
	bool subdivided;                   /* no one device: several compute instances, or one on part of it */
};

/*
 * What a card can take now, decided once when its view is installed
 * (core/policy/admits.c) and read by everything that places work: available,
 * placements/<start>/status, the node-level choice, node.json, metrics and
 * mkdir.  Conditions in the order of how much they keep out: the worst that
 * applies is the card's.
 */
enum accel_condition {
	ACCEL_COND_OK = 0,
	ACCEL_COND_DEGRADED,     /* a fault the driver asks nothing for: still takes jobs */
	ACCEL_COND_CORDONED,     /* the operator's cordon (mig/cordon) */
	ACCEL_COND_DRAINING,     /* a layout's drain line waits for a busy instance */
	ACCEL_COND_MODE_PENDING, /* a mode change waits: the driver's pending mode, or a layout's mode line */
	ACCEL_COND_MIG_DISABLED, /* MIG mode is off: nothing is carved */
	ACCEL_COND_FAILED,       /* the card's health is failed (a reset, a reboot, off the bus) */
	ACCEL_COND_REFUSED,      /* the card cannot be read or managed now */
	ACCEL_COND_ABSENT,       /* the driver does not give us the card */
};

struct accel_admits {
	bool new_jobs;
	enum accel_condition condition;
	int err;                  /* what mkdir answers when !new_jobs: -EBUSY, -EIO, -ENODEV */
	char why[ACCEL_TEXT_MAX]; /* "" when new_jobs; else mkdir's last_error */
};

/* What the card's holds say besides its health, set by the layouts and the operator (node_mode.c). */
struct accel_card_hold {
	bool cordon;         /* the operator's: mig/cordon */
	bool drain;          /* a layout's drain line waits for a holder */
	bool mode_wait;      /* a layout's mode line waits (for the card to empty, or for a reset) */
	unsigned pending;    /* layout lines pending */
	unsigned impossible; /* layout lines impossible */
};

struct accel_device {
	const struct accel_family *family;
	char name[16]; /* "ppu3" */
	unsigned ordinal;
	unsigned minor;
	char uuid[ACCEL_UUID_MAX];
	char product[96];
	char bus_id[32];
	unsigned pci_id; /* PCI device id << 16 | vendor id, as the driver says; 0: unknown */
	unsigned long long memory_mib;
	char library[256];   /* the driver library that answers for it */
	char pci_driver[32]; /* bound kernel driver as udev knows it; "" if unknown */
	char udev_syspath[256];

	bool mig_enabled;
	bool mig_pending_enabled;

	/* Set when the device cannot be managed right now (a subdivided GI, a driver error). */
	bool refused;
	/*
	 * And absent (refused too): the driver does not give us the card, and
	 * only its records are known; refusal says why.  Its jobs are lost or
	 * removing, and come back with it.
	 */
	bool absent;
	char refusal[ACCEL_TEXT_MAX];
	/* Foreign instances (made outside accelfs) are reclaimed here; set: the card says so, not --foreign. */
	bool foreign_reclaim;
	bool foreign_set;

	struct accel_profile *profiles;
	size_t n_profiles;
	struct accel_job *jobs;
	size_t n_jobs;
	struct accel_instance *instances;
	size_t n_instances;
	/* Device nodes of the card itself, for holders and CDI. */
	struct accel_devnode *card_nodes;
	size_t n_card_nodes;
	struct accel_health health;  /* the card's own: card-level faults, unattributed events, ECC */
	struct accel_card_hold hold; /* the cordon and the layout's holds when the view was installed */
	struct accel_admits admits;  /* what it can take now (core/policy/admits.c), from all the above */

	/*
	 * A published view is shared, immutable, by every snapshot that shows
	 * it (a snapshot holds one reference per device): publishing after a
	 * change to one card copies pointers, not the other cards.  Zero on a
	 * view still being built.
	 */
	int refs;
};

/*
 * A family of devices as the node found it: whether its driver library
 * loaded, and if not why, so that a node with no driver says so (metrics,
 * node.json) instead of only showing no device.
 */
#define ACCEL_SNAPSHOT_FAMILIES 4
struct accel_family_state {
	char prefix[8];    /* the tree prefix: "ppu", "gpu" */
	char vendor[16];   /* "T-Head", "NVIDIA" */
	bool disabled;     /* not looked for (accel_family_config.disabled) */
	bool loaded;       /* the driver library loaded */
	char library[256]; /* the library loaded, or the name looked for */
	char reason[16];   /* "" when loaded, else "disabled", "not_found" or "unusable" (found, refused) */
	char why[512];     /* not loaded: the loader's sentence; "" when loaded */
};

struct accel_snapshot {
	int refs; /* atomically updated */
	uint64_t generation;
	int64_t published_ms; /* when it was published (CLOCK_REALTIME, ms since the epoch): how old what it says is */
	struct accel_device **devices; /* shared views, referenced */
	size_t n_devices;
	struct accel_family_state families[ACCEL_SNAPSHOT_FAMILIES]; /* in the order of accel_families[] */
	size_t n_families;
};

struct accel_snapshot *accel_snapshot_ref(struct accel_snapshot *s);
void accel_snapshot_unref(struct accel_snapshot *s);

/*
 * Move a view being built into a shared, reference-counted one (refs 1);
 * *d is left empty.  NULL when out of memory (and *d is cleared).
 */
struct accel_device *accel_device_share(struct accel_device *d);
struct accel_device *accel_device_ref(struct accel_device *d);
void accel_device_unref(struct accel_device *d);
/* Do two views show the same thing?  Compares every field a reader can see. */
bool accel_device_equal(const struct accel_device *a, const struct accel_device *b);

/* Lookups within one snapshot; NULL when absent. */
const struct accel_device *accel_snapshot_device(const struct accel_snapshot *s, const char *name);
const struct accel_profile *accel_device_profile(const struct accel_device *d, const char *published);
const struct accel_job *accel_device_job(const struct accel_device *d, const char *job);
/* The job of that name on any device (names are unique on the node); its device in *dev when dev is given. */
const struct accel_job *accel_snapshot_job(const struct accel_snapshot *s, const char *job,
                                           const struct accel_device **dev);

/* Deep copies and frees, used by whoever builds snapshots. */
int accel_device_copy(struct accel_device *dst, const struct accel_device *src);
void accel_device_clear(struct accel_device *d);
void accel_profile_clear(struct accel_profile *p);
void accel_job_clear(struct accel_job *j);
int accel_job_copy(struct accel_job *dst, const struct accel_job *src);

const char *accel_job_state_str(enum accel_job_state s);
/* "ok", "degraded", "cordoned", "draining", "mode-pending", "mig-disabled", "failed", "refused", "absent". */
const char *accel_condition_str(enum accel_condition c);
/* A device's state as info says it: "ok", "refused" or "absent" (refusal says why). */
const char *accel_device_state_str(const struct accel_device *d);

/*
 * Validate a job name: 0, -EINVAL (not ACCEL_JOB_NAME_RULE) or
 * -ENAMETOOLONG (over ACCEL_JOB_NAME_MAX bytes).  One rule for the
 * filesystem and for CDI, where the name is a device name
 * (accelfs.io/mig=<job>): a name CDI refuses would make a runtime reject
 * the node's whole spec, every other job with it.
 */
#define ACCEL_JOB_NAME_RULE                                                                                            \
	"letters, digits, '.', '_' and '-', starting and ending with a letter or digit "                               \
	"([A-Za-z0-9] or [A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]), at most 63 bytes: a job's name is also its "          \
	"CDI device name"
int accel_job_name_check(const char *name);
/*
 * A new job's name: the rule above, and none of the names the tree keeps
 * for the files of a profile or a placement directory, where the job shows
 * too (core/model/tree_names.h).  0, or -EINVAL, -ENAMETOOLONG or -EEXIST
 * with why saying which and what to do.
 */
int accel_new_job_name_check(const char *job, char *why, size_t whylen);
/*
 * The rule records written before the CDI rule were checked against
 * ([A-Za-z0-9][A-Za-z0-9_.-]*): a record of such a job still loads, so its
 * card is not refused after an upgrade; only the node-level CDI spec
 * leaves it out.  0, -EINVAL or -ENAMETOOLONG.
 */
int accel_job_name_check_stored(const char *name);

#endif
