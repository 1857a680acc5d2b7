/* SPDX-License-Identifier: MIT */
/*
 * A Slurm task's confinement, outside Slurm: what the SPANK plugin's
 * task_init_privileged does (devcg_confine), in this process, then an open of
 * each path, one line each: "PATH ok" or "PATH <errno name>".  The slurm
 * suite (test_devcg.py) runs it in a cgroup laid out as Slurm's.
 *
 *   devcg_task --job=ID --task=N [--mount=DIR] [--partitions] [--cgroup=auto|v1|v2]
 *              [--proc-devices=FILE]... [--others=CGROUP:MAJOR:MINOR:override|multi]... [--] PATH...
 *
 * --others stands for a program Slurm's cgroup/v2 plugin (BPF_F_ALLOW_OVERRIDE,
 * on the job's and the step's cgroups) or systemd (BPF_F_ALLOW_MULTI) attaches
 * above the task: before confining, it attaches to the cgroup v2 directory
 * CGROUP a device program that keeps MAJOR from everyone but MAJOR:MINOR.
 * After confining, "cgroup: REL" says where the task is (the unified
 * hierarchy's line of /proc/self/cgroup).
 *
 * Exit 0 when confined (whatever the opens answered), 1 with "confine: WHY" on
 * stderr when devcg_confine refused, 2 on a usage error.
 */
#include "devcg.h"
#include "devcg_bpf.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *errno_name(int e)
{
	switch (e) {
	case EPERM:
		return "EPERM";
	case ENXIO:
		return "ENXIO";
	case ENODEV:
		return "ENODEV";
	case ENOENT:
		return "ENOENT";
	case EACCES:
		return "EACCES";
	default:
		return "other";
	}
}

/* CGROUP:MAJOR:MINOR:override|multi, attached as Slurm or systemd would. */
static int attach_other(char *spec)
{
	static struct devcg_rules r;
	char err[2048], mode[16];
	char *colon = strchr(spec, ':');
	memset(&r, 0, sizeof(r));
	if (!colon || sscanf(colon + 1, "%u:%u:%15s", &r.allow[0].major, &r.allow[0].minor, mode) != 3) {
		fprintf(stderr, "devcg_task: --others=CGROUP:MAJOR:MINOR:override|multi\n");
		return -1;
	}
	*colon = '\0';
	r.majors[0] = r.allow[0].major;
	r.nmajors = r.nallow = 1;
	int prog = devcg_bpf_load(&r, err, sizeof(err));
	int cg = open(spec, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cg;
	attr.attach_bpf_fd = (uint32_t)prog;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = strcmp(mode, "multi") ? BPF_F_ALLOW_OVERRIDE : BPF_F_ALLOW_MULTI;
	if (prog < 0 || cg < 0 || syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr)) < 0) {
		fprintf(stderr, "others: %s: %s\n", spec, prog < 0 ? err : strerror(errno));
		return -1;
	}
	close(cg);
	close(prog);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "job", required_argument, NULL, 'j' },    { "task", required_argument, NULL, 't' },
		{ "mount", required_argument, NULL, 'm' },  { "partitions", no_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, 'c' }, { "proc-devices", required_argument, NULL, 'd' },
		{ "others", required_argument, NULL, 'o' }, { NULL, 0, NULL, 0 },
	};
	char others[8][1024];
	int nothers = 0;
	struct devcg_config cfg = { .mount = "/accel", .mode = DEVCG_AUTO };
	unsigned long job = 0, task = 0;
	int partitions = 0, c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			job = strtoul(optarg, NULL, 10);
			break;
		case 't':
			task = strtoul(optarg, NULL, 10);
			break;
		case 'm':
			cfg.mount = optarg;
			break;
		case 'p':
			partitions = 1;
			break;
		case 'c':
			if (devcg_parse_mode(optarg, &cfg.mode) < 0) {
				fprintf(stderr, "devcg_task: --cgroup=%s: auto, v1 or v2\n", optarg);
				return 2;
			}
			break;
		case 'd':
			if (cfg.nproc_devices == DEVCG_MAX_PROC_DEVICES) {
				fprintf(stderr, "devcg_task: at most %d --proc-devices\n", DEVCG_MAX_PROC_DEVICES);
				return 2;
			}
			cfg.proc_devices[cfg.nproc_devices++] = optarg;
			break;
		case 'o':
			if (nothers == 8)
				return 2;
			snprintf(others[nothers++], sizeof(others[0]), "%s", optarg);
			break;
		default:
			return 2;
		}
	}
	if (!job) {
		fprintf(stderr, "devcg_task: --job=ID is needed\n");
		return 2;
	}
	char err[2048];
	for (int i = 0; i < nothers; i++)
		if (attach_other(others[i]) < 0)
			return 1;
	if (devcg_confine(&cfg, (uint32_t)job, (uint32_t)task, partitions, err, sizeof(err)) < 0) {
		fprintf(stderr, "confine: %s\n", err);
		return 1;
	}
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3))
			printf("cgroup: %s", line + 3);
	if (f)
		fclose(f);
	for (int i = optind; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		printf("%s %s\n", argv[i], fd >= 0 ? "ok" : errno_name(errno));
		if (fd >= 0)
			close(fd);
	}
	return 0;
}
