/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_faults.h"

#include <string.h>

bool sim_fault_function_known(const char *function)
{
	return function && (!strcmp(function, SIM_FN_ANY_NAME) || sim_fn_by_name(function) != SIM_FN_NONE);
}

static bool matches(const accelsim_fault_t *f, enum sim_fn fn)
{
	if (!strcmp(f->function, SIM_FN_ANY_NAME))
		return sim_fn_any(fn);
	return !strcmp(f->function, sim_fn_name(fn));
}

uint64_t sim_faults_mask(const struct sim_node *s)
{
	uint64_t mask = 0;

	for (unsigned i = 0; i < s->n_faults; i++)
		for (int fn = 0; s->faults[i].times > 0 && fn < SIM_FN_COUNT; fn++)
			if (matches(&s->faults[i], (enum sim_fn)fn))
				mask |= sim_fn_bit((enum sim_fn)fn);
	return mask;
}

bool sim_faults_hit(struct sim_node *s, enum sim_fn fn, mig_return_t *ret, bool *changed)
{
	bool fired = false;

	if (!sim_fn_name(fn))
		return false;
	for (unsigned i = 0; i < s->n_faults; i++) {
		accelsim_fault_t *f = &s->faults[i];

		if (f->times == 0 || !matches(f, fn))
			continue;
		*changed = true;
		if (f->skip > 0) {
			f->skip--;
		} else if (!fired) {
			f->times--;
			f->fired++;
			*ret = f->ret;
			fired = true;
		}
	}
	return fired;
}

mig_return_t sim_faults_arm(struct sim_node *s, const accelsim_fault_t *f)
{
	unsigned kept = 0;

	if (s->n_faults == ACCELSIM_MAX_FAULTS) {
		for (unsigned i = 0; i < s->n_faults; i++)
			if (s->faults[i].times > 0)
				s->faults[kept++] = s->faults[i];
		s->n_faults = kept;
	}
	if (s->n_faults == ACCELSIM_MAX_FAULTS)
		return MIG_ERROR_INSUFFICIENT_RESOURCES;
	s->faults[s->n_faults++] = *f;
	return MIG_SUCCESS;
}
