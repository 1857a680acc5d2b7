/* SPDX-License-Identifier: MIT */
/*
 * accelfs's SPANK plugin: --accel-mig=[DEVICE/]PROFILE[:COUNT][,...] carves
 * the job's MIG partitions through the accelfs mount when the job starts on
 * a node, hands their UUIDs to every task, confines every task's device
 * cgroup to its own job's nodes, and gives the partitions back when the job
 * ends.  docs/slurm.md is the operator's and the user's side of it.
 *
 * A failed job prolog drains the whole node ("Prolog error"), so no hook of
 * the prolog or the epilog ever returns an error: a job that cannot get its
 * partitions is requeued (a batch job) or cancelled (an interactive one), or,
 * over its user's quota, fails in its first task; its steps refuse to start,
 * and the node stays up.
 *
 * Runs inside slurmd's helpers, which carry Slurm's own library: the few
 * API calls here (requeue, cancel, comment) resolve against it, so the
 * plugin does not link libslurm itself.
 */
#include "devcg.h"
#include "mig_jobs.h"
#include "usage_dbd.h"
#include "usage_record.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h>

SPANK_PLUGIN(accelfs, 1);

#define PLUG "accelfs"

static char mount_path[1024] = "/accel";
/* How tasks are confined (devcg.h): mount= and the plugstack's proc_devices= and cgroup=. */
static char proc_devices[DEVCG_MAX_PROC_DEVICES][1024];
static struct devcg_config devcg = { .mount = mount_path };
static char *opt_value; /* what --accel-mig said, when the option callback saw it */
/* Set by user_init in a batch step's slurmstepd whose partitions are missing: its tasks (forked
 * from that slurmstepd) refuse to start in task_init, saying why (the prolog's AdminComment). */
static int refuse_tasks;
static char refuse_why[640];

static int opt_cb(int val, const char *optarg, int remote)
{
	struct am_request req;
	char err[512];
	(void)val;
	/* Checked where the user typed it (sbatch, srun, salloc refuse with the reason) and
	 * again wherever the job runs. */
	if (am_parse_request(optarg, &req, err, sizeof(err)) < 0) {
		slurm_error(PLUG ": %s", err);
		return -1;
	}
	free(opt_value);
	opt_value = strdup(optarg);
	return opt_value ? 0 : -1;
}

static struct spank_option accel_mig_opt = {
	"accel-mig",
	"[DEVICE/]PROFILE[:COUNT][,...]",
	"MIG partitions carved for the job on each of its nodes by accelfs (e.g. 4g.48gb:2, "
	"gpu0/1g.18gb, 1g.18gb,3g.71gb)",
	1,
	0,
	opt_cb,
};

/* Every hook is handed the plugstack arguments: the job prolog and epilog run in processes
 * where slurm_spank_init was never called. */
