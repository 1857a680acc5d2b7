/* SPDX-License-Identifier: MIT */
/*
 * The writable files of dies/ besides vram (docs/dies.md):
 *
 *   dies/lease_ms      while others wait, a holder keeps the slot at most this
 *                      long (0: no lease); the slot's own setting
 *   dies/<n>/enabled   1 or 0: quarantine
 *   dies/<n>/policy    pinned or resident: what a lent die does when its
 *                      holder lets go
 *   dies/<n>/driver    a holder of dies/<n>/vram lends the die to a driver by
 *                      writing its name, and takes it back with "bar_swap"
 *
 * Each takes its whole value in one write, with or without a newline.  Every
 * refusal is an errno for the writer and a sentence saying why and what to
 * write instead: dies/last_error shows it, with its time (the caller keeps it).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/log.h"
#include "core/driver/proc_files.h"
#include "core/engine/metrics.h"
#include "core/engine/node.h"
#include "fs/accelfs.h"
#include "fs/dies_internal.h"
#include "fs/tree.h"

/* The value written, without the newline echo adds: its length, or 0 if it is not one word. */
static size_t word(const char *buf, size_t size)
{
	size_t n = size;

	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0' || buf[i] == '\n' || buf[i] == ' ' || buf[i] == '/' || buf[i] == ',')
			return 0;
	return n;
}

static int writable(const struct fs_dies *d, const char *file, char *why, size_t whylen)
{
	if (!d) {
		snprintf(why, whylen, "%s: there is no dies/ on this mount", file);
		return -ENOENT;
	}
	if (d->read_only) {
		snprintf(why, whylen, "%s: the mount is read-only (--read-only): nothing in dies/ is written", file);
		return -EROFS;
	}
	return 0;
}

/* What was written, for a sentence: at most 32 bytes, up to the newline, unprintable bytes as '?'. */
static void shown(const char *buf, size_t size, char *out, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < size && n + 1 < len && n < 32; i++) {
		if (buf[i] == '\n' && i + 1 == size)
			break;
		out[n++] = buf[i] >= 0x20 && buf[i] < 0x7f ? buf[i] : '?';
	}
	out[n] = '\0';
}

/* Refused, with why: the errno, after the log says the same. */
static int refuse(int err, const char *why)
{
	log_info("%s", why);
	return err;
}

static int write_enabled(struct fs_dies *d, uint32_t die, const char *buf, size_t size, char *why, size_t whylen)
{
	size_t n = word(buf, size);
	char file[32], got[40];
	int ret;

	snprintf(file, sizeof(file), "dies/%u/enabled", die);
	ret = writable(d, file, why, whylen);
	if (ret)
		return ret;
	if (n != 1 || (buf[0] != '0' && buf[0] != '1')) {
		shown(buf, size, got, sizeof(got));
		snprintf(why, whylen, "%s: write 1 to enable the die or 0 to quarantine it, not '%s'", file, got);
		return refuse(-EINVAL, why);
	}
	ret = bs_arb_set_enabled(d->arb, die, buf[0] == '1');
	if (ret == -EBUSY)
		snprintf(why, whylen, "die %u: not quarantined: it is lent to a driver (take it back first)", die);
	else if (ret)
		snprintf(why, whylen, "die %u: %s failed: %s", die, buf[0] == '1' ? "enabling" : "quarantining",
		         strerror(-ret));
	if (ret)
		return refuse(ret, why);
	log_info("die %u %s through dies/%u/enabled", die, buf[0] == '1' ? "enabled" : "quarantined", die);
	return (int)size;
}

static int write_policy(struct fs_dies *d, uint32_t die, const char *buf, size_t size, char *why, size_t whylen)
{
	size_t n = word(buf, size);
	char file[32], got[40];
	uint32_t policy;
	int ret;

	snprintf(file, sizeof(file), "dies/%u/policy", die);
	ret = writable(d, file, why, whylen);
	if (ret)
		return ret;
	if (n == 6 && !strncmp(buf, "pinned", 6))
		policy = BS_POLICY_PINNED;
	else if (n == 8 && !strncmp(buf, "resident", 8))
		policy = BS_POLICY_RESIDENT;
	else {
		shown(buf, size, got, sizeof(got));
		snprintf(why, whylen, "%s: write pinned or resident, not '%s'", file, got);
		return refuse(-EINVAL, why);
	}
	ret = bs_slot_set_policy(bs_arb_slot(d->arb), die, policy);
	if (ret) {
		snprintf(why, whylen, "die %u: policy not changed: %s", die,
		         ret == -EBUSY ? "the die is lent (take it back first)" : strerror(-ret));
		return refuse(ret, why);
	}
	log_info("die %u: policy %s", die, policy == BS_POLICY_RESIDENT ? "resident" : "pinned");
	return (int)size;
}

