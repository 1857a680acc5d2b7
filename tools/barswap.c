/* SPDX-License-Identifier: MIT */
/*
 * barswap: the original barswap project's "barswap CLI", over the original barswap API (barswap/barswap.h).
 *
 *   barswap [--sim=STATE_DIR [--sim-create] | --device=PATH] COMMAND ...
 *
 * It talks to /dev/bar_swap by default; --sim=STATE_DIR talks to the
 * simulated slot of an `accelfs --sim --state-dir=STATE_DIR` node instead
 * (the same slot the daemon serves dies/ over); STATE_DIR must exist unless
 * --sim-create asks for a fresh one.  Ownership belongs to the
 * process: `acquire` holds the slot until it is told to let go, and
 * releases it on the way out.  Lending, the lease and the policies are in
 * tools/barswap_lend.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "barswap/barswap.h"
#include "barswap/bs_slot.h"
#include "sim/barswap/bs_sim.h"
#include "tools/barswap_cli.h"
#include "tools/barswap_show.h"

static int parse_die(const char *s, int *die)
{
	uint64_t v;

	if (parse_u64(s, &v) || v > INT_MAX) {
		fprintf(stderr, "barswap: not a die number: %s\n", s);
		return -1;
	}
	*die = (int)v;
	return 0;
}

static int cmd_query(bs_context *ctx)
{
	bs_status st;

	if (bs_query(ctx, &st))
		return fail("query");
	printf("backend: %s\n", bs_backend(ctx));
	printf("dies: %" PRIu32 "\n", st.num_dies);
	printf("slots: %" PRIu32 "\n", st.num_slots);
	if (st.active_die >= 0)
		printf("active: %" PRId32 "\n", st.active_die);
	else
		printf("active: none\n");
	printf("owner_pid: %" PRId32 "\n", st.owner_pid);
	printf("waiters: %" PRIu32 "\n", st.waiters);
	printf("open_files: %" PRIu32 "\n", st.open_files);
	printf("swaps: %" PRIu64 "\n", st.swaps);
	printf("slot_size: %" PRIu64 "\n", st.slot_size);
	print_lease(ctx);
	printf("%-4s %-14s %-12s %-7s %-6s %-9s %-16s %s\n", "die", "bus_id", "vram_bytes", "enabled", "active",
	       "policy", "driver", "acquires");
	for (uint32_t i = 0; i < st.num_dies; i++) {
		bs_die_info d;
		bs_die_lend l = { .driver = "bar_swap" };
		if (bs_die_info_get(ctx, (int)i, &d))
			return fail("die info");
		bs_die_lend_get(ctx, (int)i, &l); /* a module without lending: bar_swap, pinned */
		printf("%-4" PRIu32 " %-14s %-12" PRIu64 " %-7d %-6d %-9s %-16s %" PRIu64 "%s\n", i, d.bus_id,
		       d.vram_size, !!(d.flags & BS_DIE_ENABLED), !!(d.flags & BS_DIE_ACTIVE),
		       l.policy == BS_POLICY_RESIDENT ? "resident" : "pinned", l.driver, d.acquires,
		       d.flags & BS_DIE_PRESENT ? "" : " (removed)");
	}
	return 0;
}

static int cmd_info(bs_context *ctx, int die)
{
	struct bs_die_view v;
	int ret = bs_die_view_get(ctx, die, &v);

	if (ret)
		return ret;
	bs_die_view_print(&v);
	return 0;
}

