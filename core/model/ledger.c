/* SPDX-License-Identifier: MIT */
#include "core/model/ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool accel_span_overlaps(struct accel_span a, struct accel_span b)
{
	return a.start < b.start + b.size && b.start < a.start + a.size;
}

bool accel_ledger_is_free(struct accel_span legal, const struct accel_span *used, size_t n_used)
{
	for (size_t i = 0; i < n_used; i++)
		if (accel_span_overlaps(legal, used[i]))
			return false;
	return true;
}

int accel_ledger_pick(const struct accel_span *legal, size_t n_legal, const struct accel_span *used, size_t n_used)
{
	int best = -1;

	for (size_t i = 0; i < n_legal; i++) {
		if (legal[i].size == 0 || !accel_ledger_is_free(legal[i], used, n_used))
			continue;
		if (best < 0 || legal[i].start < legal[best].start)
			best = (int)i;
	}
	return best;
}

unsigned accel_ledger_available(const struct accel_span *legal, size_t n_legal, const struct accel_span *used,
                                size_t n_used)
{
	struct accel_span *taken = malloc((n_used + n_legal + 1) * sizeof(*taken));
	size_t n_taken = n_used;
	unsigned count = 0;
	int pick;

	if (!taken)
		return 0;
	if (n_used)
		memcpy(taken, used, n_used * sizeof(*taken));
	while ((pick = accel_ledger_pick(legal, n_legal, taken, n_taken)) >= 0) {
		taken[n_taken++] = legal[pick];
		count++;
	}
	free(taken);
	return count;
}

int accel_ledger_format(const struct accel_span *legal, size_t n_legal, char *buf, size_t len)
{
	size_t off = 0;
	bool one_size = true;

	if (len)
		buf[0] = '\0';
	for (size_t i = 1; i < n_legal; i++)
		one_size = one_size && legal[i].size == legal[0].size;

#define APPEND(...)                                                                                                    \
	do {                                                                                                           \
		int w_ = snprintf(buf + (off < len ? off : len), off < len ? len - off : 0, __VA_ARGS__);              \
		if (w_ > 0)                                                                                            \
			off += (size_t)w_;                                                                             \
	} while (0)

	if (n_legal == 0)
		return 0;
	if (one_size) {
		APPEND("{");
		for (size_t i = 0; i < n_legal; i++)
			APPEND("%s%u", i ? "," : "", legal[i].start);
		APPEND("}:%u", legal[0].size);
	} else {
		for (size_t i = 0; i < n_legal; i++)
			APPEND("%s{%u}:%u", i ? "," : "", legal[i].start, legal[i].size);
	}
#undef APPEND
	return (int)off;
}
