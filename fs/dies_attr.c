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
 * refusal is an errno for the writer and a line in the log saying why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/proc_files.h"
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

static int writable(const struct fs_dies *d)
{
	if (!d)
		return -ENOENT;
	return d->read_only ? -EROFS : 0;
}

static int write_enabled(struct fs_dies *d, uint32_t die, const char *buf, size_t size)
{
	size_t n = word(buf, size);
	int ret = writable(d);

	if (ret)
		return ret;
	if (n != 1 || (buf[0] != '0' && buf[0] != '1'))
		return -EINVAL;
	ret = bs_arb_set_enabled(d->arb, die, buf[0] == '1');
	if (ret == -EBUSY)
		log_info("die %u: not quarantined: it is lent to a driver (take it back first)", die);
	if (ret)
		return ret;
	log_info("die %u %s through dies/%u/enabled", die, buf[0] == '1' ? "enabled" : "quarantined", die);
	return (int)size;
}

static int write_policy(struct fs_dies *d, uint32_t die, const char *buf, size_t size)
{
	size_t n = word(buf, size);
	uint32_t policy;
	int ret = writable(d);

	if (ret)
		return ret;
	if (n == 6 && !strncmp(buf, "pinned", 6))
		policy = BS_POLICY_PINNED;
	else if (n == 8 && !strncmp(buf, "resident", 8))
		policy = BS_POLICY_RESIDENT;
	else
		return -EINVAL;
	ret = bs_slot_set_policy(bs_arb_slot(d->arb), die, policy);
	if (ret) {
		log_info("die %u: policy not changed: %s", die,
		         ret == -EBUSY ? "the die is lent (take it back first)" : strerror(-ret));
		return ret;
	}
	log_info("die %u: policy %s", die, policy == BS_POLICY_RESIDENT ? "resident" : "pinned");
	return (int)size;
}

static int write_lease(struct fs_dies *d, const char *buf, size_t size)
{
	size_t n = word(buf, size);
	char num[16], *end;
	unsigned long ms;
	int ret = writable(d);

	if (ret)
		return ret;
	if (!n || n >= sizeof(num) || buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	memcpy(num, buf, n);
	num[n] = '\0';
	errno = 0;
	ms = strtoul(num, &end, 10);
	if (*end || errno || ms > UINT32_MAX)
		return -EINVAL;
	ret = bs_arb_set_lease(d->arb, (uint32_t)ms);
	if (ret)
		return ret;
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
	struct fs_dies *d;
	fuse_req_t req;
	size_t size;
	bool interruptible;
};

static void finish_return(struct return_park *p, int err)
{
	fuse_req_t req = p->req;
	size_t size = p->size;

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
	free(p);
	fuse_reply_err(req, EINTR); /* the die still comes back: the arbiter asked for it */
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
	p->interruptible = true;
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
	int ret = writable(d);

	if (!ret && (!n || n >= sizeof(name)))
		ret = -EINVAL;
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

int fs_die_enabled_write(struct fs_write *w, const struct fs_node *n)
{
	return w->off ? -EINVAL : write_enabled(n->mount->dies, n->die, w->buf, w->size);
}

int fs_die_policy_write(struct fs_write *w, const struct fs_node *n)
{
	return w->off ? -EINVAL : write_policy(n->mount->dies, n->die, w->buf, w->size);
}

int fs_dies_lease_write(struct fs_write *w, const struct fs_node *n)
{
	return w->off ? -EINVAL : write_lease(n->mount->dies, w->buf, w->size);
}

int fs_die_driver_write(struct fs_write *w, const struct fs_node *n)
{
	if (w->off)
		return -EINVAL;
	w->answered = true;
	write_driver(w->req, n->mount->dies, n->die, w->buf, w->size); /* perhaps once the die is back */
	return 0;
}
