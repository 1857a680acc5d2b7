/* SPDX-License-Identifier: MIT */
/*
 * Which process an attachment is: its pid and start time, read from
 * /proc/<pid>/stat, and while the registry is open a pidfd of it.  A pid is
 * freed only once its process is reaped, and a pidfd turns readable when
 * the process exits, before that: so a pidfd opened on pid, then the start
 * time read, then the pidfd found not readable, says that the start time
 * read is the pidfd's process's.  From then on the pidfd alone decides: a
 * pid reused within one clock tick has the same start time, but not the
 * same pidfd.
 */
#include "core/state/attach_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/model/log.h"
#include "core/driver/proc_files.h"

bool accel_pid_alive(const char *proc_root, pid_t pid, unsigned long long want, unsigned long long *start)
{
	char dir[PATH_MAX], state = 0;
	unsigned long long st = 0;

	if (pid <= 0)
		return false;
	snprintf(dir, sizeof(dir), "%s/%d", proc_root, (int)pid);
	if (accel_proc_stat(dir, &state, &st) || !st)
		return false;
	/* A zombie has exited: nothing of the container runs any more. */
	if (state == 'Z' || state == 'X')
		return false;
	if (start)
		*start = st;
	return !want || st == want;
}

static int pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* Has the process of this pidfd exited? */
static bool exited(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
}

void accel_attach_set_pidfds(struct accel_attach *a, bool on)
{
	pthread_mutex_lock(&a->lock);
	a->pidfds = on;
	if (!on)
		attach_watch_close_all(a);
	pthread_mutex_unlock(&a->lock);
}

int attach_watch_open(struct accel_attach *a, pid_t pid, int *fd, unsigned long long *start)
{
	int f = -1;

	*fd = -1;
	if (pid <= 0)
		return -ESRCH;
	if (a->pidfds) {
		f = pidfd_open(pid);
		if (f < 0 && errno == ESRCH)
			return -ESRCH;
		if (f < 0 && errno == ENOSYS) {
			a->pidfds = false;
			log_info(
				"pidfd_open is not available (a kernel before 5.3, or valgrind): a container's exit is "
				"seen by its pid and start time, at each pass");
		} else if (f < 0 && !a->pidfd_warned) {
			a->pidfd_warned = true; /* once: it would be said again at every pass */
			log_warn("cannot hold a pidfd of pid %d (%s): its exit is seen by its pid and start time, at "
			         "each pass",
			         (int)pid, strerror(errno));
		}
	}
	if (!accel_pid_alive(a->proc_root, pid, 0, start) || (f >= 0 && exited(f))) {
		if (f >= 0)
			close(f);
		return -ESRCH;
	}
	*fd = f;
	return 0;
}

static bool matches(const struct attach_watch *w, const char *job, const struct accel_attachment *c)
{
	return w->pid == c->pid && w->start == c->start && !strcmp(w->id, c->id) && !strcmp(w->job, job);
}

static struct attach_watch *watch_of(struct accel_attach *a, const char *job, const struct accel_attachment *c)
{
	for (size_t i = 0; i < a->n_w; i++)
		if (matches(&a->w[i], job, c))
			return &a->w[i];
	return NULL;
}

void attach_watch_adopt(struct accel_attach *a, const char *job, const struct accel_attachment *c, int fd)
{
	struct attach_watch *w = watch_of(a, job, c), *grown;

	if (w) {
		/* The same process, watched already: one pidfd is enough. */
		close(fd);
		return;
	}
	grown = realloc(a->w, (a->n_w + 1) * sizeof(*grown));
	if (!grown) {
		close(fd); /* its pid and start time still tell, as without pidfds */
		return;
	}
	a->w = grown;
	w = &a->w[a->n_w++];
	memset(w, 0, sizeof(*w));
	snprintf(w->job, sizeof(w->job), "%s", job);
	snprintf(w->id, sizeof(w->id), "%s", c->id);
	w->pid = c->pid;
	w->start = c->start;
	w->fd = fd;
}

bool attach_watch_alive(struct accel_attach *a, const char *job, const struct accel_attachment *c)
{
	struct attach_watch *w = watch_of(a, job, c);
	unsigned long long start = 0;
	int fd;

	if (w)
		return !exited(w->fd);
	if (!a->pidfds)
		return accel_pid_alive(a->proc_root, c->pid, c->start, NULL);
	/* Recorded before this registry was opened (a restart): the pid is that process only if its start time is. */
	if (attach_watch_open(a, c->pid, &fd, &start))
		return false;
	if (start != c->start) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (fd >= 0)
		attach_watch_adopt(a, job, c, fd);
	return true;
}

void attach_watch_sync(struct accel_attach *a)
{
	for (size_t i = 0; i < a->n_w;) {
		bool used = false;

		for (size_t k = 0; k < a->n && !used; k++)
			for (size_t m = 0; m < a->e[k].n && !used; m++)
				used = matches(&a->w[i], a->e[k].job, &a->e[k].c[m]);
		if (used) {
			i++;
			continue;
		}
		close(a->w[i].fd);
		memmove(&a->w[i], &a->w[i + 1], (a->n_w - i - 1) * sizeof(a->w[0]));
		a->n_w--;
	}
}

void attach_watch_close_all(struct accel_attach *a)
{
	for (size_t i = 0; i < a->n_w; i++)
		close(a->w[i].fd);
	free(a->w);
	a->w = NULL;
	a->n_w = 0;
}

int accel_attach_pidfds(struct accel_attach *a, int **fds, size_t *n)
{
	int ret = 0;

	*fds = NULL;
	*n = 0;
	pthread_mutex_lock(&a->lock);
	if (a->n_w) {
		*fds = malloc(a->n_w * sizeof(**fds));
		if (!*fds)
			ret = -ENOMEM;
	}
	for (size_t i = 0; *fds && i < a->n_w; i++) {
		int fd = fcntl(a->w[i].fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		(*fds)[(*n)++] = fd;
	}
	pthread_mutex_unlock(&a->lock);
	if (ret) {
		for (size_t i = 0; i < *n; i++)
			close((*fds)[i]);
		free(*fds);
		*fds = NULL;
		*n = 0;
	}
	return ret;
}
