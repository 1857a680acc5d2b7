package accelfstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"accelfs.io/k8s/accelfs"
)

// Sim is a simulated node served by the real daemon (accelfs --sim), mounted
// for one test.
type Sim struct {
	*accelfs.Mount
	State    string
	topology string
	accelfs  string
	smi      string
	hook     string
	pid      int
	t        testing.TB
}

// RequireEnv, set to 1 (the meson test does), makes a missing simulated
// node a failure instead of a skip: CI must run these tests.
const RequireEnv = "ACCELFS_K8S_REQUIRE_SIM"

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1: the simulated node is required)", msg, RequireEnv)
	}
	t.Skipf("no simulated accelfs node: %s", msg)
}

// binary finds a program of the accelfs build: from $env (meson sets
// ACCELFS, ACCEL_SMI, ACCELFS_HOOK), else in build/ of the source tree above
// the working directory.
func binary(env, rel string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, "build", rel)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// StartSim mounts a simulated node (topology: "" for the built-in one, or a
// name or file accelfs --sim takes) and unmounts it when the test ends. It
// skips the test, or fails it under ACCELFS_K8S_REQUIRE_SIM=1, where there is
// no root, no /dev/fuse or no accelfs build.
func StartSim(t testing.TB, topology string) *Sim {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "not root (a FUSE mount with device nodes needs root)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		unavailable(t, "no /dev/fuse")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		unavailable(t, "no fusermount3")
	}
	s := &Sim{topology: topology, t: t,
		accelfs: binary("ACCELFS", "fs/accelfs"),
		smi:     binary("ACCEL_SMI", "tools/accel-smi"),
		hook:    binary("ACCELFS_HOOK", "tools/accelfs-hook"),
	}
	if s.accelfs == "" || s.smi == "" {
		unavailable(t, "no accelfs build (set ACCELFS and ACCEL_SMI, or build with meson in build/)")
	}
	var err error
	if s.State, err = os.MkdirTemp("", "accelfs-k8s-state-"); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "accelfs-k8s-mnt-")
	if err != nil {
		t.Fatal(err)
	}
	s.Mount = &accelfs.Mount{Root: root, CDIDir: filepath.Join(s.State, "cdi")}
	t.Cleanup(func() {
		// Before the stop: whether the daemon was still there when the test ended.
		alive := s.alive()
		s.Stop()
		os.Remove(root)
		if reports := s.sanitizerReports(); reports != "" {
			t.Errorf("accelfs's sanitizers reported errors:\n%s", reports)
		}
		if t.Failed() {
			s.keepLog(alive)
		}
		os.RemoveAll(s.State)
	})
	s.Start()
	return s
}

// sanitizerReports is what a daemon built with ASan or UBSan reported (Start
// sends its reports to the state directory: a daemon in the background has
// no stderr), "" when nothing or when it was built without them.
func (s *Sim) sanitizerReports() string {
	files, _ := filepath.Glob(filepath.Join(s.State, "sanitizer*"))
	var out strings.Builder
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			out.Write(data)
		}
	}
	return out.String()
}

