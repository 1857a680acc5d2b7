/* SPDX-License-Identifier: MIT */
/*
 * accelfs-slurm-sync: the node-side daemon that keeps Slurm honest about
 * what accelfs can carve.  Each pass (every --interval seconds):
 *
 *  1. lists the partitions named slurm-<job>-<n> on the mount, then asks
 *     slurmctld for its jobs (in that order: a job whose prolog carves after
 *     the listing is known to Slurm by then), and gives back every partition
 *     whose job is not running on this node any more: the epilog did not run
 *     (slurmd was down, the node crashed) or could not finish.  No other
 *     name is ever touched, and nothing is reclaimed while Slurm cannot be
 *     asked.
 *  2. sets the node's count of every mig:<profile> GRES so that Slurm's free
 *     count (count minus GresUsed) equals accelfs's `available`: the count is
 *     `available` plus what this node's running jobs asked for of the profile
 *     and already hold (those are in GresUsed and no longer in `available`).
 *     Profiles share memory slices, so a carve of one lowers the others; a
 *     restarted slurmd registers gres.conf's counts, and the next pass puts
 *     the true ones back.  A card that takes no new job (cordoned, draining,
 *     failed, ...: node.json's admits) counts nothing, and the node's comment
 *     names it and why (sync_cards.h); the node itself is never drained for
 *     it, since its other cards and its CPUs still take jobs.
 */
#include "mig_jobs.h"
#include "sync_cards.h"
#include "sync_gres.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#define MAX_PARTS 1024
/* The mig type no job asks for, whose count keeps the node's total constant (docs/slurm.md). */
#define RESERVE "unavailable"