static int cmd_acquire(bs_context *ctx, int die, const char *hold, unsigned flags, uint32_t timeout_ms)
{
	struct timespec t0, t1;
	uint64_t seconds = 0;
	bs_gpu *g;

	if (parse_hold(hold, &seconds))
		return 2;
	catch_stop();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	g = bs_acquire_ex(ctx, die, flags, timeout_ms);
	if (!g)
		return fail("acquire");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("acquired %d (%" PRIu64 " bytes) after %.3f s\n", die, g->vram_size,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	fflush(stdout);
	hold_on(hold, seconds);
	if (bs_release_ex(ctx, g))
		return fail("release");
	printf("released %d\n", die);
	return 0;
}

/* Both copies go through the kernel (write from, read into the mapping): a revoked mapping is EFAULT, not SIGBUS. */
static int cmd_read(bs_context *ctx, int die, uint64_t off, uint64_t len)
{
	bs_gpu *g = bs_acquire(ctx, die);
	int ret = 0;

	if (!g)
		return fail("acquire");
	if (off >= g->vram_size)
		len = 0;
	else if (len > g->vram_size - off)
		len = g->vram_size - off; /* short at the end, as read(2) is */
	while (len) {
		ssize_t n = write(STDOUT_FILENO, (char *)g->vram + off, len > (1 << 20) ? (1 << 20) : len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = fail("write to stdout");
			break;
		}
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	bs_release(ctx, g);
	return ret;
}

static int cmd_write(bs_context *ctx, int die, uint64_t off)
{
	bs_gpu *g = bs_acquire(ctx, die);
	int ret = 0;

	if (!g)
		return fail("acquire");
	for (;;) {
		ssize_t n;
		if (off >= g->vram_size) {
			char probe;
			n = read(STDIN_FILENO, &probe, 1);
			if (n > 0) {
				errno = ENOSPC;
				ret = fail("write past the end of the die");
			}
			break;
		}
		n = read(STDIN_FILENO, (char *)g->vram + off,
		         g->vram_size - off > (1 << 20) ? (1 << 20) : g->vram_size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = fail("read from stdin");
			break;
		}
		if (!n)
			break;
		off += (uint64_t)n;
	}
	bs_release(ctx, g);
	return ret;
}

/*
 * The slot lives under STATE_DIR/sim/barswap, made on first use: a typo in
 * STATE_DIR would otherwise open a fresh slot no daemon shares, and every
 * command would "work" on it.  Checked before anything is created.
 */
static int check_state_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		fprintf(stderr,
		        "barswap: the simulated node's state directory %s is not a directory: give the "
		        "--state-dir of an `accelfs --sim`\n",
		        dir);
	} else if (errno == ENOENT) {
		fprintf(stderr,
		        "barswap: the simulated node's state directory %s does not exist: start `accelfs --sim "
		        "--state-dir=%s MOUNTPOINT` first, create it (mkdir -p %s), or pass --sim-create for a "
		        "fresh slot driven by barswap alone\n",
		        dir, dir, dir);
	} else {
		fprintf(stderr, "barswap: the simulated node's state directory %s: %s\n", dir, strerror(errno));
	}
	return -1;
}

/* After a message of its own: the usage line (the whole text would bury the message), and status 2. */
static int usage_hint(void)
{
	fputs("usage: barswap [--sim=STATE_DIR [--sim-create] | --device=PATH] COMMAND ...  (barswap --help lists "
	      "the commands)\n",
	      stderr);
	return 2;
}

