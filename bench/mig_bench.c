/* SPDX-License-Identifier: MIT */
/*
 * mig-bench: every figure of the "Speed" issue (docs/performance.md), each
 * against its baseline measured in this same run, as a ratio.  As root it
 * mounts, each over a state directory and mountpoint of its own in one
 * temporary directory (so the durable-record baseline runs on the
 * filesystem the daemon's records live on; the simulated hardware and the
 * CDI specs are kept in tmpfs, as on a real node):
 *
 *   bare     bench/bare_fuse.c: the bare low-level FUSE floor (d/status
 *            with keep_cache, 1 s timeouts, in-memory mkdir/rmdir in d)
 *   node     accelfs --sim: the built-in node (16 PPUs, one H200)
 *   4, 64    accelfs --sim on generated T-Head topologies of 4 and 64 cards
 *
 * and measures:
 *
 *   1  driver calls per mkdir+rmdir on an idle card, per family, from the
 *      simulators' own counters (accel-smi sim calls): on the card, on the
 *      other family's cards, and how the count grows from 4 to 64 cards
 *   2  mkdir+rmdir of a job against bare FUSE mkdir+rmdir plus three
 *      durable record operations (write+fsync+rename+fsync(dir) of ~500
 *      bytes twice, unlink+fsync(dir) once) in the state filesystem
 *   3  carve cycle and status read on the 64-card node against the 4-card one
 *   4  open+read+close of a job's status against bare d/status; listing a
 *      profile directory against listing bare d (as many entries); p50, p99
 *   5  vram and slot swap: the dies benchmark (meson test --benchmark dies)
 *   6  p99 of a status read while another thread carves in a loop on another
 *      card, against the idle p99, and against the p99 while a thread runs
 *      the carve baseline's work in a loop (bare FUSE mkdir+rmdir and the
 *      three durable records: the same load on the machine, no engine);
 *      two carvers on two cards against one
 *   7  mkdir+rmdir on a 64-card node holding 126 jobs (half made and all read
 *      through the node-level mig/ too) against the same cycle on an empty
 *      64-card node, interleaved; a status read on the full node against
 *      bare d/status; what the full node's CDI spec files weigh
 *      (mig_bench_full.c)
 *   8  p99 of a status read while an rmdir of another job on the same card
 *      retries busy, against the idle p99 (mig_bench_fresh.c)
 *   9  driver calls per second of a poll() watcher on the full node's
 *      node.json (mig_bench_fresh.c)
 *
 * Operations of a pair are interleaved in rounds, so that drift in the
 * machine falls on both sides.  Nothing is asserted about time: the exit
 * status is 0 unless something failed functionally (a mount, a mkdir, a
 * read).  Every accelfs runs with --poll-interval=600 unless told otherwise,
 * so that the figures are the operations' own (and the call counts exact),
 * not a background pass of the poller.
 *
 *   mig-bench ACCELFS ACCEL_SMI BARE_FUSE [CYCLES] [--dir=DIR] [--poll-interval=SEC]
 *
 * (or the paths in $ACCELFS, $ACCEL_SMI, $BARE_FUSE).  CYCLES (default 200)
 * is the number of carve cycles per side of a figure; reads are 20x that.
 */
#include "mig_bench.h"

/* ---- main ------------------------------------------------------------- */

static const char *fs_name(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf))
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:
		return "ext4";
	case 0x01021994:
		return "tmpfs";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x794c7630:
		return "overlayfs";
	default:
		return "other";
	}
}

static int usage(const char *prog)
{
	fprintf(stderr,
	        "usage: %s ACCELFS ACCEL_SMI BARE_FUSE [CYCLES] [--dir=DIR] [--poll-interval=SEC] [--entries=N]\n"
	        "       (or the three paths in $ACCELFS, $ACCEL_SMI, $BARE_FUSE)\n",
	        prog);
	return 2;
}

