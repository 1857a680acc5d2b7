/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_faults.h"

#include <string.h>

#define ABI_NAME(suffix, params, args) #suffix,
static const char *const abi_functions[] = {
	MIG_ABI_FUNCTIONS(ABI_NAME) MIG_ABI_OPTIONAL_FUNCTIONS(ABI_NAME) NULL,
};
#undef ABI_NAME

bool sim_fault_function_known(const char *function)
{
	for (size_t i = 0; abi_functions[i]; i++)
		if (!strcmp(abi_functions[i], function))
			return true;
	return false;
}

bool sim_faults_hit(struct sim_state *s, const char *function, mig_return_t *ret, bool *changed)
{
	bool fired = false;

	for (unsigned i = 0; i < s->n_faults; i++) {
		accelsim_fault_t *f = &s->faults[i];

		if (f->times == 0 || strcmp(f->function, function) != 0)
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

mig_return_t sim_faults_arm(struct sim_state *s, const accelsim_fault_t *f)
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