/* Each command's words after its name: at least, at most, and whether the first is a die. */
static const struct command {
	const char *name;
	int min, max;
	bool die;
} commands[] = {
	{ "query", 0, 0, false }, { "info", 1, 1, true },   { "acquire", 1, 2, true }, { "hold", 1, 2, true },
	{ "read", 3, 3, true },   { "write", 2, 2, true },  { "disable", 1, 1, true }, { "enable", 1, 1, true },
	{ "lend", 2, 3, true },   { "return", 1, 1, true }, { "policy", 1, 2, true },  { "lease", 0, 1, false },
	{ "use", 1, 2, true },
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sim", required_argument, NULL, 's' },
		{ "sim-create", no_argument, NULL, 'c' },
		{ "device", required_argument, NULL, 'd' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *command;
	bool json = false;
	const char *sim = NULL, *device = NULL, *cmd;
	unsigned flags = 0;
	uint32_t timeout_ms = 0;
	bool sim_create = false;
	struct bs_slot *sim_slot = NULL;
	bs_context *ctx;
	int c, die = 0, ret;

	/* Options go anywhere, before the command or after its words ("acquire 2 1 --nonblock"), as GNU tools take
	 * them; "--" ends them. */
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		uint64_t v;
		switch (c) {
		case 's':
			sim = optarg;
			break;
		case 'c':
			sim_create = true;
			break;
		case 'd':
			device = optarg;
			break;
		case 'n':
			flags |= BS_NONBLOCK;
			break;
		case 'j':
			json = true;
			break;
		case 't':
			if (parse_u64(optarg, &v) || v > UINT32_MAX) {
				fprintf(stderr, "barswap: --timeout=%s: milliseconds expected\n", optarg);
				usage(stderr);
				return 2;
			}
			timeout_ms = (uint32_t)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("barswap %s\n", ACCELFS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind++];
	/* Before the slot is opened: a typo is a usage error (2) whether or not the module is loaded. */
	command = find_command(cmd);
	if (!command) {
		fprintf(stderr, "barswap: unknown command %s\n", cmd);
		usage(stderr);
		return 2;
	}
	if (argc - optind < command->min) {
		fprintf(stderr, "barswap: %s needs %s%d argument%s (barswap --help says which)\n", cmd,
		        command->min == command->max ? "" : "at least ", command->min, command->min == 1 ? "" : "s");
		return usage_hint();
	}
	if (argc - optind > command->max) {
		fprintf(stderr, "barswap: %s takes %s%d argument%s: '%s' and what follows would not be read\n", cmd,
		        command->min == command->max ? "" : "at most ", command->max, command->max == 1 ? "" : "s",
		        argv[optind + command->max]);
		return usage_hint();
	}
	if (json && strcmp(cmd, "query") && strcmp(cmd, "info")) {
		fprintf(stderr, "barswap: --json goes with query and info\n");
		return usage_hint();
	}
	if (command->die && parse_die(argv[optind++], &die))
		return usage_hint();

	if (sim_create && !sim) {
		fprintf(stderr, "barswap: --sim-create only goes with --sim=STATE_DIR\n");
		return usage_hint();
	}
	if (sim && !*sim) {
		fprintf(stderr, "barswap: --sim= needs the state directory of an `accelfs --sim`\n");
		return usage_hint();
	}
	if (sim && !sim_create && check_state_dir(sim))
		return usage_hint();
	if (sim) {
		char dir[PATH_MAX], err[512];
		struct bs_slot *s;
		snprintf(dir, sizeof(dir), "%s/sim/barswap", sim);
		s = bs_slot_sim_open(dir, NULL, &ret, err, sizeof(err));
		if (!s) {
			fprintf(stderr, "barswap: %s\n", err);
			return 1;
		}
		sim_slot = s;
		ctx = bs_init_slot(s);
	} else {
		ctx = device ? bs_init_path(device) : bs_init();
	}
	if (!ctx)
		return fail(sim ? "the simulated slot" : device ? device : BS_DEVICE);

	ret = command->die ? bs_check_die(ctx, die) : 0;
	if (ret) {
		; /* no such die: said, with the dies there are */
	} else if (!strcmp(cmd, "query")) {
		ret = json ? bs_json_query(ctx) : cmd_query(ctx);
	} else if (!strcmp(cmd, "info")) {
		ret = json ? bs_json_info(ctx, die) : cmd_info(ctx, die);
	} else if (!strcmp(cmd, "acquire") || !strcmp(cmd, "hold")) {
		ret = cmd_acquire(ctx, die, optind < argc ? argv[optind] : NULL, flags, timeout_ms);
	} else if (!strcmp(cmd, "read") || !strcmp(cmd, "write")) {
		uint64_t off = 0, len = 0;
		bool is_read = !strcmp(cmd, "read");
		if (optind >= argc || parse_u64(argv[optind], &off) ||
		    (is_read && (optind + 1 >= argc || parse_u64(argv[optind + 1], &len)))) {
			usage(stderr);
			ret = 2;
		} else {
			ret = is_read ? cmd_read(ctx, die, off, len) : cmd_write(ctx, die, off);
		}
	} else if (!strcmp(cmd, "disable") || !strcmp(cmd, "enable")) {
		ret = bs_set_enabled(ctx, die, !strcmp(cmd, "enable")) ? fail(cmd) : 0;
	} else if (!strcmp(cmd, "lend")) {
		ret = optind < argc ? cmd_lend(ctx, die, argv[optind], optind + 1 < argc ? argv[optind + 1] : NULL,
		                               flags, timeout_ms)
		                    : (usage(stderr), 2);
	} else if (!strcmp(cmd, "return")) {
		ret = cmd_return(ctx, die, flags, timeout_ms);
	} else if (!strcmp(cmd, "policy")) {
		ret = cmd_policy(ctx, die, optind < argc ? argv[optind] : NULL);
	} else if (!strcmp(cmd, "lease")) {
		ret = cmd_lease(ctx, optind < argc ? argv[optind] : NULL);
	} else if (!strcmp(cmd, "use")) {
		ret = cmd_use(sim_slot, die, optind < argc ? argv[optind] : NULL);
	} else {
		fprintf(stderr, "barswap: unknown command %s\n", cmd);
		usage(stderr);
		ret = 2;
	}
	bs_free(ctx);
	return ret;
}