struct config {
	const char *mount;
	char node[256];
	double interval;
	int once;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s accelfs-slurm-sync: ", stamp);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Alive on this node: running or suspended here, or still being set up or torn down here. */
static int alive_here(const slurm_job_info_t *job, const char *node)
{
	uint32_t base = job->job_state & JOB_STATE_BASE;
	int busy =
		base == JOB_RUNNING || base == JOB_SUSPENDED || (job->job_state & (JOB_CONFIGURING | JOB_COMPLETING));
	if (!busy || !job->nodes)
		return 0;
	hostlist_t hl = slurm_hostlist_create(job->nodes);
	if (!hl)
		return 1; /* cannot tell: keep it */
	int here = slurm_hostlist_find(hl, node) >= 0;
	slurm_hostlist_destroy(hl);
	return here;
}

static const slurm_job_info_t *find_job(const job_info_msg_t *jobs, uint32_t id)
{
	for (uint32_t i = 0; i < jobs->record_count; i++)
		if (jobs->job_array[i].job_id == id)
			return &jobs->job_array[i];
	return NULL;
}

/* For the log: libslurm 22.05 exports no state-to-string function. */
static const char *state_name(const slurm_job_info_t *job)
{
	static const char *const names[] = { "PENDING",   "RUNNING",   "SUSPENDED", "COMPLETED",
		                             "CANCELLED", "FAILED",    "TIMEOUT",   "NODE_FAIL",
		                             "PREEMPTED", "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY" };
	uint32_t base;
	if (!job)
		return "unknown to Slurm";
	base = job->job_state & JOB_STATE_BASE;
	if (base == JOB_RUNNING || base == JOB_SUSPENDED)
		return "running on other nodes";
	return base < sizeof(names) / sizeof(names[0]) ? names[base] : "in an unknown state";
}

/* Step 1; fills `held` with what live jobs asked for and already hold, per profile. */
static void reclaim_dead(const struct config *cfg, const struct am_part *parts, size_t n, const job_info_msg_t *jobs,
                         struct gres_set *held)
{
	memset(held, 0, sizeof(*held));
	for (size_t i = 0; i < n; i++) {
		const slurm_job_info_t *job = find_job(jobs, parts[i].jobid);
		char err[1024];
		if (job && alive_here(job, cfg->node)) {
			struct gres_set req;
			if (gres_parse_request(job->tres_per_node, &req) == 0) {
				long asked = gres_get(&req, parts[i].profile);
				long have = 0;
				for (size_t k = 0; k < n; k++)
					have += parts[k].jobid == parts[i].jobid &&
					        !strcmp(parts[k].profile, parts[i].profile);
				/* Once per (job, profile): the first of its partitions of that profile. */
				int first = 1;
				for (size_t k = 0; k < i; k++)
					if (parts[k].jobid == parts[i].jobid &&
					    !strcmp(parts[k].profile, parts[i].profile))
						first = 0;
				if (first)
					gres_put(held, parts[i].profile,
					         gres_get(held, parts[i].profile) + (asked < have ? asked : have));
			}
			continue;
		}
		int e = am_reclaim_one(cfg->mount, parts[i].profile, parts[i].name, err, sizeof(err));
		if (e == 0)
			say("gave back %s (%s): job %u is %s on %s", parts[i].name, parts[i].profile, parts[i].jobid,
			    state_name(job), cfg->node);
		else
			say("cannot give back %s of job %u (%s yet): %s", parts[i].name, parts[i].jobid,
			    state_name(job), err);
	}
}

static int load_node(const struct config *cfg, struct gres_set *total, struct gres_set *used, char *comment,
                     size_t clen)
{
	node_info_msg_t *msg = NULL;
	if (slurm_load_node_single(&msg, (char *)cfg->node, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS || !msg ||
	    msg->record_count < 1) {
		say("cannot read node %s from slurmctld: %s", cfg->node, slurm_strerror(errno));
		if (msg)
			slurm_free_node_info_msg(msg);
		return -1;
	}
	const node_info_t *ni = &msg->node_array[0];
	int rc = 0;
	snprintf(comment, clen, "%s", ni->comment ? ni->comment : "");
	if (gres_parse(ni->gres, total) < 0 || gres_parse(ni->gres_used, used) < 0) {
		say("cannot read node %s's GRES (Gres=%s GresUsed=%s)", cfg->node, ni->gres ? ni->gres : "",
		    ni->gres_used ? ni->gres_used : "");
		rc = -1;
	}
	slurm_free_node_info_msg(msg);
	return rc;
}

/*
 * The node's comment names the cards that take no new job (Slurm keeps a
 * Reason only on a drained or down node, and draining would stop the other
 * cards' jobs and the CPU jobs too).  A comment someone else wrote is left
 * alone: ours start with "accelfs:".
 */
static int push_comment(const struct config *cfg, const char *now, const char *want)
{
	char node[sizeof(cfg->node)], text[1024];
	if (!strcmp(now, want) || (now[0] && strncmp(now, "accelfs:", 8)))
		return 0;
	update_node_msg_t msg;
	slurm_init_update_node_msg(&msg);
	snprintf(node, sizeof(node), "%s", cfg->node);
	snprintf(text, sizeof(text), "%s", want);
	msg.node_names = node;
	msg.comment = text; /* "" clears it */
	if (slurm_update_node(&msg) != SLURM_SUCCESS) {
		say("cannot set node %s's comment to '%s': %s", cfg->node, want, slurm_strerror(errno));
		return -1;
	}
	say("node %s: %s", cfg->node, want[0] ? want : "every card takes new jobs again");
	return 0;
}

/* Step 2. */
static int push_counts(const struct config *cfg, const struct gres_set *held)
{
	static struct node_cards cards;
	char err[1024], comment[1024], want_comment[1024];
	struct gres_set total, used, want;

	if (cards_read(cfg->mount, &cards, err, sizeof(err)) < 0) {
		say("%s", err);
		return -1;
	}
	const struct am_avail *avail = cards.avail;
	size_t navail = cards.navail;
	if (load_node(cfg, &total, &used, comment, sizeof(comment)) < 0)
		return -1;
	cards_comment(&cards, want_comment, sizeof(want_comment));
	int rc = push_comment(cfg, comment, want_comment);
	want = total;
	long sum = 0, profiles = 0;
	for (size_t i = 0; i < want.n; i++) {
		sum += want.mig[i].count;
		if (strcmp(want.mig[i].type, RESERVE))
			want.mig[i].count = 0; /* a profile no card offers now can carve nothing */
	}
	for (size_t i = 0; i < navail; i++) {
		long u = gres_get(&used, avail[i].profile), h = gres_get(held, avail[i].profile);
		gres_put(&want, avail[i].profile, avail[i].available + (u < h ? u : h));
		profiles += avail[i].available + (u < h ? u : h);
	}
	/* slurmctld drains a re-registering node whose total mig count differs from the one it
	 * first registered while jobs use them ("count changed and jobs are using them"): the
	 * reserve type absorbs every change, so the total never moves. */
	if (gres_has(&total, RESERVE)) {
		if (sum - profiles < 0)
			say("node %s: the %s count is too small to keep the total (%ld) while the profiles need "
			    "%ld: raise it in slurm.conf and gres.conf",
			    cfg->node, RESERVE, sum, profiles);
		else
			gres_put(&want, RESERVE, sum - profiles);
	}
	if (gres_equal(&want, &total))
		return rc;
	char before[4096], after[4096];
	gres_format(&total, before, sizeof(before));
	gres_format(&want, after, sizeof(after));
	update_node_msg_t msg;
	slurm_init_update_node_msg(&msg);
	char node[sizeof(cfg->node)];
	snprintf(node, sizeof(node), "%s", cfg->node);
	msg.node_names = node;
	msg.gres = after;
	if (slurm_update_node(&msg) != SLURM_SUCCESS) {
		say("cannot set node %s's gres to %s: %s", cfg->node, after, slurm_strerror(errno));
		return -1;
	}
	say("node %s: gres %s -> %s", cfg->node, before, after);
	return rc;
}

static int pass(const struct config *cfg)
{
	static struct am_part parts[MAX_PARTS];
	size_t n = 0;
	char err[1024];
	job_info_msg_t *jobs = NULL;
	struct gres_set held;

	if (am_list(cfg->mount, 0, 0, parts, MAX_PARTS, &n, err, sizeof(err)) < 0) {
		say("%s", err);
		return -1;
	}
	if (slurm_load_jobs((time_t)0, &jobs, SHOW_ALL) != SLURM_SUCCESS || !jobs) {
		say("cannot read the jobs from slurmctld (%s): nothing reclaimed this pass", slurm_strerror(errno));
		return -1;
	}
	reclaim_dead(cfg, parts, n, jobs, &held);
	slurm_free_job_info_msg(jobs);
	return push_counts(cfg, &held);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: accelfs-slurm-sync [--mount=DIR] [--node=NAME] [--interval=SECONDS] [--once]\n"
	           "  --mount     the accelfs mount (default /accel)\n"
	           "  --node      this node's Slurm name (default: the short hostname)\n"
	           "  --interval  seconds between passes (default 1)\n"
	           "  --once      one pass, then exit: 0 when it succeeded\n"
	           "  --help, --version\n");
}

static int parse_options(int argc, char **argv, struct config *cfg)
{
	static const struct option opts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "node", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "once", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			cfg->mount = optarg;
			break;
		case 'n':
			snprintf(cfg->node, sizeof(cfg->node), "%s", optarg);
			break;
		case 'o':
			cfg->once = 1;
			break;
		case 'i':
			cfg->interval = strtod(optarg, &end);
			if (*end || end == optarg || cfg->interval < 0.05 || cfg->interval > 3600) {
				fprintf(stderr, "accelfs-slurm-sync: --interval=%s: seconds from 0.05 to 3600\n",
				        optarg);
				usage(stderr);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("accelfs-slurm-sync %s\n", ACCELFS_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "accelfs-slurm-sync: unexpected argument %s\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	if (!cfg->node[0]) {
		if (gethostname(cfg->node, sizeof(cfg->node)) < 0) {
			fprintf(stderr, "accelfs-slurm-sync: cannot read the hostname: %s; pass --node\n",
			        strerror(errno));
			return -1;
		}
		cfg->node[strcspn(cfg->node, ".")] = '\0'; /* slurmd's default node name */
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg = { .mount = "/accel", .interval = 1.0 };
	struct stat st;
	if (parse_options(argc, argv, &cfg) < 0)
		return 2;
	char probe[4096];
	snprintf(probe, sizeof(probe), "%s/mig", cfg.mount);
	if (stat(probe, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "accelfs-slurm-sync: %s is not an accelfs mount (no %s: %s): start accelfs first\n",
		        cfg.mount, probe, strerror(errno));
		return 1;
	}
	slurm_init(NULL);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (cfg.once) {
		int rc = pass(&cfg);
		slurm_fini();
		return rc ? 1 : 0;
	}
	say("watching %s for node %s every %.2fs", cfg.mount, cfg.node, cfg.interval);
	while (!stopping) {
		pass(&cfg);
		struct timespec ts = { (time_t)cfg.interval, (long)((cfg.interval - (long)cfg.interval) * 1e9) };
		while (!stopping && nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	say("stopped");
	slurm_fini();
	return 0;
}
