/* SPDX-License-Identifier: MIT */
/*
 * dies/<n>/vram requests, held against the arbiter.
 *
 * An open is a hold on the die.  One that can be answered at once is; one
 * that must wait is parked: its request is kept with a bs_waiter, an
 * interrupt callback is registered (a signal answers EINTR and leaves the
 * queue), and the answer comes from whichever thread gives the slot to it.
 *
 * When does a handle stop holding?  RELEASE is the last word, but the
 * kernel sends it asynchronously, after close(2) has returned: a process
 * that closes die 0 and opens die 1 at once would find die 0 still held.
 * FLUSH, on the other hand, is synchronous with close(2), but it comes for
 * every close of every descriptor (a dup, a forked child's copy).  So a
 * FLUSH drops the hold when the process that opened the handle has no
 * descriptor left on this file (read from /proc/<pid>/fd, see
 * barswap/fd_probe.c), and RELEASE drops whatever is left.  A handle whose
 * hold was dropped while another process still uses a copy of it (the
 * opener closed, a child did not) takes the slot back on its next read or
 * write if it can without waiting, and fails with EAGAIN otherwise.
 *
 * A hold the arbiter revoked (quarantine: ENODEV; the lease: ETIME) marks
 * its handles: every later read and write fails with that errno, and the
 * holder must open again to queue again.  A handle that lent its die to a
 * driver (fs/dies_attr.c) asks for it back when its hold is dropped, unless
 * the die's policy is resident.
 */
#include "fs/dies_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barswap/bs_guard.h"
#include "core/model/log.h"
#include "core/driver/proc_files.h"
#include "core/engine/metrics.h"
#include "core/model/timed_wait.h"
#include "fs/accelfs.h"

/* An open waiting for the slot. */
struct park {
	struct bs_waiter w;
	struct fs_dies_parked parked; /* for the wait limit */
	fuse_req_t req;
	struct fuse_file_info fi;
	struct fs_vram *h;
	bool interruptible; /* an interrupt callback is registered */
	uint64_t asked;     /* when the open arrived (accel_metrics_now): the slot wait it took */
};

/* ---- handles ------------------------------------------------------------------ */

static void link_handle(struct fs_dies *d, struct fs_vram *h)
{
	pthread_mutex_lock(&d->lock);
	h->prev = &d->handles;
	h->next = d->handles.next;
	d->handles.next->prev = h;
	d->handles.next = h;
	pthread_mutex_unlock(&d->lock);
}

/*
 * Give one hold back.  The lender's hold asks for its die back first (the
 * arbiter does not wait for it: the slot keeps the die until it is back),
 * unless the die is resident, which stays with its driver.
 */
static void drop_hold(struct fs_dies *d, uint32_t die, uint64_t epoch, bool lender)
{
	bs_die_lend l;
	int ret;

	if (lender && !bs_slot_die_lend(bs_arb_slot(d->arb), die, &l) && l.policy == BS_POLICY_PINNED &&
	    l.state == BS_LEND_LENT) {
		ret = bs_arb_return(d->arb, die, epoch, NULL);
		if (ret && ret != -EINPROGRESS && ret != -EPERM)
			log_warn("die %u: the lender let go, but asking %s for the die back failed: %s", die, l.driver,
			         strerror(-ret));
	}
	bs_arb_drop(d->arb, die, epoch);
}

