/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_device_free(struct sim_device *d)
{
	free(d->gi_profiles);
	free(d->ci_profiles);
	d->gi_profiles = NULL;
	d->ci_profiles = NULL;
	d->n_gi_profiles = d->n_ci_profiles = 0;
}

void sim_state_free(struct sim_state *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n_devices; i++)
		sim_device_free(&s->devices[i]);
	free(s->devices);
	memset(s, 0, sizeof(*s));
}

const struct sim_gi_profile *sim_gi_profile_by_index(const struct sim_device *d, unsigned index)
{
	for (unsigned i = 0; i < d->n_gi_profiles; i++)
		if (d->gi_profiles[i].index == index)
			return &d->gi_profiles[i];
	return NULL;
}

const struct sim_gi_profile *sim_gi_profile_by_id(const struct sim_device *d, unsigned id)
{
	for (unsigned i = 0; i < d->n_gi_profiles; i++)
		if (d->gi_profiles[i].id == id)
			return &d->gi_profiles[i];
	return NULL;
}

struct sim_gi *sim_gi_by_id(struct sim_device *d, unsigned id)
{
	for (unsigned i = 0; i < d->n_gis; i++)
		if (d->gis[i].id == id)
			return &d->gis[i];
	return NULL;
}

struct sim_ci *sim_ci_by_id(struct sim_gi *gi, unsigned id)
{
	for (unsigned i = 0; i < gi->n_cis; i++)
		if (gi->cis[i].id == id)
			return &gi->cis[i];
	return NULL;
}

/*
 * The simulated hardware's own geometry: written apart from core's ledger
 * (core/model/ledger.c) on purpose.  The simulator plays the driver that judges
 * the engine's choices; were it to ask the engine's code whether a
 * placement is free, a bug there would be agreed with instead of refused.
 */
bool sim_placements_overlap(struct sim_placement a, struct sim_placement b)
{
	return a.start < b.start + b.size && b.start < a.start + a.size;
}

static bool placement_is_legal(const struct sim_gi_profile *p, struct sim_placement pl)
{
	for (unsigned i = 0; i < p->n_placements; i++)
		if (p->placements[i].start == pl.start && p->placements[i].size == pl.size)
			return true;
	return false;
}

/* The capacity checks shared by create and the remaining-capacity count. */
static bool gi_has_room(const struct sim_device *d, const struct sim_gi_profile *p, struct sim_placement pl)
{
	unsigned same_profile = 0, compute_used = 0;

	if (d->n_gis >= SIM_MAX_GI || pl.start + pl.size > d->memory_slices)
		return false;
	for (unsigned i = 0; i < d->n_gis; i++) {
		const struct sim_gi_profile *other = sim_gi_profile_by_id(d, d->gis[i].profile_id);

		if (sim_placements_overlap(d->gis[i].placement, pl))
			return false;
		if (d->gis[i].profile_id == p->id)
			same_profile++;
		compute_used += other ? other->slices : 0;
	}
	return same_profile < p->instances && compute_used + p->slices <= d->compute_slices;
}

mig_return_t sim_gi_fits(const struct sim_device *d, const struct sim_gi_profile *p, struct sim_placement pl)
{
	if (!placement_is_legal(p, pl))
		return MIG_ERROR_INVALID_ARGUMENT;
	return gi_has_room(d, p, pl) ? MIG_SUCCESS : MIG_ERROR_INSUFFICIENT_RESOURCES;
}

unsigned sim_gi_remaining(const struct sim_device *d, const struct sim_gi_profile *p)
{
	/* Work on a copy: pretend to create until nothing fits. */
	struct sim_device trial = *d;
	unsigned n = 0;

	for (unsigned i = 0; i < p->n_placements; i++) {
		if (!gi_has_room(&trial, p, p->placements[i]))
			continue;
		memset(&trial.gis[trial.n_gis], 0, sizeof(trial.gis[0]));
		trial.gis[trial.n_gis].profile_id = p->id;
		trial.gis[trial.n_gis].placement = p->placements[i];
		trial.n_gis++;
		n++;
	}
	return n;
}

int sim_gi_free_id(const struct sim_device *d)
{
	for (unsigned id = 0; id < SIM_MAX_GI; id++) {
		bool used = false;

		for (unsigned i = 0; i < d->n_gis && !used; i++)
			used = d->gis[i].id == id;
		if (!used)
			return (int)id;
	}
	return -1;
}

bool sim_ci_profile_fits(const struct sim_device *d, const struct sim_gi *gi, const struct sim_ci_profile *c)
{
	const struct sim_gi_profile *gp = sim_gi_profile_by_id(d, gi->profile_id);

	if (!gp || c->slices == 0 || c->slices > gp->slices)
		return false;
	if (c->n_gi_profiles == 0)
		return true;
	for (unsigned i = 0; i < c->n_gi_profiles; i++)
		if (c->gi_profiles[i] == gi->profile_id)
			return true;
	return false;
}

