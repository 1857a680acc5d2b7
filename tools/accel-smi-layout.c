/* SPDX-License-Identifier: MIT */
/*
 * accel-smi layout apply|assert|export: a mig-parted configuration against
 * the mounted tree, with mig-parted's meanings.
 *
 * apply writes each card's entry as that card's <mount>/<dev>/mig/layout,
 * the cards in parallel (each write applies on its card while the others
 * apply on theirs); --wait[=SECONDS] then waits on each card's
 * layout_status until every line is applied.  assert says whether the
 * cards are as the configuration asks (mode and instance counts, whoever
 * made the instances), and export prints what they are as a mig-parted
 * file, which assert takes back.
 *
 * What a card's entry asks that the layout cannot say on that card (a
 * profile it does not offer, instances with MIG disabled, two entries for
 * one card) is reported for that card, and that card is not written: a
 * partial layout would be a partition nobody asked for.  An entry naming
 * a device the node does not have is refused before anything is written:
 * a typo in devices must not apply half a configuration.  A device-filter
 * matches the PCI id the tree shows in <dev>/info (no driver needed).
 *
 * Exit status: 0 done (apply: every line applied; assert: it matches);
 * 1 not done (something refused, impossible or not matching); 2 usage or
 * an unreadable configuration; 3 apply wrote every card but some lines are
 * still pending (without --wait, or when --wait's time ran out).
 */
#include "tools/smi-layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/smi.h"

#define MAX_CARDS 256
#define SMI_PENDING 3 /* apply: written, lines still pending */

struct card {
	char name[32];
	unsigned index;
	char text[4096];
	char report[1024];                    /* why it is not written, or what writing it answered */
	const struct layout_cfg_entry *entry; /* the configuration's entry for it, NULL: none */
	bool write;
	bool failed;
	char status[4096];
};

struct apply {
	const char *mount;
	struct card *c;
};

static int by_index(const void *a, const void *b)
{
	const struct card *x = a, *y = b;

	return (x->index > y->index) - (x->index < y->index);
}

/* The cards of the family under the mount, by index. */
static size_t list_cards(const char *mount, const char *prefix, struct card *cards)
{
	DIR *d = opendir(mount);
	struct dirent *de;
	size_t n = 0, plen = strlen(prefix);

	while (d && (de = readdir(d)) && n < MAX_CARDS) {
		char *end;
		unsigned long idx;

		if (strncmp(de->d_name, prefix, plen) || !de->d_name[plen])
			continue;
		idx = strtoul(de->d_name + plen, &end, 10);
		if (*end)
			continue;
		memset(&cards[n], 0, sizeof(cards[n]));
		snprintf(cards[n].name, sizeof(cards[n].name), "%s", de->d_name);
		cards[n++].index = (unsigned)idx;
	}
	if (d)
		closedir(d);
	qsort(cards, n, sizeof(*cards), by_index);
	return n;
}

static void read_file(const char *mount, const char *dev, const char *file, char *buf, size_t len);

/* The card's PCI id: what <dev>/info says (pci_id:), else what the driver says. */
static bool pci_id(struct smi *s, const char *mount, const struct card *c, unsigned *id)
{
	mig_device_t dev;
	mig_pci_info_t pci;
	char info[4096];
	const char *at;

	read_file(mount, c->name, "../info", info, sizeof(info));
	at = strstr(info, "\npci_id: ");
	if (at) {
		*id = (unsigned)strtoul(at + 9, NULL, 16);
		return true;
	}
	if (!s->lib.handle || !s->lib.DeviceGetPciInfo_v3 || s->lib.DeviceGetHandleByIndex_v2(c->index, &dev) ||
	    s->lib.DeviceGetPciInfo_v3(dev, &pci))
		return false;
	*id = pci.pciDeviceId;
	return true;
}

static bool entry_names(const struct layout_cfg_entry *e, unsigned index)
{
	if (e->all_devices)
		return true;
	for (size_t i = 0; i < e->n_devices; i++)
		if (e->devices[i] == index)
			return true;
	return false;
}

