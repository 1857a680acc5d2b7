/* SPDX-License-Identifier: MIT */
/*
 * The JSON the simulators read: the helpers, and the profile entries that
 * the topology files share with the state files (sim_state_json.h).
 * Readers are strict (unknown keys and wrong types are errors with the key
 * named) because a typo in a test topology should fail loudly, not quietly
 * fall back to a default.
 */
#ifndef ACCEL_SIM_JSON_H
#define ACCEL_SIM_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "sim/common/sim_model.h"

/* Key checking: every key of o must be listed (keys starting with '_' are comments). */
int sim_json_check_keys(json_t *o, const char *const *allowed, const char *what, char *err, size_t errlen);

/* Every key listed must be present. */
int sim_json_require(json_t *o, const char *const *keys, const char *what, char *err, size_t errlen);

/* Optional fields; absent leaves *out untouched.  Numbers may be given as "0x..." strings. */
int sim_json_uint(json_t *o, const char *key, unsigned *out, const char *what, char *err, size_t errlen);
int sim_json_ull(json_t *o, const char *key, unsigned long long *out, const char *what, char *err, size_t errlen);
int sim_json_bool(json_t *o, const char *key, bool *out, const char *what, char *err, size_t errlen);
int sim_json_str(json_t *o, const char *key, char *out, size_t len, const char *what, char *err, size_t errlen);

/*
 * A struct's plain fields as one table (name, type, where): the readers
 * below read a whole object from it instead of one call per field.
 */
enum sim_field_type { SIM_FIELD_UINT, SIM_FIELD_ULL, SIM_FIELD_BOOL, SIM_FIELD_STR };

struct sim_field {
	const char *key; /* NULL ends a table */
	enum sim_field_type type;
	size_t offset;
	size_t size; /* SIM_FIELD_STR: the buffer's size */
};

/* One row each; a member of another type than the row says does not compile. */
#define SIM_FIELD_CHECKED(key, type, st, member, want)                                                                 \
	{                                                                                                              \
		key, type, offsetof(st, member),                                                                       \
			sizeof(((st *)0)->member) + 0 * sizeof(char[_Generic(((st *)0)->member, want : 1, default      \
		                                                             : -1)])                                   \
	}
#define SIM_UINT(key, st, member) SIM_FIELD_CHECKED(key, SIM_FIELD_UINT, st, member, unsigned)
#define SIM_ULL(key, st, member) SIM_FIELD_CHECKED(key, SIM_FIELD_ULL, st, member, unsigned long long)
#define SIM_BOOL(key, st, member) SIM_FIELD_CHECKED(key, SIM_FIELD_BOOL, st, member, bool)
#define SIM_STR(key, st, member) SIM_FIELD_CHECKED(key, SIM_FIELD_STR, st, member, char *)

/* Every field of the table read into base (absent ones left as they are); the first error stops. */
int sim_json_fields(json_t *o, const struct sim_field *fields, void *base, const char *what, char *err, size_t errlen);

/* A strict object: only these keys, all of them present. */
int sim_json_exact_keys(json_t *o, const char *const *keys, const char *what, char *err, size_t errlen);

/* A "profile_names" policy; absent leaves *out untouched. */
int sim_json_name_policy(json_t *o, enum sim_name_policy *out, const char *what, char *err, size_t errlen);

/* One profile entry; what names it in errors. */
int sim_json_read_gi_profile(json_t *o, struct sim_gi_profile *p, const char *what, char *err, size_t errlen);
int sim_json_read_ci_profile(json_t *o, struct sim_ci_profile *c, const char *what, char *err, size_t errlen);
json_t *sim_json_gi_profile(const struct sim_gi_profile *p);
json_t *sim_json_ci_profile(const struct sim_ci_profile *c);

#endif
