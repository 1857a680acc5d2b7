/* SPDX-License-Identifier: MIT */
#include "fs/vram_pin.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * vmsplice takes the page with the same get_user_pages a FUSE reply's copy
 * uses: where it succeeds, so will the reply.  Asked at every read, not
 * remembered: a mapping can go and another come at the same address, and
 * two system calls are little beside the megabyte copied after them.  Each
 * thread keeps one pipe for it, drained after every probe.
 */
struct probe_pipe {
	int fd[2];
};

static pthread_key_t pipe_key;
static pthread_once_t pipe_once = PTHREAD_ONCE_INIT;

static void pipe_free(void *p)
{
	struct probe_pipe *pp = p;

	close(pp->fd[0]);
	close(pp->fd[1]);
	free(pp);
}

static void pipe_key_make(void)
{
	pthread_key_create(&pipe_key, pipe_free);
}

static struct probe_pipe *thread_pipe(void)
{
	struct probe_pipe *pp;

	pthread_once(&pipe_once, pipe_key_make);
	pp = pthread_getspecific(pipe_key);
	if (pp)
		return pp;
	pp = malloc(sizeof(*pp));
	if (!pp)
		return NULL;
	if (pipe2(pp->fd, O_CLOEXEC | O_NONBLOCK)) {
		free(pp);
		return NULL;
	}
	pthread_setspecific(pipe_key, pp);
	return pp;
}

bool fs_vram_pinnable(const void *addr)
{
	struct iovec iov = { (void *)addr, 1 };
	struct probe_pipe *pp = thread_pipe();
	char byte;

	if (!pp)
		return false; /* the copy through the bounce buffer always works */
	if (vmsplice(pp->fd[1], &iov, 1, SPLICE_F_NONBLOCK) != 1)
		return false;
	/* Drain it: the pipe holds a reference to the page until read. */
	return read(pp->fd[0], &byte, 1) == 1;
}
