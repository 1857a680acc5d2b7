/* SPDX-License-Identifier: MIT */
/*
 * bare-fuse: the floor under accelfs, for bench/mig_bench.c.  The least a
 * low-level libfuse3 filesystem can do to serve the shapes of the MIG tree:
 *
 *   /d/status     a small file (--status-bytes, default 250: a job's status),
 *                 opened with keep_cache, exact st_size
 *   /d/e00 ...    --entries more small files, for listing (default 32)
 *   /d/<name>/    mkdir and rmdir in d: an in-memory directory, nothing else
 *
 * Entry and attribute timeouts are 1 s; nothing ever changes behind the
 * kernel's back, so nothing is invalidated.  It runs as accelfs does:
 * fuse_session_loop_mt (no clone_fd, up to 16 threads), no writeback cache,
 * -o default_permissions (and allow_other as root).  No
 * flush, no statfs, no forget bookkeeping: what FUSE costs when the
 * filesystem does nothing.
 *
 *   bare-fuse [-f] [--entries=N] [--status-bytes=N] MOUNTPOINT
 *
 * Without -f it returns once the mount is ready and serves in the
 * background; `umount MOUNTPOINT` stops it.
 */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT 1.0
#define INO_ROOT 1
#define INO_D 2
#define INO_STATUS 3
#define INO_ENTRY0 4        /* e00 .. */
#define INO_DYN0 (1u << 20) /* directories made by mkdir */
#define MAX_DIRS 256
#define ENTRY_BYTES 2 /* "2\n", as an `available` file */

static unsigned n_entries = 32;
static size_t status_len = 250;
static char *status_text;
static time_t started;

/* The directories mkdir made in d. */
static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char name[256];
	fuse_ino_t ino;
} dirs[MAX_DIRS];
static unsigned n_dirs;
static fuse_ino_t next_dyn = INO_DYN0;

static void fill_attr(struct stat *st, fuse_ino_t ino, bool dir, off_t size)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = dir ? S_IFDIR | 0755 : S_IFREG | 0444;
	st->st_nlink = dir ? 2 : 1;
	st->st_size = size;
	st->st_blksize = 4096;
	st->st_blocks = (size + 511) / 512;
	st->st_atime = st->st_mtime = st->st_ctime = started;
}

/* Attributes of ino; false when there is no such inode (any more). */
static bool attr_of(fuse_ino_t ino, struct stat *st)
{
	bool found = false;

	if (ino == INO_ROOT || ino == INO_D) {
		fill_attr(st, ino, true, 4096);
		return true;
	}
	if (ino == INO_STATUS) {
		fill_attr(st, ino, false, (off_t)status_len);
		return true;
	}
	if (ino >= INO_ENTRY0 && ino < INO_ENTRY0 + n_entries) {
		fill_attr(st, ino, false, ENTRY_BYTES);
		return true;
	}
	pthread_mutex_lock(&dirs_lock);
	for (unsigned i = 0; i < n_dirs; i++)
		if (dirs[i].ino == ino)
			found = true;
	pthread_mutex_unlock(&dirs_lock);
	if (found)
		fill_attr(st, ino, true, 4096);
	return found;
}