static int write_lease(struct fs_dies *d, const char *buf, size_t size, char *why, size_t whylen)
{
	size_t n = word(buf, size);
	char num[16], got[40], *end = num;
	unsigned long ms = 0;
	int ret = writable(d, "dies/lease_ms", why, whylen);

	if (ret)
		return ret;
	if (n && n < sizeof(num) && buf[0] >= '0' && buf[0] <= '9') {
		memcpy(num, buf, n);
		num[n] = '\0';
		errno = 0;
		ms = strtoul(num, &end, 10);
		if (errno)
			end = num;
	}
	if (end == num || *end || ms > UINT32_MAX) {
		shown(buf, size, got, sizeof(got));
		snprintf(why, whylen,
		         "dies/lease_ms: write the lease in milliseconds, a decimal number from 0 (no lease) to %u, "
		         "not '%s'",
		         UINT32_MAX, got);
		return refuse(-EINVAL, why);
	}
	ret = bs_arb_set_lease(d->arb, (uint32_t)ms);
	if (ret) {
		snprintf(why, whylen, "dies/lease_ms: the slot refused the lease: %s", strerror(-ret));
		return refuse(ret, why);
	}
	log_info("dies: lease %lu ms%s", ms, ms ? " (while others wait)" : " (none)");
	return (int)size;
}

/* ---- driver: lend and return ------------------------------------------------------ */

struct fs_vram *fs_dies_holder_of(struct fs_dies *d, uint32_t die, pid_t pid)
{
	for (struct fs_vram *h = d->handles.next; h != &d->handles; h = h->next) {
		if (h->die != die || !h->held || h->revoked)
			continue;
		/* The opener itself, or a process with a descriptor on it (echo run by the shell holding it). */
		if (accel_proc_same_process(h->opener, pid) ||
		    (d->dev_known && accel_proc_has_file(pid, d->dev, h->ino)))
			return h;
	}
	return NULL;
}

/* A write of "bar_swap" waiting for the die to come back. */
struct return_park {
	struct bs_waiter w;
	struct fs_dies_parked parked; /* for the wait limit */
	struct fs_dies *d;
	fuse_req_t req;
	size_t size;
	bool interruptible;
	uint32_t die;
	uint64_t asked; /* accel_metrics_now() when the write came */
};

static void finish_return(struct return_park *p, int err)
{
	fuse_req_t req = p->req;
	size_t size = p->size;

	if (fs_dies_park_unlist(p->d, &p->parked) && err == -EINTR)
		err = -ETIMEDOUT; /* withdrawn by the limit before it could park */
	if (p->interruptible)
		fuse_req_interrupt_func(req, NULL, NULL); /* waits for a callback in flight */
	free(p); /* before the reply: nothing of the request is touched after it */
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_write(req, size);
}

void fs_dies_return_answered(struct bs_waiter *w, int err)
{
	finish_return((struct return_park *)w, err);
}

static void on_return_interrupt(fuse_req_t req, void *data)
{
	struct return_park *p = data;

	if (!bs_arb_cancel(p->d->arb, &p->w))
		return; /* answered already, or not parked yet (then the return says EINTR) */
	fs_dies_park_unlist(p->d, &p->parked);
	free(p);
	fuse_reply_err(req, EINTR); /* the die still comes back: the arbiter asked for it */
}

/* The wait limit withdrew the parked return (fs/dies_wait_limit.c): the die still comes back. */
static void return_expired(struct fs_dies_parked *pk)
{
	struct return_park *p = (struct return_park *)((char *)pk - offsetof(struct return_park, parked));

	log_notice("die %u: pid %d waited %llu ms for its lent die to come back, as long as the kernel's bound "
	           "on a FUSE answer lets a request wait: answered ETIMEDOUT; the die still comes back once its "
	           "driver lets go (dies/slot's waiting_on says who holds it)",
	           p->die, (int)accel_proc_tgid(p->w.pid),
	           (unsigned long long)((accel_metrics_now() - p->asked) / 1000000));
	finish_return(p, -ETIMEDOUT);
}

static void take_back(fuse_req_t req, struct fs_dies *d, uint32_t die, uint64_t epoch, size_t size)
{
	struct return_park *p = calloc(1, sizeof(*p));
	int ret;

	if (!p) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	bs_waiter_init(&p->w);
	p->w.pid = fuse_req_ctx(req)->pid;
	p->d = d;
	p->req = req;
	p->size = size;
	p->die = die;
	p->asked = accel_metrics_now();
	p->interruptible = true;
	fs_dies_park_list(d, &p->parked, &p->w, return_expired); /* before the return, as the interrupt */
	/* Before the return: an interrupt that came first cancels it (the callback runs now). */
	fuse_req_interrupt_func(req, on_return_interrupt, p);
	ret = bs_arb_return(d->arb, die, epoch, &p->w);
	if (ret == 1)
		return; /* parked until the driver lets go: answered by the arbiter's thread */
	finish_return(p, ret);
}

