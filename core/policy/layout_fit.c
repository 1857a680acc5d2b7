/* SPDX-License-Identifier: MIT */
/*
 * Which placement each declared instance takes (core/policy/layout_fit.h), and the
 * check that a written layout could ever be true on its card.
 */
#include "core/policy/layout_fit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* More than any real card needs (7 instances of 7 placements is a few hundred steps). */
#define FIT_STEPS_MAX 200000

struct fit {
	struct layout_unit *u;
	size_t n;
	struct accel_span used[ACCEL_LAYOUT_MAX_UNITS * 2 + 64];
	size_t n_used;
	int cur[ACCEL_LAYOUT_MAX_UNITS];
	int best[ACCEL_LAYOUT_MAX_UNITS];
	size_t best_placed;
	unsigned long steps;
};

static bool span_free(const struct fit *f, struct accel_span s)
{
	for (size_t i = 0; i < f->n_used; i++)
		if (accel_span_overlaps(f->used[i], s))
			return false;
	return true;
}

/*
 * Units of one line are interchangeable: they take increasing placements,
 * and once one is left out so are the ones after it, so that no two
 * orderings of the same choice are both searched.
 */
static bool same_group(const struct fit *f, size_t i)
{
	return i > 0 && f->u[i].start < 0 && f->u[i - 1].start < 0 && f->u[i].line == f->u[i - 1].line &&
	       f->u[i].p == f->u[i - 1].p;
}

static void search(struct fit *f, size_t i, size_t placed, unsigned compute_free)
{
	if (placed + (f->n - i) <= f->best_placed && f->best_placed > 0)
		return; /* cannot beat what was found */
	if (++f->steps > FIT_STEPS_MAX)
		return;
	if (i == f->n) {
		if (placed > f->best_placed || (placed == 0 && f->best_placed == 0)) {
			f->best_placed = placed;
			memcpy(f->best, f->cur, f->n * sizeof(*f->cur));
		}
		return;
	}
	const struct layout_unit *u = &f->u[i];
	bool group = same_group(f, i);
	int from = group && f->cur[i - 1] >= 0 ? f->cur[i - 1] + 1 : 0;

	if (!(group && f->cur[i - 1] < 0) && u->p->slice_count <= compute_free) {
		for (int k = from; k < (int)u->p->n_placements; k++) {
			struct accel_span s = u->p->placements[k];
			if ((u->start >= 0 && s.start != (unsigned)u->start) || !span_free(f, s))
				continue;
			f->cur[i] = k;
			f->used[f->n_used++] = s;
			search(f, i + 1, placed + 1, compute_free - u->p->slice_count);
			f->n_used--;
			if (f->best_placed == f->n)
				return; /* all of them: the first such is the one wanted */
		}
	}
	f->cur[i] = -1;
	search(f, i + 1, placed, compute_free);
}

size_t layout_fit(struct layout_unit *u, size_t n, const struct accel_span *used, size_t n_used, unsigned compute_free)
{
	static __thread struct fit f;

	memset(&f, 0, sizeof(f));
	f.u = u;
	f.n = n > ACCEL_LAYOUT_MAX_UNITS ? ACCEL_LAYOUT_MAX_UNITS : n;
	f.n_used = n_used < 64 + ACCEL_LAYOUT_MAX_UNITS ? n_used : 64 + ACCEL_LAYOUT_MAX_UNITS;
	if (f.n_used) /* used may be NULL with nothing in it: memcpy must not be given NULL */
		memcpy(f.used, used, f.n_used * sizeof(*used));
	for (size_t i = 0; i < f.n; i++)
		f.best[i] = -1;
	search(&f, 0, 0, compute_free);
	for (size_t i = 0; i < f.n; i++)
		u[i].chosen = f.best[i];
	return f.best_placed;
}

unsigned layout_card_compute(const struct accel_device *d)
{
	unsigned most = 0;

	for (size_t i = 0; i < d->n_profiles; i++)
		if (d->profiles[i].slice_count > most)
			most = d->profiles[i].slice_count;
	return most;
}