// keepLog shows a failed test's daemon log in the test's output and keeps a
// copy (accelfs-k8s-<test>.log) in MESON_LOG_DIR when meson runs the tests,
// else in the temporary directory: the state directory it lives in is
// removed with the test, and a daemon that went away (a read answering
// ECONNABORTED: its connection aborted as it died) says why only there.
func (s *Sim) keepLog(alive string) {
	s.t.Logf("when the test ended, %s", alive)
	data, err := os.ReadFile(filepath.Join(s.State, "accelfs.log"))
	if err != nil {
		s.t.Logf("accelfs's log: %v", err)
		return
	}
	if reports := s.sanitizerReports(); reports != "" {
		data = append(data, "\n--- what its sanitizers reported ---\n"+reports...)
	}
	dir := os.Getenv("MESON_LOG_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(s.t.Name())
	path := filepath.Join(dir, "accelfs-k8s-"+name+".log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		s.t.Logf("cannot keep accelfs's log in %s: %v", path, err)
	} else {
		s.t.Logf("accelfs's log is kept in %s", path)
	}
	s.t.Logf("accelfs's log (%s):\n%s", s.State, data)
}

// alive says whether the daemon is still running: a test that lost its
// mount learns whether the daemon went (its log's last lines say how) or
// the mount went under a running daemon.
func (s *Sim) alive() string {
	if s.pid == 0 {
		return "accelfs was not running (stopped by the test)"
	}
	if exited(s.pid) {
		return fmt.Sprintf("accelfs pid %d was gone", s.pid)
	}
	return fmt.Sprintf("accelfs pid %d was still running", s.pid)
}

// exited says whether process pid has ended: gone, or a zombie not yet reaped
// whose every thread is gone.  The daemon runs in the background, an orphan
// whose reaper is init, and an init may collect it seconds late.  Its main
// thread can be a zombie while the others still exit, holding /dev/fuse: only
// once the zombie is its last thread has it let go of everything.
func exited(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	zombie, threads := false, 0
	for _, line := range strings.Split(string(data), "\n") {
		key, value, _ := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		switch key {
		case "State":
			zombie = strings.HasPrefix(value, "Z") || strings.HasPrefix(value, "X")
		case "Threads":
			threads, _ = strconv.Atoi(value)
		}
	}
	return zombie && threads <= 1
}

// Start mounts the node (again, after Stop: the same state directory, so the
// same jobs come back, as after a restart of the daemon).
func (s *Sim) Start() {
	s.t.Helper()
	sim := "--sim"
	if s.topology != "" {
		sim += "=" + s.topology
	}
	args := []string{sim, "--state-dir=" + s.State, "--cdi-dir=" + s.CDIDir,
		"--poll-interval=0.2", "--orphan-grace=3600", "--busy-retries=1"}
	if s.hook != "" {
		args = append(args, "--hook="+s.hook)
	}
	args = append(args, s.Root)
	cmd := exec.Command(s.accelfs, args...)
	// A daemon in the background has no stderr: a sanitizer's report (a crash's
	// stack included) goes to files beside its log, which a failed test shows.
	cmd.Env = append(os.Environ(),
		"ASAN_OPTIONS=log_path="+filepath.Join(s.State, "sanitizer")+":"+os.Getenv("ASAN_OPTIONS"),
		"TSAN_OPTIONS=log_path="+filepath.Join(s.State, "sanitizer")+":"+os.Getenv("TSAN_OPTIONS"),
		"UBSAN_OPTIONS=log_path="+filepath.Join(s.State, "sanitizer")+":print_stacktrace=1:"+os.Getenv("UBSAN_OPTIONS"))
	unlock := kernelBoundLock(s.t)
	out, err := cmd.CombinedOutput()
	if err == nil {
		var st unix.Statfs_t
		err = unix.Statfs(s.Root, &st) // answered only once INIT was
	}
	unlock()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.State, "accelfs.log"))
		s.t.Fatalf("accelfs %s: %v\n%s\n%s", strings.Join(args, " "), err, out, log)
	}
	data, err := os.ReadFile(filepath.Join(s.State, "accelfs.pid"))
	if err == nil {
		s.pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
}

// The kernel reads fs.fuse.default_request_timeout (Linux 6.14 and later)
// when a daemon answers FUSE_INIT, whoever's daemon it is, and the
// integration tests of the kernel's bound set it to 1 s for a mount of their
// own: a mount made in that instant, by another run on the machine, would get
// it too, and any of its requests the kernel then caught waiting more than 1 s
// would abort it (ECONNABORTED).  So a daemon mounts holding this lock shared
// until it has answered a request; a test that sets the bound holds it alone
// (tests/integration/harness.py, KERNEL_BOUND_LOCK: the same file).
func kernelBoundLockPath() string {
	if st, err := os.Stat("/run/lock"); err == nil && st.IsDir() {
		return "/run/lock/accelfs-tests-kernel-bound.lock"
	}
	return filepath.Join(os.TempDir(), "accelfs-tests-kernel-bound.lock")
}

// kernelBoundLock takes that lock shared and returns what lets go of it.
func kernelBoundLock(t testing.TB) func() {
	t.Helper()
	path := kernelBoundLockPath()
	// Not O_CREAT on an existing file: in a sticky directory the kernel
	// refuses that for a file another user made (fs.protected_regular).
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		if fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644); err == unix.EEXIST {
			fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	// A liveness bound, not a timing: a holder never keeps it long.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Close(fd) }
		}
		if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
			unix.Close(fd)
			t.Fatalf("flock %s: %v", path, err)
		}
	}
}

// Stop stops the daemon as systemd does (SIGTERM: it unmounts, lazily when
// something still holds the tree open, and exits) and waits for it to exit.
// Start again is a restart of accelfs under the plugin.
func (s *Sim) Stop() {
	if s.pid == 0 {
		return
	}
	if err := syscall.Kill(s.pid, syscall.SIGTERM); err != nil {
		s.t.Logf("kill -TERM %d: %v", s.pid, err)
	}
	// A liveness bound, not a timing: a daemon that does not exit fails here.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if exited(s.pid) {
			s.pid = 0
			_ = exec.Command("fusermount3", "-u", "-z", s.Root).Run() // nothing left, normally
			return
		}
	}
	s.t.Errorf("accelfs pid %d did not exit on SIGTERM", s.pid)
	_ = syscall.Kill(s.pid, syscall.SIGKILL)
	_ = exec.Command("fusermount3", "-u", "-z", s.Root).Run()
	s.pid = 0
}

// SMI runs the simulator's control tool on this node (accel-smi --sim=STATE ...).
func (s *Sim) SMI(args ...string) (string, error) {
	out, err := exec.Command(s.smi, append([]string{"--sim=" + s.State}, args...)...).CombinedOutput()
	return string(out), err
}