static const char *lend_refusal(int err)
{
	switch (err) {
	case -EPERM:
		return "the driver is not in the module's lend_drivers= allowlist (or the hold is no longer current)";
	case -ENOENT:
		return "no PCI driver of that name is loaded";
	case -ENXIO:
		return "the driver's probe refused the die (see the kernel log); the die is back on bar_swap";
	case -EBUSY:
		return "the die is lent to another driver, or on its way back";
	case -EOPNOTSUPP:
		return "a RAM-backed die (sim_dies=) has no device to bind";
	default:
		return strerror(-err);
	}
}

static void write_driver(fuse_req_t req, struct fs_dies *d, uint32_t die, const char *buf, size_t size)
{
	pid_t pid = fuse_req_ctx(req)->pid;
	size_t n = word(buf, size);
	char name[BS_DRIVER_LEN];
	struct fs_vram *h;
	uint64_t epoch = 0;
	char why[160], file[32];
	int ret;

	snprintf(file, sizeof(file), "dies/%u/driver", die);
	ret = writable(d, file, why, sizeof(why));
	if (!ret && (!n || n >= sizeof(name))) {
		snprintf(why, sizeof(why),
		         "%s: write one driver's name (at most %zu bytes), or bar_swap to take it back", file,
		         sizeof(name) - 1);
		ret = refuse(-EINVAL, why);
	}
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	memcpy(name, buf, n);
	name[n] = '\0';
	pthread_mutex_lock(&d->lock);
	h = fs_dies_holder_of(d, die, pid);
	if (h)
		epoch = h->epoch;
	pthread_mutex_unlock(&d->lock);
	if (!h) {
		log_info("die %u: pid %d wrote %s to dies/%u/driver without holding dies/%u/vram: refused", die,
		         (int)pid, name, die, die);
		fuse_reply_err(req, EPERM);
		return;
	}
	if (!strcmp(name, "bar_swap")) {
		take_back(req, d, die, epoch, size);
		return;
	}
	ret = bs_arb_lend(d->arb, die, epoch, name);
	if (ret) {
		log_info("die %u: lend to %s by pid %d refused (%s): %s", die, name, (int)pid, strerror(-ret),
		         lend_refusal(ret));
		fuse_reply_err(req, -ret);
		return;
	}
	pthread_mutex_lock(&d->lock);
	h = fs_dies_holder_of(d, die, pid); /* again: it may have been closed meanwhile */
	if (h && h->epoch == epoch)
		h->lender = true;
	pthread_mutex_unlock(&d->lock);
	log_info("die %u lent to %s by pid %d", die, name, (int)pid);
	fuse_reply_write(req, size);
}

/* ---- the rows' writes (fs/tree_files.c): the whole value in one write, at offset 0 ---- */

/* dies/last_error: the outcome of the last write to enabled, policy or lease_ms (core/engine/node.h's store). */
static int outcome(struct fs_write *w, int ret, const char *why)
{
	accel_node_set_last_error(w->fs->node, FS_DIES_LAST_ERROR_KEY, ret < 0 ? why : "");
	return ret;
}

static int at_offset(struct fs_write *w, const char *file, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s: write the whole value at once, at offset 0", file);
	return outcome(w, -EINVAL, why);
}

int fs_die_enabled_write(struct fs_write *w, const struct fs_node *n)
{
	char why[ACCEL_TEXT_MAX];

	if (w->off)
		return at_offset(w, "enabled", why, sizeof(why));
	return outcome(w, write_enabled(n->mount->dies, n->die, w->buf, w->size, why, sizeof(why)), why);
}

int fs_die_policy_write(struct fs_write *w, const struct fs_node *n)
{
	char why[ACCEL_TEXT_MAX];

	if (w->off)
		return at_offset(w, "policy", why, sizeof(why));
	return outcome(w, write_policy(n->mount->dies, n->die, w->buf, w->size, why, sizeof(why)), why);
}

int fs_dies_lease_write(struct fs_write *w, const struct fs_node *n)
{
	char why[ACCEL_TEXT_MAX];

	if (w->off)
		return at_offset(w, "dies/lease_ms", why, sizeof(why));
	return outcome(w, write_lease(n->mount->dies, w->buf, w->size, why, sizeof(why)), why);
}

int fs_die_driver_write(struct fs_write *w, const struct fs_node *n)
{
	if (w->off)
		return -EINVAL;
	w->answered = true;
	write_driver(w->req, n->mount->dies, n->die, w->buf, w->size); /* perhaps once the die is back */
	return 0;
}
