/* SPDX-License-Identifier: MIT */
/*
 * The barswap CLI's command line, apart from both commands files (tools/barswap.c,
 * tools/barswap_lend.c) that use it, so that neither calls the other back: the
 * usage text, numbers, the failure message, signals and how long a hold lasts.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/barswap_cli.h"

void usage(FILE *f)
{
	fprintf(f, "usage: barswap [--sim=STATE_DIR [--sim-create] | --device=PATH] COMMAND ...\n"
	           "\n"
	           "  query                       the slot and every die\n"
	           "      --json                  as node.json's dies: {slot, dies[]}\n"
	           "  info DIE                    one die, with the keys of the tree's dies/DIE/info\n"
	           "      --json                  as node.json's dies[] entry\n"
	           "  acquire DIE [SECONDS]       acquire DIE (waiting its turn in FIFO order) and hold it for\n"
	           "                              SECONDS, or until SIGINT/SIGTERM, or (SECONDS '-') until stdin\n"
	           "                              closes; then release it.  Prints 'acquired DIE' once it holds it\n"
	           "      --nonblock              fail at once (EAGAIN) if the slot is busy\n"
	           "      --timeout=MS            give up after MS milliseconds (ETIMEDOUT)\n"
	           "  read DIE OFFSET LENGTH      acquire, copy LENGTH bytes at OFFSET to stdout, release\n"
	           "  write DIE OFFSET            acquire, copy stdin to OFFSET (ENOSPC past the end), release\n"
	           "  disable DIE | enable DIE    quarantine a flaky die (its acquires fail: ENODEV), or re-enable it\n"
	           "  lend DIE DRIVER [SECONDS|-] acquire DIE, lend it to the PCI driver DRIVER (one of the module's\n"
	           "                              lend_drivers=), hold it as acquire does, then take it back and\n"
	           "                              release it.  Prints 'lent DIE to DRIVER' once the driver has it\n"
	           "  return DIE                  acquire DIE and take it back from its driver (a resident die)\n"
	           "  policy DIE [pinned|resident] show or set what a lent die does when its holder lets go\n"
	           "  lease [MS]                  show or set the lease: while others wait, a holder keeps the\n"
	           "                              slot at most MS milliseconds (0: no lease)\n"
	           "  use DIE [SECONDS|-]         (--sim) use the lent DIE through its simulated driver, which then\n"
	           "                              does not let go of it (as nvidia waits for a CUDA process)\n"
	           "\n"
	           "  --sim=STATE_DIR   the simulated slot of `accelfs --sim --state-dir=STATE_DIR`\n"
	           "                    (STATE_DIR must exist)\n"
	           "  --sim-create      with --sim: create STATE_DIR if it does not exist (a slot driven\n"
	           "                    by barswap alone)\n"
	           "  --device=PATH     another node of the module (default " BS_DEVICE ")\n"
	           "  -h, --help        this text\n"
	           "  -V, --version     the version of barswap\n"
	           "Options go before the command or after its arguments; extra arguments are refused.\n"
	           "Offsets and lengths take K, M, G suffixes (powers of 1024).\n"
	           "Exit status: 0 done, 1 the slot or a die refused (errno in the message), 2 usage error.\n");
}

volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

void catch_stop(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: a signal ends a wait (EINTR) or the hold */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!*s || *s == '-')
		return -1;
	v = strtoull(s, &end, 0);
	if (errno)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

int fail(const char *what)
{
	if (errno == ETIME)
		fprintf(stderr, "barswap: %s: %s (the lease ran out while others waited: the slot was taken back)\n",
		        what, strerror(errno));
	else
		fprintf(stderr, "barswap: %s: %s\n", what, strerror(errno));
	return 1;
}

int parse_hold(const char *hold, uint64_t *seconds)
{
	if (hold && strcmp(hold, "-") && parse_u64(hold, seconds)) {
		fprintf(stderr, "barswap: not a number of seconds: %s\n", hold);
		usage(stderr);
		return -1;
	}
	return 0;
}

void hold_on(const char *hold, uint64_t seconds)
{
	if (hold && !strcmp(hold, "-")) {
		char buf[256];
		while (!stop_signal && read(STDIN_FILENO, buf, sizeof(buf)) > 0)
			;
	} else if (hold) {
		struct timespec ts = { (time_t)seconds, 0 };
		while (!stop_signal && nanosleep(&ts, &ts) && errno == EINTR)
			;
	} else {
		while (!stop_signal)
			pause();
	}
}