/* Unlink h; if it still held, give the hold back. */
static void unlink_handle(struct fs_dies *d, struct fs_vram *h)
{
	bool held, lender;
	uint64_t epoch;

	pthread_mutex_lock(&d->lock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	held = h->held;
	lender = h->lender;
	epoch = h->epoch;
	h->held = h->lender = false;
	pthread_mutex_unlock(&d->lock);
	if (held)
		drop_hold(d, h->die, epoch, lender);
}

/* ---- open ------------------------------------------------------------------------ */

/* Answer a (parked or not) open.  The interrupt callback, if any, is unregistered first. */
static void finish_open(struct park *p, int err)
{
	struct fs_vram *h = p->h;
	struct fs_dies *d = h->d;
	fuse_req_t req = p->req;
	struct fuse_file_info fi = p->fi;

	if (fs_dies_park_unlist(d, &p->parked) && err == -EINTR)
		err = -ETIMEDOUT; /* withdrawn by the limit before it could park */
	/* Waits for a callback in flight on another thread, which will find the waiter answered. */
	if (p->interruptible)
		fuse_req_interrupt_func(req, NULL, NULL);
	if (err) {
		free(h);
		free(p);
		fuse_reply_err(req, -err);
		return;
	}
	accel_metrics_slot_wait(p->asked);
	h->held = true;
	h->epoch = p->w.epoch;
	free(p);
	link_handle(d, h);
	/*
	 * From the reply on, h is the kernel's: its RELEASE may free it at once.
	 * Only when the reply failed (the opener is gone, the request was
	 * aborted) is it still ours: no RELEASE will come for it.
	 */
	if (fuse_reply_open(req, &fi)) {
		unlink_handle(d, h);
		free(h);
	}
}

static void on_answer(void *ctx, struct bs_waiter *w, int err)
{
	(void)ctx;
	if (w->kind == BS_WAIT_RETURN)
		fs_dies_return_answered(w, err);
	else
		finish_open((struct park *)((char *)w - offsetof(struct park, w)), err);
}

/*
 * "the hold of pid 9842 is", "the holds of pids 9842 and 9850 are", "the
 * holds of pids 1, 2 and 3 are" (and how many more), "no hold was left to
 * revoke": the openers' thread ids, shown as their processes.
 */
static void holds_revoked(char *buf, size_t len, const pid_t *pids, unsigned n, unsigned more)
{
	size_t at;

	if (!n) {
		snprintf(buf, len, "no hold of this mount was left to revoke");
		return;
	}
	at = (size_t)snprintf(buf, len, "the hold%s of pid%s", n + more > 1 ? "s" : "", n + more > 1 ? "s" : "");
	for (unsigned i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%d",
		                       i == 0                ? " "
		                       : i + 1 == n && !more ? " and "
		                                             : ", ",
		                       (int)accel_proc_tgid(pids[i]));
	if (more && at < len)
		at += (size_t)snprintf(buf + at, len - at, " and %u more", more);
	if (at < len)
		snprintf(buf + at, len - at, " %s revoked", n + more > 1 ? "are" : "is");
}

/* What the arbiter did to the holds: mark the handles, and say it in the log. */
static void on_note(void *ctx, const struct bs_arb_note *n)
{
	struct fs_dies *d = ctx;
	pid_t pids[8];
	unsigned n_pids = 0, more = 0;
	char holds[160];

	switch (n->what) {
	case BS_ARB_REVOKED:
		pthread_mutex_lock(&d->lock);
		for (struct fs_vram *h = d->handles.next; h != &d->handles; h = h->next) {
			if (h->die != n->die || h->epoch != n->epoch || h->revoked)
				continue;
			h->revoked = -n->err;
			h->held = h->lender = false;
			if (n_pids < sizeof(pids) / sizeof(pids[0]))
				pids[n_pids++] = h->opener;
			else
				more++;
		}
		pthread_mutex_unlock(&d->lock);
		/* /proc is read outside the lock. */
		holds_revoked(holds, sizeof(holds), pids, n_pids, more);
		if (n->err == -ETIME)
			log_info("die %u: the lease ran out with others waiting; %s (%s with ETIME until %s again)",
			         n->die, holds,
			         n_pids + more > 1 ? "their reads and writes fail" : "its reads and writes fail",
			         n_pids + more > 1 ? "they open" : "it opens");
		else
			log_info("die %u: the slot was taken away (%s); %s", n->die, strerror(-n->err), holds);
		break;
	case BS_ARB_EXPIRED_LENT:
		log_info("die %u: the lease ran out while the die is lent; asking its driver for it back first "
		         "(the holds go once it is back)",
		         n->die);
		break;
	case BS_ARB_RETURN_SLOW:
		log_warn("die %u: its driver has not let go after %u ms; the slot waits for it (a lease never "
		         "takes a die from a driver): dies/slot says whom it waits on",
		         n->die, n->ms);
		break;
	case BS_ARB_RETURNED:
		pthread_mutex_lock(&d->lock);
		for (struct fs_vram *h = d->handles.next; h != &d->handles; h = h->next)
			if (h->die == n->die)
				h->lender = false;
		pthread_mutex_unlock(&d->lock);
		log_info("die %u is back on bar_swap after %u ms", n->die, n->ms);
		break;
	}
}

/*
 * A signal reached the parked opener.  Runs on the thread that read the
 * INTERRUPT, inside libfuse's lock for this request: answer here, never
 * unregister here.
 */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct park *p = data;

	if (!bs_arb_cancel(p->h->d->arb, &p->w))
		return; /* answered already, or not parked yet (then the hold fails with EINTR) */
	fs_dies_park_unlist(p->h->d, &p->parked);
	free(p->h);
	free(p);
	fuse_reply_err(req, EINTR);
}