int layout_legal_index(const struct accel_profile *p, unsigned start)
{
	for (size_t k = 0; k < p->n_placements; k++)
		if (p->placements[k].start == start)
			return (int)k;
	return -1;
}

/* "0, 1, 2" */
static void legal_starts(const struct accel_profile *p, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < p->n_placements && used < len; k++) {
		int n = snprintf(buf + used, len - used, "%s%u", k ? ", " : "", p->placements[k].start);
		if (n < 0)
			return;
		used += (size_t)n;
	}
}

static int add_units(const struct accel_layout *l, const struct accel_device *d, bool skip_unknown, bool at,
                     struct layout_unit *u, size_t *n, bool *unknown, char *why, size_t whylen)
{
	for (size_t i = 0; i < l->n_lines; i++) {
		const struct accel_layout_line *ln = &l->lines[i];
		const struct accel_profile *p;
		char starts[256];

		if ((ln->kind == ACCEL_LAYOUT_AT) != at ||
		    (ln->kind != ACCEL_LAYOUT_AT && ln->kind != ACCEL_LAYOUT_ANY))
			continue;
		p = accel_device_profile(d, ln->profile);
		if (p && at && layout_legal_index(p, ln->start) < 0) {
			if (!skip_unknown) {
				legal_starts(p, starts, sizeof(starts));
				snprintf(why, whylen,
				         "%s: no legal placement of %s on %s starts at %u (legal starts: %s)", ln->text,
				         ln->profile, d->name, ln->start, starts);
				return -EINVAL;
			}
			p = NULL;
		}
		if (!p) {
			if (!skip_unknown) {
				snprintf(why, whylen,
				         "%s: %s does not offer a profile %s (ls %s/mig lists those it does)", ln->text,
				         d->name, ln->profile, d->name);
				return -EINVAL;
			}
			if (unknown)
				unknown[i] = true;
			continue;
		}
		for (unsigned c = 0; c < ln->count; c++) {
			u[*n] = (struct layout_unit){
				.p = p, .start = at ? (long)ln->start : -1, .line = i, .chosen = -1
			};
			(*n)++;
		}
	}
	return 0;
}

int layout_units(const struct accel_layout *l, const struct accel_device *d, bool skip_unknown, struct layout_unit *u,
                 bool *unknown, char *why, size_t whylen)
{
	size_t n = 0;
	int ret = add_units(l, d, skip_unknown, true, u, &n, unknown, why, whylen);

	if (!ret)
		ret = add_units(l, d, skip_unknown, false, u, &n, unknown, why, whylen);
	return ret ? ret : (int)n;
}

int accel_layout_check(const struct accel_layout *l, const struct accel_device *d, char *why, size_t whylen)
{
	struct layout_unit u[ACCEL_LAYOUT_MAX_UNITS];
	size_t declared = 0, placed;
	int n;

	for (size_t i = 0; i < l->n_lines; i++)
		declared += l->lines[i].kind == ACCEL_LAYOUT_AT || l->lines[i].kind == ACCEL_LAYOUT_ANY;
	if (l->mode == 0 && declared) {
		snprintf(why, whylen,
		         "the layout declares instances and 'mode disabled': with the mode off a card has none");
		return -EINVAL;
	}
	if (!d->n_profiles)
		return 0; /* nothing to check against until the mode is on */
	n = layout_units(l, d, false, u, NULL, why, whylen);
	if (n < 0)
		return n;
	placed = layout_fit(u, (size_t)n, NULL, 0, layout_card_compute(d));
	if (placed < (size_t)n) {
		for (int i = 0; i < n; i++)
			if (u[i].chosen < 0) {
				snprintf(
					why, whylen,
					"%s: the declared instances do not fit on %s even when it is empty (%zu of %d fit): "
					"declare fewer",
					l->lines[u[i].line].text, d->name, placed, n);
				break;
			}
		return -EINVAL;
	}
	return 0;
}
