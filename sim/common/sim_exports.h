/* SPDX-License-Identifier: MIT */
/*
 * The export shims of one simulated library, generated from the X-macro
 * lists so that no vendor has a hand-written copy.  A library's single
 * source file defines
 *
 *   SIM_PREFIX   the symbol prefix (hgml | nvml), unquoted
 *   SIM_CTX      its struct sim_ctx
 *
 * and includes this file once.  Every symbol of MIG_ABI_FUNCTIONS,
 * MIG_ABI_OPTIONAL_FUNCTIONS and ACCELSIM_FUNCTIONS is defined with default
 * visibility (the library is built with -fvisibility=hidden and a version
 * script, so nothing else leaks), and each is checked at compile time
 * against the function-pointer type the product resolves it into.
 */
#ifndef SIM_PREFIX
#error "define SIM_PREFIX before including sim_exports.h"
#endif
#ifndef SIM_CTX
#error "define SIM_CTX before including sim_exports.h"
#endif

#include "core/model/mig_abi.h"
#include "sim/accelsim.h"
#include "sim/common/sim_api.h"

#define SIM_CAT_(a, b) a##b
#define SIM_CAT(a, b) SIM_CAT_(a, b)
#define SIM_EXPORTED(suffix) SIM_CAT(SIM_PREFIX, suffix)
#define SIM_API __attribute__((visibility("default")))

/* sim_<suffix>(&SIM_CTX, <args>), also when args is "()". */
#define SIM_UNPACK(...) __VA_ARGS__
#define SIM_CALL_3(fn, ...) fn(&SIM_CTX __VA_OPT__(, ) __VA_ARGS__)
#define SIM_CALL_2(fn, ...) SIM_CALL_3(fn, __VA_ARGS__)
#define SIM_CALL(fn, args) SIM_CALL_2(fn, SIM_UNPACK args)

#define SIM_DECLARE(suffix, params, args) SIM_API mig_return_t SIM_EXPORTED(suffix) params;
MIG_ABI_FUNCTIONS(SIM_DECLARE)
MIG_ABI_OPTIONAL_FUNCTIONS(SIM_DECLARE)
ACCELSIM_FUNCTIONS(SIM_DECLARE)
SIM_API const char *SIM_EXPORTED(ErrorString)(mig_return_t result);
#undef SIM_DECLARE

#define SIM_DEFINE_ABI(suffix, params, args)                                                                           \
	SIM_API mig_return_t SIM_EXPORTED(suffix) params                                                               \
	{                                                                                                              \
		return SIM_CALL(sim_##suffix, args);                                                                   \
	}                                                                                                              \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&SIM_EXPORTED(suffix)), mig_fn_##suffix##_t),           \
	               #suffix " does not match core/model/mig_abi.h");
MIG_ABI_FUNCTIONS(SIM_DEFINE_ABI)
MIG_ABI_OPTIONAL_FUNCTIONS(SIM_DEFINE_ABI)
#undef SIM_DEFINE_ABI

#define SIM_DEFINE_CONTROL(suffix, params, args)                                                                       \
	SIM_API mig_return_t SIM_EXPORTED(suffix) params                                                               \
	{                                                                                                              \
		return SIM_CALL(sim_##suffix, args);                                                                   \
	}                                                                                                              \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&SIM_EXPORTED(suffix)), accelsim_fn_##suffix##_t),      \
	               #suffix " does not match sim/accelsim.h");
ACCELSIM_FUNCTIONS(SIM_DEFINE_CONTROL)
#undef SIM_DEFINE_CONTROL

SIM_API const char *SIM_EXPORTED(ErrorString)(mig_return_t result)
{
	return sim_ErrorString(&SIM_CTX, result);
}
_Static_assert(__builtin_types_compatible_p(__typeof__(&SIM_EXPORTED(ErrorString)), mig_fn_ErrorString_t),
               "ErrorString does not match core/model/mig_abi.h");

/* A process that dlcloses without Shutdown still gets its memory and lock file back. */
static void __attribute__((destructor)) sim_library_unload(void)
{
	sim_ctx_unload(&SIM_CTX);
}