/* The wait limit withdrew the parked open (fs/dies_wait_limit.c): the mount lives, this opener learns why. */
static void open_expired(struct fs_dies_parked *pk)
{
	struct park *p = (struct park *)((char *)pk - offsetof(struct park, parked));

	log_notice("die %u: the open of pid %d waited %llu ms for the slot, as long as the kernel's bound on a "
	           "FUSE answer lets a request wait: answered ETIMEDOUT (dies/slot says who holds it; open again "
	           "to queue again)",
	           p->h->die, (int)accel_proc_tgid(p->h->opener),
	           (unsigned long long)((accel_metrics_now() - p->asked) / 1000000));
	finish_open(p, -ETIMEDOUT);
}

void fs_die_vram_open(fuse_req_t req, fuse_ino_t ino, const struct fs_node *n, struct fuse_file_info *fi)
{
	struct fs_dies *d = n->mount->dies;
	uint32_t die = n->die;
	bool nonblock = fi->flags & O_NONBLOCK;
	struct fs_vram *h;
	struct park *p;
	int ret;

	if (!d) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (d->read_only) {
		fuse_reply_err(req, EROFS);
		return;
	}
	h = calloc(1, sizeof(*h));
	p = calloc(1, sizeof(*p));
	if (!h || !p) {
		free(h);
		free(p);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->h.ops = &fs_vram_ops;
	h->d = d;
	h->die = die;
	h->ino = ino;
	h->size = fs_dies_vram_size(d, die);
	h->opener = fuse_req_ctx(req)->pid;
	p->asked = accel_metrics_now();
	p->req = req;
	p->h = h;
	p->fi = *fi;
	p->fi.fh = (uint64_t)(uintptr_t)h;
	p->fi.direct_io = 1; /* every read and write reaches the die; no page cache in between */
	p->fi.keep_cache = 0;
	bs_waiter_init(&p->w);
	p->w.pid = h->opener;
	if (!nonblock) {
		fs_dies_park_list(d, &p->parked, &p->w, open_expired); /* before the hold, as the interrupt */
		/* Before the hold: an interrupt that came first cancels it (the callback runs now). */
		p->interruptible = true;
		fuse_req_interrupt_func(req, on_interrupt, p);
	}
	ret = bs_arb_hold(d->arb, &p->w, die, nonblock);
	if (ret == 1)
		return; /* parked: p belongs to on_answer or on_interrupt now */
	finish_open(p, ret);
}

/* ---- close ------------------------------------------------------------------------ */

struct drop {
	uint32_t die;
	uint64_t epoch;
	bool lender;
};

static void vram_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_vram *h = fs_vram_of(fi);
	struct fs_dies *d = h->d;
	pid_t closer = fuse_req_ctx(req)->pid;
	bool closer_has, opener_has, same;
	struct drop drops[16];
	size_t n = 0;

	if (!d->dev_known) { /* no way to recognize our file: RELEASE alone decides */
		fuse_reply_err(req, 0);
		return;
	}
	/* Outside the lock: these read /proc. */
	closer_has = accel_proc_has_file(closer, d->dev, ino);
	same = accel_proc_same_process(h->opener, closer);
	opener_has = same ? closer_has : accel_proc_has_file(h->opener, d->dev, ino);

	pthread_mutex_lock(&d->lock);
	for (struct fs_vram *c = d->handles.next; c != &d->handles && n < 16; c = c->next) {
		bool release;
		if (!c->held || c->ino != ino)
			continue;
		if (c == h)
			/* The handle being closed: its opener has let go of the file. */
			release = !closer_has && !opener_has;
		else
			/* Another handle on the file opened by the closing process, which has no descriptor left. */
			release = !closer_has &&
			          (c->opener == h->opener ? same : accel_proc_same_process(c->opener, closer));
		if (!release)
			continue;
		drops[n++] = (struct drop){ c->die, c->epoch, c->lender };
		c->held = c->lender = false;
	}
	pthread_mutex_unlock(&d->lock);
	for (size_t i = 0; i < n; i++)
		drop_hold(d, drops[i].die, drops[i].epoch, drops[i].lender);
	/* close(2) returns only now: the slot is already free for the next open. */
	fuse_reply_err(req, 0);
}