static bool is_dir(const char *mount, const char *dev, const char *profile)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s/mig/%s", mount, dev, profile);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static bool mode_on(const char *mount, const char *dev)
{
	char path[4096], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/mig/mode", mount, dev);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return !strncmp(buf, "enabled", 7);
}

/* The card's layout from its entry, or the report of what it cannot say. */
static void plan_card(struct smi *s, const char *mount, const struct layout_cfg *cfg, struct card *c)
{
	const struct layout_cfg_entry *e = NULL;
	size_t at;
	unsigned id = 0;
	bool have_id = pci_id(s, mount, c, &id);

	for (size_t i = 0; i < cfg->n_entries; i++) {
		const struct layout_cfg_entry *x = &cfg->entries[i];
		bool filtered = x->n_filters > 0, match = !filtered;
		if (!entry_names(x, c->index))
			continue;
		if (filtered && !have_id) {
			snprintf(c->report, sizeof(c->report),
			         "the entry of line %u has a device-filter, and neither %s/%s/info nor the driver "
			         "says the card's PCI id: not written",
			         x->line, mount, c->name);
			return;
		}
		for (size_t f = 0; f < x->n_filters; f++)
			match |= x->filters[f] == id;
		if (!match)
			continue;
		if (e) {
			snprintf(c->report, sizeof(c->report),
			         "two entries name this card (lines %u and %u): not written", e->line, x->line);
			return;
		}
		e = x;
	}
	c->entry = e;
	if (!e) {
		snprintf(c->report, sizeof(c->report), "no entry names it: left as it is");
		return;
	}
	at = (size_t)snprintf(c->text, sizeof(c->text), "mode %s\n", e->mig_enabled ? "enabled" : "disabled");
	for (size_t i = 0; i < e->n_profiles; i++) {
		if (!e->profiles[i].count)
			continue;
		if (!e->mig_enabled) {
			snprintf(c->report, sizeof(c->report),
			         "line %u asks for %s with mig-enabled false: a card has no instance with MIG off: not "
			         "written",
			         e->line, e->profiles[i].name);
			return;
		}
		if (mode_on(mount, c->name) && !is_dir(mount, c->name, e->profiles[i].name)) {
			snprintf(c->report, sizeof(c->report),
			         "line %u asks for %s, which this card does not offer (ls %s/%s/mig): not written",
			         e->line, e->profiles[i].name, mount, c->name);
			return;
		}
		at += (size_t)snprintf(c->text + at, sizeof(c->text) - at, "%s x%u\n", e->profiles[i].name,
		                       e->profiles[i].count);
	}
	c->write = true;
}

