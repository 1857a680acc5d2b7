/* SPDX-License-Identifier: MIT */
/* dies/<n>/vram: reads and writes through the slot's mapping, while the handle holds the die. */
#include "fs/dies_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barswap/bs_guard.h"
#include "core/model/log.h"
#include "fs/vram_pin.h"

/*
 * The handle's hold, taken back without waiting if its opener closed it
 * while a copy lives on elsewhere (see the top of fs/dies.c).
 */
static int hold_for_io(struct fs_vram *h, uint64_t *epoch)
{
	struct fs_dies *d = h->d;
	struct bs_waiter w;
	bool extra = false;
	int ret;

	pthread_mutex_lock(&d->lock);
	*epoch = h->epoch;
	ret = -h->revoked;
	if (h->held || ret) {
		pthread_mutex_unlock(&d->lock);
		return ret;
	}
	pthread_mutex_unlock(&d->lock);
	/* Not under d->lock: the arbiter may answer parked opens, which take it. */
	bs_waiter_init(&w);
	w.pid = h->opener;
	ret = bs_arb_hold(d->arb, &w, h->die, true);
	if (ret)
		return ret;
	pthread_mutex_lock(&d->lock);
	if (h->held || h->revoked) {
		extra = true; /* a concurrent read took it back first: one hold per handle */
	} else {
		h->held = true;
		h->epoch = w.epoch;
	}
	*epoch = h->epoch;
	pthread_mutex_unlock(&d->lock);
	if (extra)
		bs_arb_drop(d->arb, h->die, w.epoch);
	return 0;
}

/* io_span's answer for an offset at or past the end of the die's VRAM. */
#define IO_AT_END 1

/*
 * What read and write both do first: hold the die (hold_for_io), then see
 * where the transfer of *size bytes at off falls.  0 with *size cut to what
 * is left before the end, IO_AT_END, or -errno (the hold failed).
 */
static int io_span(struct fs_vram *h, off_t off, size_t *size, uint64_t *epoch)
{
	int ret = hold_for_io(h, epoch);

	if (ret)
		return ret;
	if (off < 0 || (uint64_t)off >= h->size)
		return IO_AT_END;
	if (*size > h->size - (uint64_t)off)
		*size = h->size - (uint64_t)off;
	return 0;
}

/*
 * A read is replied straight from the mapping where the kernel can take its
 * pages (fs/vram_pin.h): one copy, the kernel's, into the reader's buffer.
 * Otherwise (a VM_PFNMAP mapping: the module's BAR window) it is copied
 * into this thread's buffer first and replied from there.
 */
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

static void bounce_key_make(void)
{
	pthread_key_create(&bounce_key, free);
}

static char *bounce_buffer(void)
{
	char *buf;

	pthread_once(&bounce_once, bounce_key_make);
	buf = pthread_getspecific(bounce_key);
	if (!buf) {
		buf = malloc(FS_DIES_MAX_IO);
		if (buf)
			pthread_setspecific(bounce_key, buf);
	}
	return buf;
}

/*
 * Copy size bytes between the slot's mapping (begun with bs_arb_io_begin)
 * and a buffer, and end the access; a fault of the mapping (the hold was
 * revoked meanwhile) becomes the arbiter's errno for it.  0, or -errno.
 */
static int slot_copy(struct fs_vram *h, uint64_t epoch, void *dst, const void *src, size_t size)
{
	int ret = bs_guarded_copy(dst, src, size);

	bs_arb_io_end(h->d->arb);
	return ret ? bs_arb_io_fault(h->d->arb, h->die, epoch) : 0;
}

void fs_dies_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_vram *h = fs_vram_of(fi);
	uint64_t epoch;
	void *vram;
	char *buf;
	int ret = io_span(h, off, &size, &epoch);

	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (ret == IO_AT_END) {
		fuse_reply_buf(req, NULL, 0); /* end of file */
		return;
	}
	if (size > FS_DIES_MAX_IO)
		size = FS_DIES_MAX_IO; /* max_read: the kernel never asks for more */
	ret = bs_arb_io_begin(h->d->arb, h->die, epoch, &vram);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fs_vram_pinnable(vram)) {
		/*
		 * The slot stays ours until the kernel has copied the reply out.
		 * Once it has, the reader may close, and the RELEASE of another
		 * thread free h: what is needed after the reply is taken now.
		 */
		struct bs_arbiter *arb = h->d->arb;
		uint32_t die = h->die;

		ret = fuse_reply_buf(req, (const char *)vram + off, size);
		bs_arb_io_end(arb);
		if (ret)
			log_warn("dies/%u/vram: the kernel could not copy %zu bytes at %lld out of the slot (%s): the "
			         "reader gets EIO",
			         die, size, (long long)off, strerror(-ret));
		return;
	}
	buf = bounce_buffer(); /* only here: a pinnable read never needs it */
	if (!buf) {
		bs_arb_io_end(h->d->arb);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = slot_copy(h, epoch, buf, (const char *)vram + off, size);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, size);
}

void fs_dies_write(fuse_req_t req, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_vram *h = fs_vram_of(fi);
	uint64_t epoch;
	void *vram;
	int ret = io_span(h, off, &size, &epoch); /* a short write up to the end; the next one gets ENOSPC */

	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (ret == IO_AT_END) {
		fuse_reply_err(req, ENOSPC); /* VRAM does not grow */
		return;
	}
	ret = bs_arb_io_begin(h->d->arb, h->die, epoch, &vram);
	if (!ret)
		ret = slot_copy(h, epoch, (char *)vram + off, buf, size);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
}
