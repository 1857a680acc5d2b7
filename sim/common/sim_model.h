/* SPDX-License-Identifier: MIT */
/*
 * The simulated hardware: cards, their profile tables and their live
 * instances.  This is plain data plus the rules of the partition geometry
 * (which placement is legal, what overlaps, what still fits); it knows
 * nothing of files, locks or handles, so the rules can be read in one place.
 */
#ifndef ACCEL_SIM_MODEL_H
#define ACCEL_SIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/model/mig_abi.h"
#include "sim/accelsim.h"

#define SIM_NAME_LEN MIG_DEVICE_NAME_V2_BUFFER_SIZE
#define SIM_UUID_LEN 64
#define SIM_BUS_ID_LEN MIG_DEVICE_PCI_BUS_ID_BUFFER_SIZE
#define SIM_MAX_SLICES 16 /* memory or compute slices of one card */
#define SIM_MAX_PLACEMENTS SIM_MAX_SLICES
#define SIM_MAX_GI SIM_MAX_SLICES /* every GPU instance holds at least one memory slice */
#define SIM_MAX_CI 8
#define SIM_MAX_GI_PROFILE_FILTER 16
#define SIM_MAX_DEVICES 128

struct sim_placement {
	unsigned start;
	unsigned size;
};

/* A GPU-instance profile, as the driver reports it at one probe index. */
struct sim_gi_profile {
	unsigned index; /* the probe index (what GetGpuInstanceProfileInfoV takes) */
	unsigned id;    /* the creation id (what everything else takes) */
	char name[SIM_NAME_LEN];
	unsigned slices;    /* compute slices: sliceCount */
	unsigned instances; /* instanceCount */
	unsigned multiprocessors, copy_engines, decoders, encoders, jpegs, ofas;
	unsigned long long memory_mib;
	unsigned capabilities;
	unsigned n_placements; /* legal placements, in memory slices */
	struct sim_placement placements[SIM_MAX_PLACEMENTS];
};

/* A compute-instance profile; which GPU instances it fits is decided per GI. */
struct sim_ci_profile {
	unsigned index;
	unsigned id; /* several indices may carry one id (T-Head aliases) */
	unsigned slices;
	unsigned multiprocessors;
	/* GI profile ids it applies to; none listed means every GI it fits. */
	unsigned n_gi_profiles;
	unsigned gi_profiles[SIM_MAX_GI_PROFILE_FILTER];
};

struct sim_ci {
	unsigned id;
	unsigned profile_id;
	struct sim_placement placement; /* compute slices within the GI */
	unsigned long long serial;      /* unique per creation: tells a reused id apart */
	char uuid[SIM_UUID_LEN];        /* MIG-... */
	unsigned processes;             /* set by SimSetBusy; non-zero blocks destroy */
	unsigned n_procs;               /* the first n_procs of them, by pid (SimSetProcesses) */
	struct sim_proc {
		unsigned pid;
		unsigned long long used_bytes;
	} procs[ACCELSIM_MAX_PROCESSES];
};

struct sim_gi {
	unsigned id;
	unsigned profile_id;
	struct sim_placement placement; /* memory slices */
	unsigned long long serial;
	unsigned n_cis;
	struct sim_ci cis[SIM_MAX_CI];
};

/*
 * Whether profile records carry their names.  A real H200 (NVML 580) with
 * MIG mode off returns every profile record with an empty name (nvidia-smi
 * prints names it makes up itself); with the mode on, names are assumed.
 */
enum sim_name_policy {
	SIM_NAMES_ALWAYS = 0,
	SIM_NAMES_WHEN_ENABLED = 1,
	SIM_NAMES_NEVER = 2,
};

struct sim_device {
	unsigned ordinal;
	/* What the card is, fixed at power-on (cards/<N>.hw.json). */
	char name[SIM_NAME_LEN];
	char uuid[SIM_UUID_LEN];
	char bus_id[SIM_BUS_ID_LEN];
	unsigned pci_device_id;
	unsigned pci_subsystem_id;
	unsigned minor;
	unsigned long long memory_mib;
	enum sim_name_policy profile_names;
	unsigned memory_slices;
	unsigned compute_slices;
	unsigned n_gi_profiles;
	struct sim_gi_profile *gi_profiles;
	unsigned n_ci_profiles;
	struct sim_ci_profile *ci_profiles;
	/* What changes (cards/<N>.json). */
	bool present;
	/* A mode change is only pending until a reset (NVIDIA's older GPUs; a topology flag): nothing resets. */
	bool mode_needs_reset;
	unsigned mig_current;
	unsigned mig_pending;
	/*
	 * For sim_gi.serial / sim_ci.serial.  Per card: a handle names its card
	 * too, so serials need only be unique on one card, and a create never
	 * has to touch anything node-wide.
	 */
	unsigned long long next_serial;
	unsigned n_gis;
	struct sim_gi gis[SIM_MAX_GI];
};