static void vram_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_vram *h = fs_vram_of(fi);

	(void)ino;
	unlink_handle(h->d, h);
	free(h);
	fuse_reply_err(req, 0);
}

static void vram_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	(void)fi;
	/* Memory is always ready; nothing to wait for. */
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
}

const struct fs_file_ops fs_vram_ops = {
	.read = fs_dies_read,
	.write = fs_dies_write,
	.flush = vram_flush,
	.release = vram_release,
	.poll = vram_poll,
};

/* ---- what the tree shows -------------------------------------------------------------- */

unsigned fs_dies_count(const struct fs_dies *d)
{
	bs_status st;

	if (!d || bs_slot_query(bs_arb_slot(d->arb), &st))
		return 0;
	return st.num_dies;
}

bool fs_dies_has(const struct fs_dies *d, uint32_t die)
{
	bs_die_info info;

	return fs_dies_die_info(d, die, &info) == 0;
}

int fs_dies_die_info(const struct fs_dies *d, uint32_t die, bs_die_info *out)
{
	if (!d)
		return -ENOENT;
	return bs_slot_die_info(bs_arb_slot(d->arb), die, out);
}

uint64_t fs_dies_vram_size(const struct fs_dies *d, uint32_t die)
{
	bs_die_info info;

	return fs_dies_die_info(d, die, &info) ? 0 : info.vram_size;
}

uint64_t fs_die_vram_bytes(const struct fs_node *n)
{
	return fs_dies_vram_size(n->mount->dies, n->die);
}

/* ---- set-up -------------------------------------------------------------------------- */

void fs_dies_tune(struct fuse_conn_info *conn)
{
	/* Large requests: a 1 MiB read or write is one round trip, not 256. */
	if (conn->max_write < FS_DIES_MAX_IO)
		conn->max_write = FS_DIES_MAX_IO;
	conn->max_read = FS_DIES_MAX_IO;
}

struct fs_dies *fs_dies_new(struct bs_slot *slot, bool read_only, int *err)
{
	struct fs_dies *d = calloc(1, sizeof(*d));

	if (!d) {
		bs_slot_close(slot);
		*err = -ENOMEM;
		return NULL;
	}
	d->backend = slot->ops->backend;
	d->read_only = read_only;
	d->handles.next = d->handles.prev = &d->handles;
	d->parked.next = d->parked.prev = &d->parked;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->parked_lock, NULL);
	accel_cond_init_monotonic(&d->parked_cond);
	d->arb = bs_arb_new(slot, on_answer, on_note, d, err);
	if (!d->arb) {
		bs_slot_close(slot);
		pthread_cond_destroy(&d->parked_cond);
		pthread_mutex_destroy(&d->parked_lock);
		pthread_mutex_destroy(&d->lock);
		free(d);
		return NULL;
	}
	return d;
}

void fs_dies_mounted(struct fs_dies *d, const char *mountpoint)
{
	int ret;

	if (!d)
		return;
	ret = accel_path_dev(mountpoint, &d->dev);
	d->dev_known = ret == 0;
	if (ret)
		log_warn("dies: cannot stat the mountpoint %s (%s): a closed vram handle holds the slot until "
		         "the kernel releases it",
		         mountpoint, strerror(-ret));
}

void fs_dies_free(struct fs_dies *d)
{
	if (!d)
		return;
	fs_dies_stop_limiting(d);
	bs_arb_free(d->arb); /* parked opens are answered ESHUTDOWN */
	while (d->handles.next != &d->handles) {
		struct fs_vram *h = d->handles.next;
		h->prev->next = h->next;
		h->next->prev = h->prev;
		free(h);
	}
	pthread_cond_destroy(&d->parked_cond);
	pthread_mutex_destroy(&d->parked_lock);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
