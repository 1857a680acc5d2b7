/* SPDX-License-Identifier: MIT */
/*
 * What barswap says of a die and of the slot, read once and said two ways:
 * as dies/<n>/info says it (the same keys in the same order, so that a
 * script reads either) and, with --json, as node.json's `dies` says it
 * (tools/barswap_show.c).
 */
#ifndef ACCEL_TOOLS_BARSWAP_SHOW_H
#define ACCEL_TOOLS_BARSWAP_SHOW_H

#include <stdbool.h>

#include "barswap/barswap.h"

/* One die as dies/<n>/info shows it. */
struct bs_die_view {
	bs_die_info info;
	bs_die_lend lend;
	const char *state; /* parked, held, lending, lent, returning */
	int held_by;       /* the slot's owner while the die is active; 0 otherwise */
};

/* 0, or 1 after a message: a die the slot does not have names the ones it has. */
int bs_check_die(bs_context *ctx, int die);
/* 0, or 1 after a message (bs_check_die's, or the slot's errno). */
int bs_die_view_get(bs_context *ctx, int die, struct bs_die_view *out);
void bs_die_view_print(const struct bs_die_view *v);
/* `barswap --json info DIE` and `barswap --json query`: 0, or 1 after a message. */
int bs_json_info(bs_context *ctx, int die);
int bs_json_query(bs_context *ctx);

#endif