static void read_file(const char *mount, const char *dev, const char *file, char *buf, size_t len)
{
	char path[4096];
	int fd;
	ssize_t n = -1;

	snprintf(path, sizeof(path), "%s/%s/mig/%s", mount, dev, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
}

static void *write_card(void *arg)
{
	struct apply *a = arg;
	struct card *c = a->c;
	char path[4096];
	size_t len = strlen(c->text);
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s/mig/layout", a->mount, c->name);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, c->text, len) != (ssize_t)len)
		err = errno;
	if (fd >= 0 && close(fd) && !err)
		err = errno; /* the layout applies at close */
	if (err) {
		char last[1024];
		read_file(a->mount, c->name, "last_error", last, sizeof(last));
		last[strcspn(last, "\n")] = '\0';
		snprintf(c->report, sizeof(c->report), "writing its layout failed: %s%s%s", strerror(err),
		         last[0] ? ": " : "", last);
		c->failed = true;
	}
	read_file(a->mount, c->name, "layout_status", c->status, sizeof(c->status));
	return NULL;
}

enum progress { APPLIED, PENDING, IMPOSSIBLE };

/* What a card's layout_status says of the whole: every line applied, some pending, or one impossible. */
static enum progress progress_of(const char *status)
{
	enum progress p = APPLIED;

	for (const char *l = status; *l;) {
		size_t n = strcspn(l, "\n");
		const char *colon = memmem(l, n, ": ", 2);

		if (!colon || !strncmp(colon, ": impossible", 12))
			return IMPOSSIBLE;
		if (strncmp(colon, ": applied", 9) || colon + 9 != l + n)
			p = PENDING;
		l += n + (l[n] == '\n');
	}
	return p;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * --wait: each written card's layout_status until every line is applied or
 * one is impossible, or the time runs out (timeout < 0: no limit).  The
 * daemon wakes poll() on layout_status at every change; the one-second cap
 * on each poll only bounds what a lost wakeup could cost.
 */
static void wait_cards(const char *mount, struct card *cards, size_t n, double timeout)
{
	double until = now_s() + timeout;

	for (size_t i = 0; i < n; i++) {
		struct card *c = &cards[i];
		char path[4096];

		if (!c->write || c->failed)
			continue;
		snprintf(path, sizeof(path), "%s/%s/mig/layout_status", mount, c->name);
		for (;;) {
			int fd = open(path, O_RDONLY | O_CLOEXEC), ms;
			ssize_t got = fd < 0 ? -1 : read(fd, c->status, sizeof(c->status) - 1);

			c->status[got > 0 ? got : 0] = '\0';
			ms = timeout < 0 ? 1000 : (int)((until - now_s()) * 1000);
			if (progress_of(c->status) != PENDING || ms <= 0) {
				if (fd >= 0)
					close(fd);
				break;
			}
			if (fd >= 0) {
				struct pollfd pfd = { .fd = fd, .events = POLLPRI };
				poll(&pfd, 1, ms < 1000 ? ms : 1000);
				close(fd);
			} else {
				usleep(100000);
			}
		}
	}
}

static void print_lines(const char *text)
{
	for (const char *l = text; *l;) {
		size_t n = strcspn(l, "\n");
		printf("  %.*s\n", (int)n, l);
		l += n + (l[n] == '\n');
	}
}

static void print_card(const struct card *c, bool dry_run)
{
	printf("%s: %s\n", c->name, c->write && !c->failed ? (dry_run ? "would write" : "written") : c->report);
	if (c->write)
		print_lines(dry_run ? c->text : c->status);
}

/* ---- what the cards are: assert and export -------------------------------- */

struct held {
	bool mode_on, pending;
	struct {
		char name[64];
		unsigned count;
	} profiles[LAYOUT_CFG_MAX_PROFILES];
	size_t n_profiles;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b); /* name is the first member */
}

/* A card's mode and how many instances of each profile it has, whoever made them (mig/instances). */
static void held_of(const char *mount, const struct card *c, struct held *h)
{
	char mode[64], list[65536];

	memset(h, 0, sizeof(*h));
	read_file(mount, c->name, "mode", mode, sizeof(mode));
	h->mode_on = !strncmp(mode, "enabled", 7);
	h->pending = strstr(mode, "pending") != NULL;
	read_file(mount, c->name, "instances", list, sizeof(list));
	for (const char *l = list; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n')) {
		const char *p = strstr(l, " profile=");
		size_t len, i;

		if (!p || p > l + strcspn(l, "\n"))
			continue;
		p += 9;
		len = strcspn(p, " \n");
		for (i = 0; i < h->n_profiles; i++)
			if (strlen(h->profiles[i].name) == len && !strncmp(h->profiles[i].name, p, len))
				break;
		if (i == h->n_profiles) {
			if (i == LAYOUT_CFG_MAX_PROFILES || len >= sizeof(h->profiles[i].name))
				continue;
			snprintf(h->profiles[i].name, sizeof(h->profiles[i].name), "%.*s", (int)len, p);
			h->n_profiles++;
		}
		h->profiles[i].count++;
	}
	qsort(h->profiles, h->n_profiles, sizeof(h->profiles[0]), by_name);
}

static unsigned held_count(const struct held *h, const char *profile)
{
	for (size_t i = 0; i < h->n_profiles; i++)
		if (!strcmp(h->profiles[i].name, profile))
			return h->profiles[i].count;
	return 0;
}

/* Whether the card is as its entry asks: 0, or 1 with why in c->report. */
static int assert_card(const char *mount, struct card *c)
{
	const struct layout_cfg_entry *e = c->entry;
	struct held h;
	size_t at = 0;

	held_of(mount, c, &h);
	if (h.pending || h.mode_on != e->mig_enabled) {
		snprintf(c->report, sizeof(c->report), "mode is %s%s, the configuration (line %u) asks %s",
		         h.mode_on ? "enabled" : "disabled", h.pending ? " with a change pending" : "", e->line,
		         e->mig_enabled ? "enabled" : "disabled");
		return 1;
	}
	for (size_t i = 0; i < e->n_profiles; i++) {
		unsigned have = held_count(&h, e->profiles[i].name);
		if (have != e->profiles[i].count && at < sizeof(c->report))
			at += (size_t)snprintf(c->report + at, sizeof(c->report) - at, "%s%s: %u, asked %u",
			                       at ? "; " : "", e->profiles[i].name, have, e->profiles[i].count);
	}
	for (size_t i = 0; i < h.n_profiles; i++) {
		bool asked = false;
		for (size_t j = 0; j < e->n_profiles; j++)
			asked |= !strcmp(e->profiles[j].name, h.profiles[i].name);
		if (!asked && at < sizeof(c->report))
			at += (size_t)snprintf(c->report + at, sizeof(c->report) - at, "%s%s: %u, asked 0",
			                       at ? "; " : "", h.profiles[i].name, h.profiles[i].count);
	}
	return at ? 1 : 0;
}

static bool same_held(const struct held *a, const struct held *b)
{
	if (a->mode_on != b->mode_on || a->n_profiles != b->n_profiles)
		return false;
	for (size_t i = 0; i < a->n_profiles; i++)
		if (strcmp(a->profiles[i].name, b->profiles[i].name) || a->profiles[i].count != b->profiles[i].count)
			return false;
	return true;
}

/* export: the cards as a mig-parted file, cards that are alike in one entry, in index order. */
static void export_cards(const char *mount, const struct card *cards, size_t n, const char *name)
{
	static struct held h[MAX_CARDS];
	bool done[MAX_CARDS] = { false };

	for (size_t i = 0; i < n; i++)
		held_of(mount, &cards[i], &h[i]);
	printf("version: v1\nmig-configs:\n  %s:\n", name);
	for (size_t i = 0; i < n; i++) {
		if (done[i])
			continue;
		printf("    - devices: [%u", cards[i].index);
		for (size_t j = i + 1; j < n; j++)
			if (!done[j] && same_held(&h[i], &h[j])) {
				printf(", %u", cards[j].index);
				done[j] = true;
			}
		printf("]\n      mig-enabled: %s\n", h[i].mode_on ? "true" : "false");
		if (!h[i].mode_on)
			continue;
		printf("      mig-devices:%s\n", h[i].n_profiles ? "" : " {}");
		for (size_t k = 0; k < h[i].n_profiles; k++)
			printf("        \"%s\": %u\n", h[i].profiles[k].name, h[i].profiles[k].count);
	}
}

/* ---- the command ----------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr, "usage: accel-smi [-f ppu|gpu] layout apply -f CONFIG.yaml -c NAME [--mount DIR] [--dry-run] "
	                "[--wait[=SECONDS]]\n"
	                "       accel-smi [-f ppu|gpu] layout assert -f CONFIG.yaml -c NAME [--mount DIR]\n"
	                "       accel-smi [-f ppu|gpu] layout export [-c NAME] [--mount DIR]\n");
	return SMI_USAGE;
}

/* An entry naming an index the node does not have: its line, or 0. */
static unsigned unknown_device(const struct layout_cfg *cfg, const struct card *cards, size_t n, unsigned *index)
{
	for (size_t i = 0; i < cfg->n_entries; i++) {
		const struct layout_cfg_entry *e = &cfg->entries[i];
		for (size_t d = 0; !e->all_devices && d < e->n_devices; d++) {
			bool found = false;
			for (size_t k = 0; k < n && !found; k++)
				found = cards[k].index == e->devices[d];
			if (!found) {
				*index = e->devices[d];
				return e->line;
			}
		}
	}
	return 0;
}

int smi_cmd_layout(struct smi *s, int argc, char **argv)
{
	const char *file = NULL, *name = NULL, *mount = "/accel", *verb = argc > 0 ? argv[0] : "";
	static struct card cards[MAX_CARDS];
	static struct layout_cfg cfg;
	struct apply jobs[MAX_CARDS];
	pthread_t threads[MAX_CARDS];
	bool started[MAX_CARDS] = { false }, dry_run = false, failed = false, pending = false, wait = false;
	bool is_apply = !strcmp(verb, "apply"), is_assert = !strcmp(verb, "assert"),
	     is_export = !strcmp(verb, "export");
	double timeout = -1;
	char err[1024];
	unsigned line, index;
	size_t n;

	if (!is_apply && !is_assert && !is_export)
		return usage();
	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "-f") && i + 1 < argc && !is_export)
			file = argv[++i];
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "--mount") && i + 1 < argc)
			mount = argv[++i];
		else if (!strcmp(argv[i], "--dry-run") && is_apply)
			dry_run = true;
		else if (!strcmp(argv[i], "--wait") && is_apply)
			wait = true;
		else if (!strncmp(argv[i], "--wait=", 7) && is_apply) {
			wait = true;
			timeout = strtod(argv[i] + 7, &end);
			if (end == argv[i] + 7 || *end || timeout < 0)
				return usage();
		} else
			return usage();
	}
	if (is_export ? false : !file || !name)
		return usage();
	n = list_cards(mount, s->family->tree_prefix, cards);
	if (!n) {
		fprintf(stderr, "accel-smi: no %s card under %s (is accelfs mounted there? -f gpu for NVIDIA GPUs)\n",
		        s->family->tree_prefix, mount);
		return SMI_NO_DEVICE;
	}
	if (is_export) {
		export_cards(mount, cards, n, name ? name : "current");
		return SMI_OK;
	}
	if (layout_cfg_read(file, name, &cfg, err, sizeof(err))) {
		fprintf(stderr, "accel-smi: %s: %s\n", file, err);
		return SMI_USAGE;
	}
	line = unknown_device(&cfg, cards, n, &index);
	if (line) {
		fprintf(stderr,
		        "accel-smi: %s: line %u names device %u, and there is no %s%u under %s: nothing written\n",
		        file, line, index, s->family->tree_prefix, index, mount);
		return SMI_FAILED;
	}
	for (size_t i = 0; i < n; i++)
		plan_card(s, mount, &cfg, &cards[i]);
	if (is_assert) {
		for (size_t i = 0; i < n; i++) {
			struct card *c = &cards[i];
			int bad;

			if (!c->entry)
				continue;
			bad = c->write ? assert_card(mount, c) : 1;
			printf("%s: %s%s\n", c->name, bad ? "does not match: " : "matches", bad ? c->report : "");
			failed |= bad;
		}
		return failed ? SMI_FAILED : SMI_OK;
	}
	for (size_t i = 0; i < n && !dry_run; i++) {
		jobs[i] = (struct apply){ mount, &cards[i] };
		if (cards[i].write)
			started[i] = !pthread_create(&threads[i], NULL, write_card, &jobs[i]);
		if (cards[i].write && !started[i])
			write_card(&jobs[i]);
	}
	for (size_t i = 0; i < n; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
	if (wait && !dry_run)
		wait_cards(mount, cards, n, timeout);
	for (size_t i = 0; i < n; i++) {
		struct card *c = &cards[i];

		if (!c->write)
			failed |= strncmp(c->report, "no entry", 8) != 0;
		else if (c->failed || (!dry_run && progress_of(c->status) == IMPOSSIBLE))
			failed = true;
		else if (!dry_run && progress_of(c->status) == PENDING)
			pending = true;
		print_card(c, dry_run);
	}
	return failed ? SMI_FAILED : pending ? SMI_PENDING : SMI_OK;
}
