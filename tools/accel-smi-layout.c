/* SPDX-License-Identifier: MIT */
/*
 * accel-smi layout apply: each card's entry of a mig-parted configuration
 * written as that card's <mount>/<dev>/mig/layout, the cards in parallel
 * (each write applies on its card while the others apply on theirs).
 *
 * What a card's entry asks that the layout cannot say on that card (a
 * profile it does not offer, instances with MIG disabled, two entries for
 * one card, a device-filter without a driver to read the PCI id) is
 * reported for that card, and that card is not written: a partial layout
 * would be a partition nobody asked for.  The exit status is 1 then.
 */
#include "tools/smi-layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/smi.h"

#define MAX_CARDS 256

struct card {
	char name[32];
	unsigned index;
	char text[4096];
	char report[1024]; /* why it is not written, or what writing it answered */
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

static bool pci_id(struct smi *s, unsigned index, unsigned *id)
{
	mig_device_t dev;
	mig_pci_info_t pci;

	if (!s->lib.handle || !s->lib.DeviceGetPciInfo_v3 || s->lib.DeviceGetHandleByIndex_v2(index, &dev) ||
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
	bool have_id = pci_id(s, c->index, &id);

	for (size_t i = 0; i < cfg->n_entries; i++) {
		const struct layout_cfg_entry *x = &cfg->entries[i];
		bool filtered = x->n_filters > 0, match = !filtered;
		if (!entry_names(x, c->index))
			continue;
		if (filtered && !have_id) {
			snprintf(c->report, sizeof(c->report),
			         "the entry of line %u has a device-filter, and the card's PCI id cannot be read "
			         "without its driver: not written",
			         x->line);
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

static void print_card(const struct card *c, bool dry_run)
{
	printf("%s: %s\n", c->name, c->write && !c->failed ? (dry_run ? "would write" : "written") : c->report);
	if (!c->write)
		return;
	for (const char *l = dry_run ? c->text : c->status; *l;) {
		size_t n = strcspn(l, "\n");
		printf("  %.*s\n", (int)n, l);
		l += n + (l[n] == '\n');
	}
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: accel-smi [-f gpu|ppu] layout apply -f CONFIG.yaml -c NAME [--mount DIR] [--dry-run]\n");
	return SMI_USAGE;
}

int smi_cmd_layout(struct smi *s, int argc, char **argv)
{
	const char *file = NULL, *name = NULL, *mount = "/accel";
	static struct card cards[MAX_CARDS];
	static struct layout_cfg cfg;
	struct apply jobs[MAX_CARDS];
	pthread_t threads[MAX_CARDS];
	bool started[MAX_CARDS] = { false }, dry_run = false, reported = false;
	char err[1024];
	size_t n;

	if (argc < 1 || strcmp(argv[0], "apply"))
		return usage();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f") && i + 1 < argc)
			file = argv[++i];
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "--mount") && i + 1 < argc)
			mount = argv[++i];
		else if (!strcmp(argv[i], "--dry-run"))
			dry_run = true;
		else
			return usage();
	}
	if (!file || !name)
		return usage();
	if (layout_cfg_read(file, name, &cfg, err, sizeof(err))) {
		fprintf(stderr, "accel-smi: %s: %s\n", file, err);
		return SMI_USAGE;
	}
	n = list_cards(mount, s->family->tree_prefix, cards);
	if (!n) {
		fprintf(stderr, "accel-smi: no %s card under %s (is accelfs mounted there?)\n", s->family->tree_prefix,
		        mount);
		return SMI_NO_DEVICE;
	}
	for (size_t i = 0; i < n; i++)
		plan_card(s, mount, &cfg, &cards[i]);
	for (size_t i = 0; i < n && !dry_run; i++) {
		jobs[i] = (struct apply){ mount, &cards[i] };
		if (cards[i].write)
			started[i] = !pthread_create(&threads[i], NULL, write_card, &jobs[i]);
		if (cards[i].write && !started[i])
			write_card(&jobs[i]);
	}
	for (size_t i = 0; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		reported |= !cards[i].write ? strncmp(cards[i].report, "no entry", 8) != 0 : cards[i].failed;
		print_card(&cards[i], dry_run);
	}
	return reported ? SMI_FAILED : SMI_OK;
}
