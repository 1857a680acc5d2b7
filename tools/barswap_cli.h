/* SPDX-License-Identifier: MIT */
/* The barswap CLI's shared pieces: tools/barswap_cli.c (the command line) for tools/barswap.c (the slot)
 * and tools/barswap_lend.c (lending, the lease). */
#ifndef ACCEL_TOOLS_BARSWAP_CLI_H
#define ACCEL_TOOLS_BARSWAP_CLI_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "barswap/barswap.h"
#include "barswap/bs_slot.h"

extern volatile sig_atomic_t stop_signal;

void usage(FILE *f);
/* Print "barswap: WHAT: strerror(errno)" (and what ETIME means); returns 1, the exit status. */
int fail(const char *what);
int parse_u64(const char *s, uint64_t *out);
/* SIGINT and SIGTERM end a wait with EINTR, or a hold, by setting stop_signal. */
void catch_stop(void);
/* A hold's length: SECONDS, '-' (until stdin closes) or none (until a signal).  -1 after a usage message. */
int parse_hold(const char *hold, uint64_t *seconds);
void hold_on(const char *hold, uint64_t seconds);

/* tools/barswap_lend.c */
void print_lease(bs_context *ctx);
int cmd_lend(bs_context *ctx, int die, const char *driver, const char *hold, unsigned flags, uint32_t timeout_ms);
int cmd_return(bs_context *ctx, int die, unsigned flags, uint32_t timeout_ms);
int cmd_policy(bs_context *ctx, int die, const char *policy);
int cmd_lease(bs_context *ctx, const char *ms);
int cmd_use(struct bs_slot *sim_slot, int die, const char *hold);

#endif