const struct sim_ci_profile *sim_ci_profile_for_gi(const struct sim_device *d, const struct sim_gi *gi, unsigned id)
{
	for (unsigned i = 0; i < d->n_ci_profiles; i++)
		if (d->ci_profiles[i].id == id && sim_ci_profile_fits(d, gi, &d->ci_profiles[i]))
			return &d->ci_profiles[i];
	return NULL;
}

bool sim_ci_profile_id_known(const struct sim_device *d, unsigned id)
{
	for (unsigned i = 0; i < d->n_ci_profiles; i++)
		if (d->ci_profiles[i].id == id)
			return true;
	return false;
}

unsigned sim_ci_instance_count(const struct sim_device *d, const struct sim_gi *gi, const struct sim_ci_profile *c)
{
	const struct sim_gi_profile *gp = sim_gi_profile_by_id(d, gi->profile_id);

	return gp && c->slices ? gp->slices / c->slices : 0;
}

static unsigned round_up_pow2(unsigned v)
{
	unsigned p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

mig_return_t sim_ci_next_placement(const struct sim_device *d, const struct sim_gi *gi, const struct sim_ci_profile *c,
                                   struct sim_placement *pl)
{
	const struct sim_gi_profile *gp = sim_gi_profile_by_id(d, gi->profile_id);
	unsigned same = 0, span = gi->placement.size, size;

	if (!gp)
		return MIG_ERROR_INSUFFICIENT_RESOURCES;
	for (unsigned i = 0; i < gi->n_cis; i++)
		same += gi->cis[i].profile_id == c->id;
	if (same >= sim_ci_instance_count(d, gi, c) || gi->n_cis >= SIM_MAX_CI)
		return MIG_ERROR_INSUFFICIENT_RESOURCES;
	/*
	 * CI placements live in a space as wide as the GI's memory span (an
	 * H100 reports a 3g GI's whole CI at 0:4 and a 1g.24gb's at 0:2); a
	 * share takes its slice count rounded up to a power of two, aligned.
	 */
	size = c->slices == gp->slices ? span : round_up_pow2(c->slices);
	for (unsigned start = 0; size && start + size <= span; start += size) {
		struct sim_placement cand = { start, size };
		bool clash = false;

		for (unsigned i = 0; i < gi->n_cis && !clash; i++)
			clash = sim_placements_overlap(gi->cis[i].placement, cand);
		if (!clash) {
			*pl = cand;
			return MIG_SUCCESS;
		}
	}
	return MIG_ERROR_INSUFFICIENT_RESOURCES;
}

int sim_ci_free_id(const struct sim_gi *gi)
{
	for (unsigned id = 0; id < SIM_MAX_CI; id++) {
		bool used = false;

		for (unsigned i = 0; i < gi->n_cis && !used; i++)
			used = gi->cis[i].id == id;
		if (!used)
			return (int)id;
	}
	return -1;
}

bool sim_device_names_profiles(const struct sim_device *d)
{
	return d->profile_names == SIM_NAMES_ALWAYS ||
	       (d->profile_names == SIM_NAMES_WHEN_ENABLED && d->mig_current == MIG_DEVICE_MIG_ENABLE);
}

static const char *const name_policies[] = { "always", "when_enabled", "never" };

int sim_name_policy_parse(const char *s, enum sim_name_policy *out)
{
	for (unsigned i = 0; i < sizeof(name_policies) / sizeof(name_policies[0]); i++)
		if (!strcmp(s, name_policies[i])) {
			*out = (enum sim_name_policy)i;
			return 0;
		}
	return -1;
}

const char *sim_name_policy_string(enum sim_name_policy p)
{
	return (unsigned)p < sizeof(name_policies) / sizeof(name_policies[0]) ? name_policies[p] : "always";
}

const char *sim_profile_short_name(const char *name)
{
	return strncmp(name, "MIG ", 4) == 0 ? name + 4 : name;
}

int sim_placements_parse(const char *s, struct sim_placement *out, unsigned max, unsigned *n)
{
	unsigned starts[SIM_MAX_PLACEMENTS], n_starts = 0;
	const char *p = s;
	char *end;
	unsigned long size;

	*n = 0;
	while (*p == ' ')
		p++;
	if (!*p)
		return 0;
	if (*p++ != '{')
		return -1;
	for (;;) {
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || n_starts >= SIM_MAX_PLACEMENTS || n_starts >= max)
			return -1;
		starts[n_starts++] = (unsigned)v;
		p = end;
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p++ != '}')
			return -1;
		break;
	}
	if (*p++ != ':')
		return -1;
	size = strtoul(p, &end, 10);
	if (end == p || *end != '\0' || size == 0 || size > SIM_MAX_SLICES)
		return -1;
	for (unsigned i = 0; i < n_starts; i++)
		out[i] = (struct sim_placement){ starts[i], (unsigned)size };
	*n = n_starts;
	return 0;
}

void sim_placements_format(const struct sim_placement *p, unsigned n, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (n == 0)
		return;
	off += (size_t)snprintf(buf + off, len - off, "{");
	for (unsigned i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "", p[i].start);
	if (off < len)
		snprintf(buf + off, len - off, "}:%u", p[0].size);
}