static int parse_args(int ac, char **av)
{
	devcg.nproc_devices = 0;
	devcg.mode = DEVCG_AUTO;
	for (int i = 0; i < ac; i++) {
		if (!strncmp(av[i], "mount=", 6) && av[i][6] == '/') {
			snprintf(mount_path, sizeof(mount_path), "%s", av[i] + 6);
		} else if (!strncmp(av[i], "proc_devices=", 13) && av[i][13] == '/' &&
		           devcg.nproc_devices < DEVCG_MAX_PROC_DEVICES) {
			snprintf(proc_devices[devcg.nproc_devices], sizeof(proc_devices[0]), "%s", av[i] + 13);
			devcg.proc_devices[devcg.nproc_devices] = proc_devices[devcg.nproc_devices];
			devcg.nproc_devices++;
		} else if (strncmp(av[i], "cgroup=", 7) || devcg_parse_mode(av[i] + 7, &devcg.mode) < 0) {
			slurm_error(PLUG ": unknown argument '%s' in plugstack.conf (known: mount=/ABSOLUTE/PATH, "
			                 "proc_devices=/ABSOLUTE/PATH (at most %d), cgroup=auto|v1|v2)",
			            av[i], DEVCG_MAX_PROC_DEVICES);
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (parse_args(ac, av) < 0)
		return -1;
	/* Registered here, not in a spank_options[] table: 22.05 offers a table's options to
	 * the job prolog's context only when they are registered. */
	if (spank_option_register(sp, &accel_mig_opt) != ESPANK_SUCCESS) {
		slurm_error(PLUG ": cannot register --accel-mig");
		return -1;
	}
	return 0;
}

/* The --accel-mig value of this job, or NULL when it asked for none. */
static const char *requested(spank_t sp)
{
	char *v = NULL;
	if (spank_option_getopt(sp, &accel_mig_opt, &v) == ESPANK_SUCCESS && v)
		return v;
	return opt_value;
}

static uint32_t job_id(spank_t sp)
{
	uint32_t id = 0;
	if (spank_get_item(sp, S_JOB_ID, &id) == ESPANK_SUCCESS && id)
		return id;
	const char *env = getenv("SLURM_JOB_ID");
	return env ? (uint32_t)strtoul(env, NULL, 10) : 0;
}

/*
 * The job's user and primary group, who pays for its partitions: from
 * Slurm (S_JOB_UID, S_JOB_GID), else the prolog's environment, else the
 * user's passwd entry for the group.  0:0 (root carves, and pays) when
 * Slurm says nothing.
 */
static void job_user(spank_t sp, uid_t *uid, gid_t *gid)
{
	const char *env;
	struct passwd *pw;
	bool have_gid = false;

	*uid = 0;
	*gid = 0;
	if (spank_get_item(sp, S_JOB_UID, uid) != ESPANK_SUCCESS && (env = getenv("SLURM_JOB_UID")))
		*uid = (uid_t)strtoul(env, NULL, 10);
	if (spank_get_item(sp, S_JOB_GID, gid) == ESPANK_SUCCESS)
		have_gid = true;
	else if ((env = getenv("SLURM_JOB_GID"))) {
		*gid = (gid_t)strtoul(env, NULL, 10);
		have_gid = true;
	}
	if (!have_gid && *uid && (pw = getpwuid(*uid)))
		*gid = pw->pw_gid;
}

/* Whether slurmctld still shows the job RUNNING (1), not (0), or cannot say (-1). */
static int still_running(uint32_t jobid)
{
	job_info_msg_t *info = NULL;
	if (slurm_load_job(&info, jobid, SHOW_ALL) != SLURM_SUCCESS || !info)
		return -1;
	int running = 0;
	for (uint32_t i = 0; i < info->record_count; i++)
		if (info->job_array[i].job_id == jobid)
			running = (info->job_array[i].job_state & JOB_STATE_BASE) == JOB_RUNNING &&
			          !(info->job_array[i].job_state & (JOB_REQUEUE | JOB_COMPLETING));
	slurm_free_job_info_msg(info);
	return running;
}

/*
 * After a requeue or cancel was accepted: do not return from the prolog
 * (which lets slurmd launch the batch step it holds back) until slurmctld
 * shows the job no longer running, plus a moment for its terminate message
 * to reach this slurmd and revoke the job's credential, so that slurmd drops
 * the batch launch ("already killed") instead of starting a step that must
 * refuse.  Bounded: the prolog never hangs the node.
 */
static void wait_not_running(uint32_t jobid)
{
	const long step_ms = 200, limit_ms = 20000;
	struct timespec ts = { 0, step_ms * 1000000L };
	long waited = 0;
	int r = 1;
	while (waited < limit_ms && (r = still_running(jobid)) != 0) {
		nanosleep(&ts, NULL);
		waited += step_ms;
	}
	if (r != 0) {
		slurm_error(PLUG ": job %u still shows as running %ld s after its requeue/cancel; its steps "
		                 "will refuse to start",
		            jobid, limit_ms / 1000);
		return;
	}
	sleep(1);
}

/* Whether the job is a batch job (1), not (0), or slurmctld cannot say (-1). */
static int is_batch(uint32_t jobid)
{
	job_info_msg_t *info = NULL;
	if (slurm_load_job(&info, jobid, SHOW_ALL) != SLURM_SUCCESS || !info)
		return -1;
	int batch = -1;
	for (uint32_t i = 0; i < info->record_count; i++)
		if (info->job_array[i].job_id == jobid)
			batch = info->job_array[i].batch_flag != 0;
	slurm_free_job_info_msg(info);
	return batch;
}

/* The job's AdminComment (what the prolog said), "" when slurmctld cannot say. */
static void admin_comment(uint32_t jobid, char *out, size_t len)
{
	job_info_msg_t *info = NULL;
	out[0] = '\0';
	if (slurm_load_job(&info, jobid, SHOW_ALL) != SLURM_SUCCESS || !info)
		return;
	for (uint32_t i = 0; i < info->record_count; i++)
		if (info->job_array[i].job_id == jobid && info->job_array[i].admin_comment)
			snprintf(out, len, "%s", info->job_array[i].admin_comment);
	slurm_free_job_info_msg(info);
}

/*
 * The job cannot have its partitions here.  Never fail the prolog: that
 * would drain the node for everyone.
 *
 * A placement that is gone (ENOSPC, EBUSY, ...) is a race Slurm's counts
 * will settle: requeue a batch job (it runs again once accelfs-slurm-sync's
 * counts say it fits) and cancel one that cannot be requeued.
 *
 * Over the user's quota (EDQUOT) the job would be refused again on every
 * node and requeued again and again: a batch job is left to start and fails
 * there instead (its steps refuse to run: user_init, task_init), with the
 * quota's sentence in its AdminComment and its error output; an interactive
 * job is cancelled with the same AdminComment.
 */
static void give_up(uint32_t jobid, int e, const char *why)
{
	job_desc_msg_t desc;
	char comment[600];

	slurm_error(PLUG ": job %u: %s", jobid, why);
	slurm_init_job_desc_msg(&desc);
	desc.job_id = jobid;
	snprintf(comment, sizeof(comment), "accelfs: %s", why);
	desc.admin_comment = comment;
	if (slurm_update_job(&desc) != SLURM_SUCCESS)
		slurm_info(PLUG ": job %u: cannot set its admin comment: %s", jobid, slurm_strerror(errno));
	if (e == EDQUOT && is_batch(jobid) == 1) {
		slurm_info(PLUG ": job %u fails, not requeued: its user is over the quota on this node", jobid);
		return;
	}
	if (e != EDQUOT && slurm_requeue(jobid, 0) == SLURM_SUCCESS) {
		slurm_info(PLUG ": job %u requeued: its MIG partitions do not fit on this node now", jobid);
		wait_not_running(jobid);
		return;
	}
	int rerr = e == EDQUOT ? EDQUOT : errno;
	if (slurm_kill_job(jobid, SIGKILL, 0) == SLURM_SUCCESS) {
		slurm_info(PLUG ": job %u cancelled (%s)", jobid,
		           e == EDQUOT ? "over its user's quota" : slurm_strerror(rerr));
		wait_not_running(jobid);
		return;
	}
	slurm_error(PLUG ": job %u: neither requeue (%s) nor cancel (%s) was accepted; its steps will refuse "
	                 "to start",
	            jobid, slurm_strerror(rerr), slurm_strerror(errno));
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	const char *want = requested(sp);
	uint32_t jobid = job_id(sp);
	struct am_request req;
	char err[2048];

	if (parse_args(ac, av) < 0)
		return 0;

	if (!want)
		return 0;
	if (!jobid) {
		slurm_error(PLUG ": job prolog without a job id; nothing carved");
		return 0;
	}
	if (am_parse_request(want, &req, err, sizeof(err)) < 0) {
		give_up(jobid, EINVAL, err);
		return 0;
	}
	uid_t uid;
	gid_t gid;
	job_user(sp, &uid, &gid);
	int e = am_carve(mount_path, jobid, uid, gid, &req, err, sizeof(err));
	if (e) {
		give_up(jobid, e, err);
		return 0;
	}
	slurm_info(PLUG ": job %u: carved %u MIG partition(s) for --accel-mig=%s under %s", jobid, req.total, want,
	           mount_path);
	am_usage_prime(mount_path); /* the usage the epilog records starts now (usage_record.h) */
	return 0;
}

/* The name slurmd knows this node by (the job's SLURMD_NODENAME; slurmd's default, the short hostname, else). */
static void node_name(spank_t sp, char *out, size_t len)
{
	if (spank_getenv(sp, "SLURMD_NODENAME", out, (int)len) == ESPANK_SUCCESS && out[0])
		return;
	if (gethostname(out, len))
		snprintf(out, len, "unknown");
	out[len - 1] = '\0';
	out[strcspn(out, ".")] = '\0';
}

/*
 * The partitions' use, into the log and the job's AdminComment (sacct -o
 * AdminComment), as `scontrol update job=<id> AdminComment=<text>` would:
 * this node's entries replace its earlier ones, the other nodes' and any
 * text before them stay (usage_record.h).  Two nodes ending steps at the
 * same instant may each miss the other's newest entry; their next step's
 * end, or the batch step's, writes it again.  A job Slurm ended itself
 * (scancel, its time limit) has finished before its steps end and
 * slurmctld refuses the comment: slurmdbd's copy gets it (usage_dbd.h).
 */
static void record_usage(spank_t sp, uint32_t jobid)
{
	job_desc_msg_t desc;
	job_info_msg_t *now = NULL;
	char node[256], mine[4096], merged[8192], cluster[256] = "", why[512];

	node_name(sp, node, sizeof(node));
	if (am_usage_record(mount_path, jobid, node, mine, sizeof(mine)) <= 0)
		return;
	slurm_info(PLUG ": job %u: %s", jobid, mine);
	if (slurm_load_job(&now, jobid, SHOW_DETAIL) != SLURM_SUCCESS)
		now = NULL; /* the record alone, then */
	if (am_usage_merge(now && now->record_count ? now->job_array[0].admin_comment : NULL, node, mine, merged,
	                   sizeof(merged)))
		slurm_info(PLUG ": job %u: its admin comment is too long to keep: the record replaces it", jobid);
	struct am_dbd_job dbd = { .jobid = jobid, .cluster = cluster };
	if (now && now->record_count) {
		snprintf(cluster, sizeof(cluster), "%s", now->job_array[0].cluster ? now->job_array[0].cluster : "");
		dbd.array_job_id = now->job_array[0].array_job_id;
		dbd.array_task_id = now->job_array[0].array_task_id;
	}
	if (now)
		slurm_free_job_info_msg(now);
	slurm_init_job_desc_msg(&desc);
	desc.job_id = jobid;
	desc.admin_comment = merged;
	if (slurm_update_job(&desc) == SLURM_SUCCESS)
		return;
	if (errno != ESLURM_JOB_FINISHED) {
		slurm_info(PLUG ": job %u: cannot set its admin comment: %s", jobid, slurm_strerror(errno));
		return;
	}
	if (am_usage_dbd_record(&dbd, node, mine, why, sizeof(why)))
		slurm_info(PLUG ": job %u: finished before its step: the record is in this log alone (%s)", jobid, why);
	else
		slurm_info(PLUG ": job %u: finished before its step: the record is in slurmdbd's copy alone", jobid);
}

/*
 * A step ends (in slurmstepd, as root, while the job still runs: slurmctld
 * refuses an AdminComment once the job has finished, so not the epilog):
 * what the job's partitions used so far, over its life.  The batch step
 * ends last in a batch job; an interactive job keeps its last step's.
 */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	uint32_t jobid, stepid = 0;

	if (!spank_remote(sp) || parse_args(ac, av) < 0 || !requested(sp))
		return 0;
	jobid = job_id(sp);
	if (!jobid || spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS || stepid == SLURM_EXTERN_CONT)
		return 0;
	record_usage(sp, jobid);
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	uint32_t jobid = job_id(sp);
	char err[2048] = "";

	if (parse_args(ac, av) < 0)
		return 0;

	if (!jobid)
		return 0;
	/* Every job's epilog looks, option or not: the name says whose a partition is, and a
	 * requeued job's old partitions must go even if this run asked differently. */
	int left = am_reclaim_job(mount_path, jobid, 25, err, sizeof(err));
	if (left)
		slurm_error(PLUG ": job %u: %d MIG partition(s) still there after the epilog (%s); "
		                 "accelfs-slurm-sync gives them back once they are free",
		            jobid, left, err);
	return 0;
}

/* "a,b,c" of the UUIDs of one family ("ppu" or "gpu"; NULL: all), in carve order. */
static void uuid_list(const struct am_part *p, size_t n, const char *family, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (family && strncmp(p[i].device, family, 3))
			continue;
		int w = snprintf(out + used, len - used, "%s%s", used ? "," : "", p[i].uuid);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	const char *want = requested(sp);
	uint32_t jobid = job_id(sp);
	struct am_request req;
	struct am_part parts[AM_MAX_PER_JOB];
	char err[2048], list[AM_MAX_PER_JOB * 100], names[AM_MAX_PER_JOB * AM_NAME_MAX];
	size_t n = 0;

	if (parse_args(ac, av) < 0)
		return -1;

	if (!want || !jobid)
		return 0;
	if (am_parse_request(want, &req, err, sizeof(err)) < 0) {
		slurm_error(PLUG ": %s", err);
		return -1;
	}
	if (am_list(mount_path, jobid, 1, parts, AM_MAX_PER_JOB, &n, err, sizeof(err)) < 0) {
		slurm_error(PLUG ": job %u: %s", jobid, err);
		return -1;
	}
	size_t ready = 0;
	for (size_t i = 0; i < n; i++)
		ready += parts[i].uuid[0] != '\0';
	if (ready < req.total) {
		/* The prolog could not carve and has requeued or cancelled the job; a step that
		 * starts anyway must not run without the partitions it asked for. */
		uint32_t stepid = 0;
		slurm_error(PLUG ": job %u has %zu of its %u MIG partition(s) for --accel-mig=%s on this node; "
		                 "the step does not start",
		            jobid, ready, req.total, want);
		if (spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS && stepid == SLURM_BATCH_SCRIPT) {
			/* A batch step whose user_init fails ends with a launch error, and slurmctld
			 * drains the node for it ("batch job complete failure").  Refuse its tasks
			 * instead (task_init): the script exits 1, the job fails, the node stays up. */
			refuse_tasks = 1;
			admin_comment(jobid, refuse_why, sizeof(refuse_why));
			return 0;
		}
		return -1;
	}
	uuid_list(parts, n, "gpu", list, sizeof(list));
	if (!list[0])
		uuid_list(parts, n, "ppu", list, sizeof(list));
	/* NVIDIA's runtime and T-Head's PPU SDK both read CUDA_VISIBLE_DEVICES; a job holding both
	 * families gives it the NVIDIA UUIDs and finds the PPUs' in PPU_VISIBLE_DEVICES. */
	spank_setenv(sp, "CUDA_VISIBLE_DEVICES", list, 1);
	uuid_list(parts, n, "gpu", list, sizeof(list));
	if (list[0])
		spank_setenv(sp, "NVIDIA_VISIBLE_DEVICES", list, 1);
	uuid_list(parts, n, "ppu", list, sizeof(list));
	if (list[0])
		spank_setenv(sp, "PPU_VISIBLE_DEVICES", list, 1);
	size_t used = 0;
	names[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(names + used, sizeof(names) - used, "%s%s/mig/%s/%s", i ? "," : "", mount_path,
		                 parts[i].profile, parts[i].name);
		if (w < 0 || (size_t)w >= sizeof(names) - used)
			break;
		used += (size_t)w;
	}
	spank_setenv(sp, "ACCELFS_MIG_JOBS", names, 1);
	return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	uint32_t jobid = job_id(sp), taskid = 0;
	char err[2048];

	if (parse_args(ac, av) < 0)
		return -1;

	if (spank_get_item(sp, S_TASK_ID, (int *)&taskid) != ESPANK_SUCCESS) {
		slurm_error(PLUG ": job %u: no task id in task_init_privileged", jobid);
		return -1;
	}
	/* Every task is confined, with --accel-mig or without: a job that asked for nothing
	 * may open no one's partition either, and that needs nothing from accelfs (the host's
	 * drivers name their majors), so accelfs being down stops only jobs that asked. */
	int with_partitions = requested(sp) != NULL;
	if (devcg_confine(&devcg, jobid, taskid, with_partitions, err, sizeof(err)) < 0) {
		slurm_error(PLUG ": job %u task %u: %s", jobid, taskid, err);
		return -1;
	}
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (refuse_tasks) {
		/* The task's stderr is the job's error output by now: the user reads why there too. */
		const char *why = refuse_why[0] ? refuse_why : "accelfs: requeued or cancelled by the prolog";
		fprintf(stderr,
		        "%s: job %u: its MIG partitions are missing on this node (%s); the batch script does not run\n",
		        PLUG, job_id(sp), why);
		slurm_error(PLUG
		            ": job %u: its MIG partitions are missing on this node (%s); the batch script does not run",
		            job_id(sp), why);
		return -1;
	}
	return 0;
}
