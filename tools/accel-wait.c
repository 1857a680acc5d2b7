/* SPDX-License-Identifier: MIT */
/*
 * accel-wait: wait, without a polling loop, until a file of the accelfs
 * tree changes or says what you wait for.
 *
 *   accel-wait [--until=VALUE] [--timeout=SEC] FILE
 *
 * The tree's generated files report POLLPRI once their content differs
 * from what the reader last read (the sysfs convention); this reads, waits
 * in poll(), reads again.  With --until it returns once the file's content
 * (its trailing newline left out) is VALUE; without, after the first
 * change.  The content that ended the wait goes to stdout.
 *
 * Exit: 0 done, 1 timed out or the file went away, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *to)
{
	fprintf(to, "usage: accel-wait [--until=VALUE] [--timeout=SEC] FILE\n"
	            "Wait until FILE (a file under an accelfs mount) changes, or reads VALUE.\n"
	            "  --until=VALUE   return once the content, without its trailing newline, is VALUE\n"
	            "  --timeout=SEC   give up after SEC seconds (exit 1); default: wait forever\n"
	            "  -h, --help, -V, --version\n"
	            "Exit: 0 done, 1 timed out or the file went away, 2 usage.\n");
}

/*
 * The whole file from offset 0 into *buf (grown as needed: node.json of a
 * large node is over 64 KiB); its length, or -1 on error (errno set).
 */
static ssize_t read_all(int fd, char **buf, size_t *cap)
{
	size_t got = 0;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	for (;;) {
		if (got + 1 >= *cap) {
			size_t grown_cap = *cap ? *cap * 2 : 4096;
			char *grown = realloc(*buf, grown_cap);
			if (!grown)
				return -1;
			*buf = grown;
			*cap = grown_cap;
		}
		ssize_t r = read(fd, *buf + got, *cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	(*buf)[got] = '\0';
	return (ssize_t)got;
}

static int matches(const char *text, const char *until)
{
	size_t n = strlen(text);

	if (n && text[n - 1] == '\n')
		n--;
	return strlen(until) == n && !strncmp(text, until, n);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *until = NULL, *path = NULL;
	double timeout = -1, deadline;
	static char *text; /* the file's last content, as long as it is: kept until exit */
	static size_t cap;
	int fd;

	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--until=", 8)) {
			until = argv[i] + 8;
		} else if (!strncmp(argv[i], "--timeout=", 10)) {
			char *end;
			timeout = strtod(argv[i] + 10, &end);
			if (*end || end == argv[i] + 10 || timeout < 0) {
				fprintf(stderr, "accel-wait: --timeout=%s: expected seconds\n", argv[i] + 10);
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("accel-wait %s\n", ACCELFS_VERSION);
			return 0;
		} else if (argv[i][0] == '-' || path) {
			fprintf(stderr, "accel-wait: unexpected argument %s\n", argv[i]);
			usage(stderr);
			return 2;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "accel-wait: %s: %s\n", path, strerror(errno));
		return 1;
	}
	deadline = timeout >= 0 ? now_s() + timeout : 0;
	/* The first read is what "changed" is measured against. */
	if (read_all(fd, &text, &cap) < 0) {
		fprintf(stderr, "accel-wait: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (until && matches(text, until)) {
		fputs(text, stdout);
		return 0;
	}
	for (;;) {
		struct pollfd p = { fd, POLLPRI, 0 };
		int ms = -1, r;

		if (timeout >= 0) {
			double left = deadline - now_s();
			if (left <= 0) {
				fprintf(stderr, "accel-wait: %s: timed out after %g s\n", path, timeout);
				return 1;
			}
			ms = (int)(left * 1000) + 1;
		}
		r = poll(&p, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "accel-wait: poll %s: %s\n", path, strerror(errno));
			return 1;
		}
		if (r == 0 || !(p.revents & (POLLPRI | POLLERR)))
			continue;
		if (read_all(fd, &text, &cap) < 0) {
			fprintf(stderr, "accel-wait: %s: %s (the file went away)\n", path, strerror(errno));
			return 1;
		}
		if (!until || matches(text, until)) {
			fputs(text, stdout);
			return 0;
		}
	}
}