/* What is node-wide (node.json): how many cards there are, and the armed faults. */
struct sim_node {
	unsigned long long generation; /* bumped by every write of node.json */
	unsigned n_devices;            /* fixed at power-on */
	unsigned n_faults;
	accelsim_fault_t faults[ACCELSIM_MAX_FAULTS];
};

/* A whole node in memory: what power-on builds. */
struct sim_state {
	unsigned n_devices;
	struct sim_device *devices;
	struct sim_node node; /* its faults; node.n_devices is n_devices once written */
};

/* Free a card's profile tables (the only memory a struct sim_device owns). */
void sim_device_free(struct sim_device *d);
void sim_state_free(struct sim_state *s);

/* Lookups; NULL when absent. */
const struct sim_gi_profile *sim_gi_profile_by_index(const struct sim_device *d, unsigned index);
const struct sim_gi_profile *sim_gi_profile_by_id(const struct sim_device *d, unsigned id);
struct sim_gi *sim_gi_by_id(struct sim_device *d, unsigned id);
struct sim_ci *sim_ci_by_id(struct sim_gi *gi, unsigned id);

/* Half-open interval overlap: [a, a+m) and [b, b+n). */
bool sim_placements_overlap(struct sim_placement a, struct sim_placement b);

/*
 * Could a GPU instance of profile p be created at placement pl right now?
 * SUCCESS, INVALID_ARGUMENT (not a legal placement of p) or
 * INSUFFICIENT_RESOURCES (overlap, instance count, compute slices, GI ids).
 */
mig_return_t sim_gi_fits(const struct sim_device *d, const struct sim_gi_profile *p, struct sim_placement pl);

/* How many more GIs of p could be created, placing greedily by start. */
unsigned sim_gi_remaining(const struct sim_device *d, const struct sim_gi_profile *p);

/* The lowest GI id not in use, or -1. */
int sim_gi_free_id(const struct sim_device *d);

/* Does CI profile c apply to GPU instance gi? */
bool sim_ci_profile_fits(const struct sim_device *d, const struct sim_gi *gi, const struct sim_ci_profile *c);
/* The first CI profile with this id that fits gi; NULL if none. */
const struct sim_ci_profile *sim_ci_profile_for_gi(const struct sim_device *d, const struct sim_gi *gi, unsigned id);
/* Does any CI profile (fitting or not) carry this id? */
bool sim_ci_profile_id_known(const struct sim_device *d, unsigned id);
/* Instances of c one GI can hold: its slices divided by c's. */
unsigned sim_ci_instance_count(const struct sim_device *d, const struct sim_gi *gi, const struct sim_ci_profile *c);
/*
 * Where the next CI of c would go inside gi: first fit in a space as wide as
 * the GI's memory span; the whole-GI profile takes all of it, a share its
 * slice count rounded up to a power of two, aligned (NVIDIA's 3-slice CIs
 * start at 0 or 4).  SUCCESS with *pl, or INSUFFICIENT_RESOURCES.
 */
mig_return_t sim_ci_next_placement(const struct sim_device *d, const struct sim_gi *gi, const struct sim_ci_profile *c,
                                   struct sim_placement *pl);
/* The lowest CI id free in gi, or -1. */
int sim_ci_free_id(const struct sim_gi *gi);

/* Do this card's profile records carry names right now? */
bool sim_device_names_profiles(const struct sim_device *d);
/* "always" | "when_enabled" | "never" <-> the policy; parse returns -1 for anything else. */
int sim_name_policy_parse(const char *s, enum sim_name_policy *out);
const char *sim_name_policy_string(enum sim_name_policy p);

/* "MIG 4g48gb" -> "4g48gb": the name without the "MIG " prefix. */
const char *sim_profile_short_name(const char *name);

/* "{0,4}:4" <-> placements.  Parse returns 0 or -1; "" is no placement. */
int sim_placements_parse(const char *s, struct sim_placement *out, unsigned max, unsigned *n);
void sim_placements_format(const struct sim_placement *p, unsigned n, char *buf, size_t len);

#endif