static void reply_entry_for(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	if (!attr_of(ino, &e.attr)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.ino = ino;
	e.attr_timeout = TIMEOUT;
	e.entry_timeout = TIMEOUT;
	fuse_reply_entry(req, &e);
}

static fuse_ino_t lookup_in_d(const char *name)
{
	fuse_ino_t ino = 0;
	unsigned k;

	if (!strcmp(name, "status"))
		return INO_STATUS;
	if (name[0] == 'e' && sscanf(name + 1, "%u", &k) == 1 && k < n_entries) {
		char want[16];
		snprintf(want, sizeof(want), "e%02u", k);
		if (!strcmp(want, name))
			return INO_ENTRY0 + k;
	}
	pthread_mutex_lock(&dirs_lock);
	for (unsigned i = 0; i < n_dirs; i++)
		if (!strcmp(dirs[i].name, name))
			ino = dirs[i].ino;
	pthread_mutex_unlock(&dirs_lock);
	return ino;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE; /* as accelfs */
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_ino_t ino = 0;

	if (parent == INO_ROOT && !strcmp(name, "d"))
		ino = INO_D;
	else if (parent == INO_D)
		ino = lookup_in_d(name);
	if (!ino)
		fuse_reply_err(req, ENOENT);
	else
		reply_entry_for(req, ino);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (!attr_of(ino, &st))
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (!attr_of(ino, &st)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	const char *data = "2\n";
	size_t len = ENTRY_BYTES;

	(void)fi;
	if (ino == INO_STATUS) {
		data = status_text;
		len = status_len;
	}
	if ((size_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > len - (size_t)off)
		size = len - (size_t)off;
	fuse_reply_buf(req, data + off, size);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (!attr_of(ino, &st))
		fuse_reply_err(req, ENOENT);
	else if (!S_ISDIR(st.st_mode))
		fuse_reply_err(req, ENOTDIR);
	else
		fuse_reply_open(req, fi);
}

/* Adds one entry (the next one at offset next) if it fits; false when the buffer is full. */
static bool add(fuse_req_t req, char *buf, size_t size, size_t *used, const char *name, fuse_ino_t ino, bool dir,
                off_t next)
{
	struct stat st;
	size_t need;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = dir ? S_IFDIR : S_IFREG;
	need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
	if (*used + need > size)
		return false;
	fuse_add_direntry(req, buf + *used, size - *used, name, &st, next);
	*used += need;
	return true;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	char *buf;
	size_t used = 0;
	off_t i = 0;

	(void)fi;
	if (ino != INO_ROOT && ino != INO_D) {
		/* a directory made by mkdir: empty */
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		if (off < 1 && !add(req, buf, size, &used, ".", ino, true, 1))
			goto out;
		if (off < 2)
			add(req, buf, size, &used, "..", INO_D, true, 2);
		goto out;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* ".", "..", then the names, each at index i; the next offset is i + 1. */
	if (i++ >= off && !add(req, buf, size, &used, ".", ino, true, i))
		goto out;
	if (i++ >= off && !add(req, buf, size, &used, "..", INO_ROOT, true, i))
		goto out;
	if (ino == INO_ROOT) {
		if (i++ >= off)
			add(req, buf, size, &used, "d", INO_D, true, i);
		goto out;
	}
	if (i++ >= off && !add(req, buf, size, &used, "status", INO_STATUS, false, i))
		goto out;
	for (unsigned k = 0; k < n_entries; k++) {
		char name[16];
		snprintf(name, sizeof(name), "e%02u", k);
		if (i++ >= off && !add(req, buf, size, &used, name, INO_ENTRY0 + k, false, i))
			goto out;
	}
	pthread_mutex_lock(&dirs_lock);
	for (unsigned k = 0; k < n_dirs; k++)
		if (i++ >= off && !add(req, buf, size, &used, dirs[k].name, dirs[k].ino, true, i))
			break;
	pthread_mutex_unlock(&dirs_lock);
out:
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_ino_t ino = 0;
	int err = 0;

	(void)mode;
	if (parent != INO_D) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (strlen(name) >= sizeof(dirs[0].name)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (lookup_in_d(name)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	pthread_mutex_lock(&dirs_lock);
	for (unsigned i = 0; i < n_dirs; i++)
		if (!strcmp(dirs[i].name, name))
			err = EEXIST;
	if (!err && n_dirs == MAX_DIRS)
		err = ENOSPC;
	if (!err) {
		ino = next_dyn++;
		snprintf(dirs[n_dirs].name, sizeof(dirs[n_dirs].name), "%s", name);
		dirs[n_dirs].ino = ino;
		n_dirs++;
	}
	pthread_mutex_unlock(&dirs_lock);
	if (err)
		fuse_reply_err(req, err);
	else
		reply_entry_for(req, ino);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int err = ENOENT;

	if (parent != INO_D) {
		fuse_reply_err(req, EACCES);
		return;
	}
	pthread_mutex_lock(&dirs_lock);
	for (unsigned i = 0; i < n_dirs; i++)
		if (!strcmp(dirs[i].name, name)) {
			dirs[i] = dirs[--n_dirs];
			err = 0;
			break;
		}
	pthread_mutex_unlock(&dirs_lock);
	if (err && lookup_in_d(name))
		err = ENOTDIR;
	fuse_reply_err(req, err);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
};

/* A status file's shape: "key: value" lines, exactly status_len bytes. */
static char *make_status(size_t len)
{
	static const char *const lines[] = { "state: ready\n",
		                             "device: d\n",
		                             "profile: 4g.48gb\n",
		                             "profile_id: 5\n",
		                             "gi: 0\n",
		                             "ci: 0\n",
		                             "placement: 0:4\n",
		                             "uuid: MIG-00000000-0000-4000-8000-000000000000\n",
		                             "owner: 0:0\n",
		                             "created: 2026-01-01T00:00:00Z\n" };
	char *s = malloc(len + 1);
	size_t n = 0;

	if (!s)
		return NULL;
	for (unsigned i = 0; n < len; i = (i + 1) % (sizeof(lines) / sizeof(lines[0])))
		for (const char *p = lines[i]; *p && n < len; p++)
			s[n++] = *p;
	if (len)
		s[len - 1] = '\n';
	s[len] = '\0';
	return s;
}

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-f] [--entries=N] [--status-bytes=N] MOUNTPOINT\n", prog);
	return 2;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	const char *mountpoint = NULL;
	bool foreground = false;
	int ret = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f"))
			foreground = true;
		else if (!strncmp(argv[i], "--entries=", 10))
			n_entries = (unsigned)strtoul(argv[i] + 10, NULL, 10);
		else if (!strncmp(argv[i], "--status-bytes=", 15))
			status_len = strtoul(argv[i] + 15, NULL, 10);
		else if (argv[i][0] == '-' || mountpoint)
			return usage(argv[0]);
		else
			mountpoint = argv[i];
	}
	if (!mountpoint || n_entries > 100 || status_len == 0 || status_len > 65536)
		return usage(argv[0]);
	status_text = make_status(status_len);
	started = time(NULL);
	if (!status_text)
		return 1;

	fuse_opt_add_arg(&args, argv[0]);
	fuse_opt_add_arg(&args, geteuid() == 0 ? "-odefault_permissions,allow_other,fsname=bare-fuse,subtype=bare"
	                                       : "-odefault_permissions,fsname=bare-fuse,subtype=bare");
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out_args;
	if (fuse_set_signal_handlers(se))
		goto out_session;
	if (fuse_session_mount(se, mountpoint)) {
		fprintf(stderr, "bare-fuse: cannot mount on %s\n", mountpoint);
		goto out_signals;
	}
	/* The parent returns only now: the mount is ready. */
	if (fuse_daemonize(foreground))
		goto out_unmount;
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 16);
	ret = fuse_session_loop_mt(se, cfg) ? 1 : 0;
	fuse_loop_cfg_destroy(cfg);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	fuse_opt_free_args(&args);
	free(status_text);
	return ret;
}
