/* SPDX-License-Identifier: MIT */
#include "tests/sim/sim_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/locate.h"

const char *fx_topology_dir(void)
{
	const char *d = getenv("ACCELFS_TEST_TOPOLOGIES");

	return d && *d ? d : "sim/topologies";
}

void fx_prepare(struct sim_fixture *fx, const struct accel_family *f, const char *topology)
{
	char topo[PATH_MAX], err[512];
	const char *tmp = getenv("TMPDIR");

	memset(fx, 0, sizeof(*fx));
	fx->family = f;
	snprintf(fx->state_dir, sizeof(fx->state_dir), "%s/accelfs-sim-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(fx->state_dir));
	if (topology && topology[0] != '/')
		snprintf(topo, sizeof(topo), "%s/%s", fx_topology_dir(), topology);
	else if (topology)
		snprintf(topo, sizeof(topo), "%s", topology);
	if (accel_sim_setup_env(fx->state_dir, topology ? topo : NULL, err, sizeof(err)) != 0)
		fail_msg("accel_sim_setup_env: %s", err);
	snprintf(fx->vendor_root, sizeof(fx->vendor_root), "%s/sim/%s", fx->state_dir, accel_sim_vendor_dir(f));
	if (accel_sim_locate_lib(f, fx->lib_path, sizeof(fx->lib_path), err, sizeof(err)) != 0)
		fail_msg("accel_sim_locate_lib: %s", err);
}

void fx_open(struct sim_fixture *fx)
{
	char err[512];
	int ret = accel_family_open_lib(fx->family, fx->lib_path, &fx->lib, err, sizeof(err));

	if (ret)
		fail_msg("accel_family_open_lib(%s): %s", fx->lib_path, err);
	fx->open = true;
}

void fx_close(struct sim_fixture *fx)
{
	if (fx->open)
		mig_lib_close(&fx->lib);
	fx->open = false;
}

static int rm_rf(const char *path)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	return system(cmd);
}

void fx_destroy(struct sim_fixture *fx)
{
	fx_close(fx);
	if (fx->state_dir[0] && !getenv("ACCELFS_TEST_KEEP"))
		rm_rf(fx->state_dir);
}

void *fx_sym(struct sim_fixture *fx, const char *suffix)
{
	char name[128];
	void *sym;

	snprintf(name, sizeof(name), "%s%s", fx->family->sym_prefix, suffix);
	sym = dlsym(fx->lib.handle, name);
	if (!sym)
		fail_msg("%s is not exported", name);
	return sym;
}

const char *fx_path(struct sim_fixture *fx, char *buf, const char *rel)
{
	snprintf(buf, PATH_MAX, "%s/%s", fx->vendor_root, rel);
	return buf;
}

const char *fx_read(struct sim_fixture *fx, const char *rel)
{
	static char content[256 * 1024];
	char path[PATH_MAX];
	FILE *f = fopen(fx_path(fx, path, rel), "r");
	size_t n = 0;

	content[0] = '\0';
	if (!f)
		return content;
	n = fread(content, 1, sizeof(content) - 1, f);
	content[n] = '\0';
	fclose(f);
	return content;
}

bool fx_exists(struct sim_fixture *fx, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	return lstat(fx_path(fx, path, rel), &st) == 0;
}

long fx_record_minor(struct sim_fixture *fx, const char *rel)
{
	const char *s = fx_read(fx, rel);
	const char *p = strstr(s, "DeviceFileMinor: ");

	return p ? strtol(p + strlen("DeviceFileMinor: "), NULL, 10) : -1;
}

static long node_part(struct sim_fixture *fx, const char *rel, bool want_major)
{
	char path[PATH_MAX];
	struct stat st;

	if (lstat(fx_path(fx, path, rel), &st) != 0 || !S_ISCHR(st.st_mode))
		return -1;
	return want_major ? (long)major(st.st_rdev) : (long)minor(st.st_rdev);
}

long fx_node_minor(struct sim_fixture *fx, const char *rel)
{
	return node_part(fx, rel, false);
}

long fx_node_major(struct sim_fixture *fx, const char *rel)
{
	return node_part(fx, rel, true);
}

mig_device_t fx_device(struct sim_fixture *fx, unsigned index)
{
	mig_device_t d = NULL;

	assert_int_equal(fx->lib.DeviceGetHandleByIndex_v2(index, &d), MIG_SUCCESS);
	assert_non_null(d);
	return d;
}

pid_t fx_hold(struct sim_fixture *fx, const char *const *rels)
{
	int pipefd[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[PATH_MAX];

		close(pipefd[0]);
		prctl(PR_SET_NAME, "simholder", 0, 0, 0);
		for (size_t i = 0; rels[i]; i++)
			if (open(fx_path(fx, path, rels[i]), O_PATH | O_CLOEXEC) < 0)
				_exit(1);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);
	return pid;
}

void fx_release(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

pid_t fx_hold_lock(struct sim_fixture *fx, off_t start, off_t len, int *release_fd)
{
	int ready[2], release[2];
	char path[PATH_MAX], c;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len };
		int fd = open(fx_path(fx, path, "locks"), O_RDWR | O_CLOEXEC);

		close(ready[0]);
		close(release[1]);
		if (fd < 0 || fcntl(fd, F_OFD_SETLKW, &fl) != 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		while (read(release[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	*release_fd = release[1];
	return pid;
}

static int setup_family(void **state, const struct accel_family *f)
{
	struct sim_fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	fx_prepare(fx, f, NULL);
	fx_open(fx);
	*state = fx;
	return 0;
}

int fx_setup_thead(void **state)
{
	return setup_family(state, &accel_family_thead);
}

int fx_setup_nvidia(void **state)
{
	return setup_family(state, &accel_family_nvidia);
}

int fx_teardown(void **state)
{
	fx_destroy(*state);
	free(*state);
	return 0;
}

mig_gpu_instance_t fx_create_gi(struct sim_fixture *fx, mig_device_t dev, unsigned profile, unsigned start,
                                unsigned size, mig_return_t expect)
{
	mig_gpu_instance_placement_t pl = { start, size };
	mig_gpu_instance_t gi = NULL;

	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, profile, &pl, &gi), expect);
	return gi;
}

mig_compute_instance_t fx_create_ci(struct sim_fixture *fx, mig_gpu_instance_t gi, unsigned profile,
                                    mig_return_t expect)
{
	mig_compute_instance_t ci = NULL;

	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi, profile, &ci), expect);
	return ci;
}

unsigned fx_gi_id(struct sim_fixture *fx, mig_gpu_instance_t gi)
{
	mig_gpu_instance_info_t info;

	assert_int_equal(fx->lib.GpuInstanceGetInfo(gi, &info), MIG_SUCCESS);
	return info.id;
}
