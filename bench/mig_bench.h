/* SPDX-License-Identifier: MIT */
/*
 * mig-bench's parts (bench/mig_bench.c says what it measures): the mounts
 * it runs against (mig_bench_mounts.c), the operations, statistics,
 * table, call counts and carver threads the figures are made of
 * (mig_bench_ops.c, whose names start with mb_), and figure 7, a full node
 * (mig_bench_full.c).
 */
#ifndef ACCEL_MIG_BENCH_H
#define ACCEL_MIG_BENCH_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10
#define RECORD_BYTES 500
#define MAX_FUNCS 128

struct mnt {
	const char *label;
	char state[PATH_MAX]; /* accelfs only */
	char dir[PATH_MAX];
	bool mounted;
	bool accelfs;
	pid_t pid; /* accelfs: the daemon, read from its pid file */
};

struct stats {
	double mean, p50, p99; /* microseconds */
};

struct op {
	void (*fn)(const struct op *);
	const char *a, *b;
	double *part1, *part2; /* optional: component times of the sample, microseconds */
};

struct row {
	char fig[4], what[64], ours[24], base[24], ratio[16], goal[28], met[6];
};

struct calls {
	bool ok;
	unsigned n;
	char fn[MAX_FUNCS][64];
	double count[MAX_FUNCS];
};

struct carver {
	pthread_t thread;
	const char *dir, *job;
	unsigned limit; /* 0: until stop */
	bool baseline;  /* the carve baseline's work instead: bare FUSE mkdir+rmdir and three durable records */
	volatile bool stop;
	volatile unsigned done;
	int err;
	char what[PATH_MAX + 64];
};

extern const char *accelfs_path, *smi_path, *bare_path;
extern const char *poll_interval;
extern unsigned cycles, reads;
extern int bare_entries; /* -1: as many as the profile directory holds */
extern char base[PATH_MAX];
extern char runtime[PATH_MAX];
extern struct mnt bare, node, node4, node64, node64e, node64f;
extern struct mnt *const all_mounts[];
void unmount_all(bool wait_for_daemons);
void unmount_mnt(struct mnt *m, bool wait_for_daemon);
void figure_full_node(const char *topology, const char *bare_status, double *sa, double *sb);
/* Figures 8 and 9 (mig_bench_fresh.c): a read beside a busy rmdir on card; a watcher of m's node.json. */
void figure_busy_card(const char *reader_dir, const char *status_path, unsigned card, double *sa, double *sb);
void figure_watcher(const struct mnt *m, unsigned jobs);
void on_signal(int sig);
void cleanup(void);
void fail(const char *fmt, ...);
void remove_tree(const char *path);
int run_wait(char *const argv[]);
double now(void);
void wait_for_path(const char *path, double seconds);
void mount_accelfs(struct mnt *m, const char *name, const char *topology);
void mount_bare(unsigned entries, size_t status_bytes);
void write_topology(const char *path, unsigned cards);
void first_profile(const struct mnt *m, const char *card, char *out, size_t len);
size_t mb_op_read(const char *path);
unsigned mb_op_list(const char *path);
void mb_op_cycle(const char *dir, const char *job);
extern char mb_records_dir[PATH_MAX], mb_record_path[PATH_MAX + 32];
extern char mb_record_made[RECORD_BYTES], mb_record_removing[RECORD_BYTES];
void mb_settle(void);
struct stats mb_stats_of(const double *v, unsigned n);
void mb_do_read(const struct op *o);
void mb_do_list(const struct op *o);
void mb_do_cycle(const struct op *o);
void mb_do_bare_cycle_records(const struct op *o);
void mb_sample_pair(const struct op *a, double *sa, const struct op *b, double *sb, unsigned n);
struct row *mb_add_row(const char *fig, const char *what);
void mb_fmt_us(char *out, size_t len, double us);
void mb_row_time(const char *fig, const char *what, double ours, double base_us, double goal_max);
void mb_print_table(void);
double mb_calls_total(const struct calls *c);
extern const char *const mb_families[2];
void mb_count_calls(const struct mnt *m, unsigned n_fam, void (*what)(const char *, const char *), const char *a1,
                    const char *a2, unsigned k, struct calls per[2]);
void mb_read_as_call(const char *path, const char *unused);
void mb_calls_row(const char *fig, const char *what, const struct calls *c, const char *goal, double max);
extern char mb_breakdown[8192];
void mb_note_breakdown(const char *label, const struct calls *c);
void mb_carver_start(struct carver *c, const char *dir, const char *job, unsigned limit, bool baseline);
void mb_carver_join(struct carver *c);

#endif
