/* SPDX-License-Identifier: MIT */
#include "fs/quota_text.h"

#include <errno.h>
#include <stdlib.h>

static void entry_line(struct fs_text *t, const struct accel_quota_entry *e, const char *principal,
                       const struct accel_quota_use *use)
{
	fs_put(t, "%s", principal);
	if (e->has_slices)
		use ? fs_put(t, " slices=%lu/%lu", use->slices, e->slices) : fs_put(t, " slices=%lu", e->slices);
	for (size_t k = 0; k < e->n_profiles; k++)
		use ? fs_put(t, " %s=%lu/%lu", e->profiles[k].profile, use->profiles[k], e->profiles[k].n)
		    : fs_put(t, " %s=%lu", e->profiles[k].profile, e->profiles[k].n);
	if (e->has_jobs)
		use ? fs_put(t, " jobs=%lu/%lu", use->jobs, e->jobs) : fs_put(t, " jobs=%lu", e->jobs);
}

int fs_quota_text(struct fs_text *t, const struct accel_quota_table *q, const struct accel_quota_charge *c, size_t n)
{
	struct accel_quota_row *rows;
	size_t n_rows;
	bool dflt_said = false;

	if (accel_quota_rows(q, c, n, &rows, &n_rows))
		return -ENOMEM;
	for (size_t i = 0; i <= n_rows; i++) {
		/* The default's limits, before the users it governs (or last, when it governs none yet). */
		if (!dflt_said && (i == n_rows || rows[i].by_default)) {
			for (size_t k = 0; k < q->n; k++)
				if (q->entries[k].kind == ACCEL_QUOTA_DEFAULT) {
					entry_line(t, &q->entries[k], "default", NULL);
					fs_put(t, "\n");
				}
			dflt_said = true;
		}
		if (i == n_rows)
			break;
		entry_line(t, rows[i].entry, rows[i].principal, &rows[i].use);
		fs_put(t, rows[i].by_default ? " (default)\n" : "\n");
	}
	free(rows);
	return 0;
}