int main(int argc, char **argv)
{
	const char *paths[3] = { getenv("ACCELFS"), getenv("ACCEL_SMI"), getenv("BARE_FUSE") };
	const char *tmp = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
	unsigned n_paths = 0;
	char ppu_prof[PATH_MAX], gpu_prof[PATH_MAX], prof4[PATH_MAX], prof64[PATH_MAX];
	char status_path[PATH_MAX + 64], status4[PATH_MAX + 64], status64[PATH_MAX + 64], reader_dir[PATH_MAX + 64];
	char storm_prof[PATH_MAX], bare_d[PATH_MAX + 8], bare_status[PATH_MAX + 16], topo[PATH_MAX + 32];
	char when[64];
	double *sa, *sb, *sc, *p1, *p2, t_start = now();
	struct utsname un;
	size_t status_bytes;
	unsigned prof_entries;
	time_t t = time(NULL);

	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--dir=", 6))
			tmp = argv[i] + 6;
		else if (!strncmp(argv[i], "--poll-interval=", 16))
			poll_interval = argv[i] + 16;
		else if (!strncmp(argv[i], "--entries=", 10))
			bare_entries = atoi(argv[i] + 10);
		else if (argv[i][0] == '-')
			return usage(argv[0]);
		else if (n_paths < 3)
			paths[n_paths++] = argv[i];
		else if ((cycles = (unsigned)strtoul(argv[i], NULL, 10)) < 1)
			return usage(argv[0]);
	}
	if (!paths[0] || !paths[1] || !paths[2])
		return usage(argv[0]);
	accelfs_path = paths[0];
	smi_path = paths[1];
	bare_path = paths[2];
	reads = 20 * cycles;
	if (geteuid() != 0) {
		printf("mig-bench: needs root (it mounts FUSE filesystems and the simulators mknod): skipped\n");
		return 77;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);

	snprintf(base, sizeof(base), "%s/accelfs-mig-bench-XXXXXX", tmp);
	if (!mkdtemp(base)) {
		base[0] = '\0';
		fail("mkdtemp in %s: %s", tmp, strerror(errno));
	}
	snprintf(runtime, sizeof(runtime), "/dev/shm/accelfs-mig-bench-XXXXXX");
	if (!mkdtemp(runtime)) {
		runtime[0] = '\0';
		fail("mkdtemp in /dev/shm: %s", strerror(errno));
	}
	uname(&un);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	printf("mig-bench %s on %s (%s %s, %ld cores); %u carve cycles and %u reads per side\n", when, un.nodename,
	       un.sysname, un.release, sysconf(_SC_NPROCESSORS_ONLN), cycles, reads);
	printf("temporary directory %s (%s): every state directory, record and mountpoint\n", base, fs_name(base));
	printf("runtime directory %s (%s): the simulated hardware and the CDI specs\n", runtime, fs_name(runtime));
	printf("accelfs runs with --poll-interval=%s\n", poll_interval);

	/* records, topologies, mounts */
	snprintf(mb_records_dir, sizeof(mb_records_dir), "%s/records", base);
	snprintf(mb_record_path, sizeof(mb_record_path), "%s/bench-job.json", mb_records_dir);
	if (mkdir(mb_records_dir, 0755))
		fail("mkdir %s: %s", mb_records_dir, strerror(errno));
	memset(mb_record_made, 'm', sizeof(mb_record_made));
	memset(mb_record_removing, 'r', sizeof(mb_record_removing));
	mb_record_made[sizeof(mb_record_made) - 1] = mb_record_removing[sizeof(mb_record_removing) - 1] = '\n';

	mount_accelfs(&node, "node", NULL);
	first_profile(&node, "ppu1", reader_dir, sizeof(reader_dir));
	first_profile(&node, "ppu3", ppu_prof, sizeof(ppu_prof));
	first_profile(&node, "ppu5", storm_prof, sizeof(storm_prof));
	first_profile(&node, "gpu0", gpu_prof, sizeof(gpu_prof));
	/* a job to read: job "reader" on ppu1, left there for the whole run */
	snprintf(status_path, sizeof(status_path), "%s/reader", reader_dir);
	if (mkdir(status_path, 0755))
		fail("mkdir %s: %s", status_path, strerror(errno));
	snprintf(status_path, sizeof(status_path), "%s/reader/status", reader_dir);
	status_bytes = mb_op_read(status_path);
	prof_entries = mb_op_list(reader_dir) - 2;
	if (bare_entries < 0)
		bare_entries = prof_entries > 1 ? (int)prof_entries - 1 : 1; /* d: status + these */
	mount_bare((unsigned)bare_entries, status_bytes);
	snprintf(bare_d, sizeof(bare_d), "%s/d", bare.dir);
	snprintf(bare_status, sizeof(bare_status), "%s/d/status", bare.dir);

	snprintf(topo, sizeof(topo), "%s/topology-4.json", base);
	write_topology(topo, 4);
	mount_accelfs(&node4, "4", topo);
	snprintf(topo, sizeof(topo), "%s/topology-64.json", base);
	write_topology(topo, 64);
	mount_accelfs(&node64, "64", topo);
	first_profile(&node4, "ppu3", prof4, sizeof(prof4));
	first_profile(&node64, "ppu3", prof64, sizeof(prof64));
	{
		char p[PATH_MAX];
		first_profile(&node4, "ppu1", p, sizeof(p));
		snprintf(status4, sizeof(status4), "%s/reader", p);
		if (mkdir(status4, 0755))
			fail("mkdir %s: %s", status4, strerror(errno));
		snprintf(status4, sizeof(status4), "%s/reader/status", p);
		first_profile(&node64, "ppu1", p, sizeof(p));
		snprintf(status64, sizeof(status64), "%s/reader", p);
		if (mkdir(status64, 0755))
			fail("mkdir %s: %s", status64, strerror(errno));
		snprintf(status64, sizeof(status64), "%s/reader/status", p);
		mb_op_read(status4);
		mb_op_read(status64);
	}

	sa = calloc(reads, sizeof(double));
	sb = calloc(reads, sizeof(double));
	sc = calloc(reads, sizeof(double));
	p1 = calloc(reads, sizeof(double));
	p2 = calloc(reads, sizeof(double));
	if (!sa || !sb || !sc || !p1 || !p2)
		fail("out of memory");

	/* 1: driver calls */
	printf("1: driver calls\n");
	mb_settle();
	{
		unsigned k = cycles / 10 > 5 ? cycles / 10 : 5;
		struct calls on_ppu[2], on_gpu[2], per_read[2], c4[2], c64[2], first_ppu[2], first_gpu[2];
		struct row *r;

		/* the first carve on a card since the daemon started may read the card's catalogue */
		mb_count_calls(&node, 2, mb_op_cycle, ppu_prof, "bench-job", 1, first_ppu);
		mb_count_calls(&node, 2, mb_op_cycle, gpu_prof, "bench-job", 1, first_gpu);
		mb_count_calls(&node, 2, mb_op_cycle, ppu_prof, "bench-job", k, on_ppu);
		mb_count_calls(&node, 2, mb_op_cycle, gpu_prof, "bench-job", k, on_gpu);
		mb_op_cycle(prof4, "bench-job");
		mb_op_cycle(prof64, "bench-job");
		mb_count_calls(&node, 2, mb_read_as_call, status_path, NULL, k * 10, per_read);
		mb_count_calls(&node4, 1, mb_op_cycle, prof4, "bench-job", k, c4);
		mb_count_calls(&node64, 1, mb_op_cycle, prof64, "bench-job", k, c64);
		mb_calls_row("1", "driver calls per mkdir+rmdir, PPU (ppu3, idle)", &on_ppu[0], "<= 30", 30);
		mb_calls_row(" ", "  on other cards: the H200's family", &on_ppu[1], "0", 0);
		mb_calls_row(" ", "  the first mkdir+rmdir on ppu3 since start", &first_ppu[0], "-", -1);
		mb_calls_row("1", "driver calls per mkdir+rmdir, H200 (gpu0, idle)", &on_gpu[1], "<= 30", 30);
		mb_calls_row(" ", "  on other cards: the PPUs' family", &on_gpu[0], "0", 0);
		mb_calls_row(" ", "  the first mkdir+rmdir on gpu0 since start", &first_gpu[1], "-", -1);
		r = mb_add_row(" ", "  PPU cycle on a 64-card node vs a 4-card node");
		if (c4[0].ok && c64[0].ok) {
			snprintf(r->ours, sizeof(r->ours), "%.1f", mb_calls_total(&c64[0]));
			snprintf(r->base, sizeof(r->base), "%.1f", mb_calls_total(&c4[0]));
			snprintf(r->ratio, sizeof(r->ratio), "%.2fx", mb_calls_total(&c64[0]) / mb_calls_total(&c4[0]));
			snprintf(r->goal, sizeof(r->goal), "equal (none on others)");
			snprintf(r->met, sizeof(r->met), "%s",
			         mb_calls_total(&c64[0]) <= mb_calls_total(&c4[0]) + 1e-9 ? "yes" : "NO");
		} else {
			snprintf(r->ours, sizeof(r->ours), "n/a");
		}
		if (per_read[0].ok && per_read[1].ok) {
			struct calls both = per_read[0];
			for (unsigned i = 0; i < per_read[1].n && both.n < MAX_FUNCS; i++, both.n++) {
				memcpy(both.fn[both.n], per_read[1].fn[i], sizeof(both.fn[0]));
				both.count[both.n] = per_read[1].count[i];
			}
			mb_calls_row("4", "driver calls per status read (both families)", &both, "0", 0);
		}
		mb_note_breakdown("first PPU cycle, T-Head calls", &first_ppu[0]);
		mb_note_breakdown("first H200 cycle, NVIDIA calls", &first_gpu[1]);
		mb_note_breakdown("PPU cycle, T-Head calls", &on_ppu[0]);
		mb_note_breakdown("PPU cycle, NVIDIA calls", &on_ppu[1]);
		mb_note_breakdown("H200 cycle, NVIDIA calls", &on_gpu[1]);
		mb_note_breakdown("H200 cycle, T-Head calls", &on_gpu[0]);
		mb_note_breakdown("PPU cycle on the 64-card node", &c64[0]);
		mb_note_breakdown("PPU cycle on the 4-card node", &c4[0]);
	}

	/* 2: the carve cycle against bare FUSE + three durable record operations */
	printf("2: carve cycle\n");
	mb_settle();
	{
		struct op ours = { mb_do_cycle, ppu_prof, "bench-job", NULL, NULL };
		struct op base_op = { mb_do_bare_cycle_records, bare_d, "bench-job", p1, p2 };
		struct stats a, b, s1, s2;

		mb_sample_pair(&ours, sa, &base_op, sb, cycles);
		a = mb_stats_of(sa, cycles);
		b = mb_stats_of(sb, cycles);
		s1 = mb_stats_of(p1, cycles);
		s2 = mb_stats_of(p2, cycles);
		mb_row_time("2", "mkdir+rmdir of a job (ppu3) vs bare FUSE + 3 records", a.mean, b.mean, 1.2);
		mb_row_time(" ", "  p50", a.p50, b.p50, 0);
		{
			struct row *r = mb_add_row(" ", "  baseline part: bare FUSE mkdir+rmdir (mean)");
			mb_fmt_us(r->base, sizeof(r->base), s1.mean);
			r = mb_add_row(" ", "  baseline part: 3 durable record ops (mean)");
			mb_fmt_us(r->base, sizeof(r->base), s2.mean);
		}
	}

	/* 3: flat in cards */
	printf("3: 64 cards vs 4\n");
	mb_settle();
	{
		struct op c64 = { mb_do_cycle, prof64, "bench-job", NULL, NULL },
			  c4 = { mb_do_cycle, prof4, "bench-job", NULL, NULL };
		struct op r64 = { mb_do_read, status64, NULL, NULL, NULL },
			  r4 = { mb_do_read, status4, NULL, NULL, NULL };
		struct stats a, b;

		mb_sample_pair(&c64, sa, &c4, sb, cycles);
		a = mb_stats_of(sa, cycles);
		b = mb_stats_of(sb, cycles);
		mb_row_time("3", "mkdir+rmdir, 64-card node vs 4-card node", a.mean, b.mean, 1.2);
		mb_sample_pair(&r64, sa, &r4, sb, reads);
		a = mb_stats_of(sa, reads);
		b = mb_stats_of(sb, reads);
		mb_row_time("3", "status read, 64-card node vs 4-card node", a.mean, b.mean, 1.2);
		mb_row_time(" ", "  p99", a.p99, b.p99, 0);
	}

	/* 4: reads against the bare FUSE floor */
	printf("4: reads\n");
	mb_settle();
	{
		struct op ours = { mb_do_read, status_path, NULL, NULL, NULL },
			  flat = { mb_do_read, bare_status, NULL, NULL, NULL };
		struct op ls = { mb_do_list, reader_dir, NULL, NULL, NULL },
			  bls = { mb_do_list, bare_d, NULL, NULL, NULL };
		struct stats a, b;
		char what[64];

		mb_sample_pair(&ours, sa, &flat, sb, reads);
		a = mb_stats_of(sa, reads);
		b = mb_stats_of(sb, reads);
		mb_row_time("4", "open+read+close job status vs bare d/status", a.mean, b.mean, 1.2);
		mb_row_time(" ", "  p50", a.p50, b.p50, 0);
		mb_row_time(" ", "  p99", a.p99, b.p99, 0);
		mb_sample_pair(&ls, sa, &bls, sb, reads);
		a = mb_stats_of(sa, reads);
		b = mb_stats_of(sb, reads);
		snprintf(what, sizeof(what), "list a profile dir vs bare d (%u entries each)", prof_entries);
		mb_row_time("4", what, a.mean, b.mean, 2.0);
		mb_row_time(" ", "  p50", a.p50, b.p50, 0);
		mb_row_time(" ", "  p99", a.p99, b.p99, 0);
	}

	{
		struct row *r = mb_add_row("5", "vram and slot swap: meson test --benchmark dies");
		snprintf(r->goal, sizeof(r->goal), "see docs/dies.md");
	}

	/* 6: concurrency */
	printf("6: concurrency\n");
	mb_settle();
	{
		unsigned per = reads / ROUNDS ? reads / ROUNDS : 1, n_idle = 0, n_storm = 0, n_base = 0,
			 storm_cycles = 0;
		double storm_time = 0, t1, t2;
		struct carver storm, base_storm, one, two[2];
		struct stats idle, busy, base_busy;
		struct row *r;
		char v[24];

		mb_op_read(status_path);
		for (unsigned round = 0; round < ROUNDS && n_storm + per <= reads; round++) {
			double t0;
			for (unsigned i = 0; i < per; i++) {
				double s = now();
				mb_op_read(status_path);
				sa[n_idle++] = (now() - s) * 1e6;
			}
			/* The same reads while the baseline's work runs in a loop: the machine's share of the wait. */
			mb_carver_start(&base_storm, bare_d, "storm", 0, true);
			while (!base_storm.done && !base_storm.err)
				usleep(100);
			for (unsigned i = 0; i < per; i++) {
				double s = now();
				mb_op_read(status_path);
				sc[n_base++] = (now() - s) * 1e6;
			}
			base_storm.stop = true;
			mb_carver_join(&base_storm);
			usleep(100 * 1000);
			mb_carver_start(&storm, storm_prof, "storm", 0, false);
			while (!storm.done && !storm.err) /* the storm is on */
				usleep(100);
			t0 = now();
			{
				unsigned before = storm.done;
				for (unsigned i = 0; i < per; i++) {
					double s = now();
					mb_op_read(status_path);
					sb[n_storm++] = (now() - s) * 1e6;
				}
				storm_cycles += storm.done - before;
			}
			storm_time += now() - t0;
			storm.stop = true;
			mb_carver_join(&storm);
			usleep(100 * 1000); /* the next idle batch is idle: the storm's last writes settle */
		}
		idle = mb_stats_of(sa, n_idle);
		busy = mb_stats_of(sb, n_storm);
		base_busy = mb_stats_of(sc, n_base);
		mb_row_time("6", "status read p99 during a carve storm on ppu5 vs idle", busy.p99, idle.p99, 2.0);
		mb_row_time(" ", "  p50", busy.p50, idle.p50, 0);
		mb_row_time(" ", "  mean", busy.mean, idle.mean, 0);
		mb_row_time(" ", "  p99 during the baseline's storm vs idle", base_busy.p99, idle.p99, 0);
		mb_row_time(" ", "  p99, carve storm vs the baseline's storm", busy.p99, base_busy.p99, 0);
		r = mb_add_row(" ", "  storm: carve cycles per second while reading");
		snprintf(r->ours, sizeof(r->ours), "%.0f/s", storm_cycles / storm_time);

		/* two carvers on two cards against one: the wall time of the same number of cycles each */
		{
			unsigned k = cycles / 2 ? cycles / 2 : 1;
			t1 = now();
			mb_carver_start(&one, ppu_prof, "bench-one", k, false);
			mb_carver_join(&one);
			t1 = now() - t1;
			t2 = now();
			mb_carver_start(&two[0], ppu_prof, "bench-two-a", k, false);
			mb_carver_start(&two[1], storm_prof, "bench-two-b", k, false);
			mb_carver_join(&two[0]);
			mb_carver_join(&two[1]);
			t2 = now() - t2;
			r = mb_add_row("6", "2 carvers on 2 cards vs 1: cycles per second");
			snprintf(r->ours, sizeof(r->ours), "%.0f/s", 2 * k / t2);
			snprintf(r->base, sizeof(r->base), "%.0f/s", k / t1);
			snprintf(r->ratio, sizeof(r->ratio), "%.2fx", (2 * k / t2) / (k / t1));
			snprintf(v, sizeof(v), "parallel (2x ideal)");
			snprintf(r->goal, sizeof(r->goal), "%s", v);
		}
	}

	/* 8: a read beside an rmdir that retries busy on the same card (ppu1, the reader's) */
	mb_settle();
	figure_busy_card(reader_dir, status_path, 1, sa, sb);

	/* 7: a full node (and 9, a watcher of its node.json) */
	mb_settle();
	snprintf(topo, sizeof(topo), "%s/topology-64.json", base);
	figure_full_node(topo, bare_status, sa, sb);

	mb_print_table();
	if (mb_breakdown[0])
		printf("\ndriver calls per operation, by function:\n%s", mb_breakdown);
	printf("\nratios are accelfs / baseline, measured in this run; means unless the row says p50 or p99.\n"
	       "No goal is asserted: the exit status says only that every operation worked.\n");
	free(sa);
	free(sb);
	free(sc);
	free(p1);
	free(p2);
	cleanup();
	printf("mig-bench: %.1f s\n", now() - t_start);
	return 0;
}
