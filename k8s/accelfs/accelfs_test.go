package accelfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func readTestNode(t *testing.T, name string) *Node {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	n, err := ParseNode(data)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The node.json of a simulated node (small topology: two PPUs, two H200s,
// the second with MIG off) with jobs carved in and outside Kubernetes, an
// instance made by hand and a card refused.
func TestParseNodeSmall(t *testing.T) {
	n := readTestNode(t, "node-small.json")
	var names []string
	for _, d := range n.Devices {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, " "); got != "ppu0 ppu1 gpu0 gpu1" {
		t.Fatalf("devices %q", got)
	}
	ppu0, ppu1, gpu0, gpu1 := n.Card("ppu0"), n.Card("ppu1"), n.Card("gpu0"), n.Card("gpu1")
	if !ppu0.OK() || !ppu0.MigEnabled() || ppu0.Slices() != 8 || *ppu0.Ordinal != 0 {
		t.Errorf("ppu0: ok %v mig %v slices %d", ppu0.OK(), ppu0.MigEnabled(), ppu0.Slices())
	}
	if ppu1.OK() || ppu1.Refusal == nil || !strings.Contains(*ppu1.Refusal, "subdivided") {
		t.Errorf("ppu1 should be refused: %q %v", ppu1.State, ppu1.Refusal)
	}
	if gpu1.MigEnabled() || gpu1.Slices() != 0 || len(gpu1.Profiles) != 0 {
		t.Errorf("gpu1 has MIG off: mode %q, %d profiles", gpu1.MigMode, len(gpu1.Profiles))
	}
	p := gpu0.Profile("1g.18gb")
	if p == nil || p.ProfileID != 19 || len(p.Placements) != 7 || p.Placements[6] != (Span{6, 1}) || p.MemoryMiB != 16384 {
		t.Fatalf("gpu0 1g.18gb: %+v", p)
	}
	j := n.FindJob("notebook")
	if j == nil || j.Device != "gpu0" || j.Profile != "2g.35gb" || *j.Placement != (Span{0, 2}) || j.State != StateReady {
		t.Fatalf("notebook: %+v", j)
	}
	free := gpu0.Free()
	want := []bool{false, false, false, true, true, true, false, true}
	for i := range want {
		if free[i] != want[i] {
			t.Fatalf("gpu0 free slices %v, want %v", free, want)
		}
	}
	var orphan *Instance
	for i, in := range gpu0.Instances {
		if in.Job == nil {
			orphan = &gpu0.Instances[i]
		}
	}
	if orphan == nil || orphan.Placement != (Span{6, 1}) {
		t.Fatalf("gpu0's hand-made instance: %+v", orphan)
	}
}

func TestParseNodeRefusesOtherFormats(t *testing.T) {
	if _, err := ParseNode([]byte(`{"format": 2, "devices": []}`)); err == nil {
		t.Fatal("format 2 accepted")
	}
	if _, err := ParseNode([]byte(`{"format": 1,`)); err == nil {
		t.Fatal("truncated JSON accepted")
	}
}

func TestParseStatus(t *testing.T) {
	st, err := ParseStatus("state: ready\ndevice: gpu0\nprofile: 1g.18gb\nprofile_id: 19\ngi: 0\nci: 0\n" +
		"placement: 6:1\nuuid: MIG-7a758166-c67b-4772-8418-5ae33f59685e\nowner: 0:0\ncreated: 2026-12-01T21:32:56Z\n" +
		"reclaim: manual\ncontainer: 3f2a9c1e0b4d pid=4242 since=2026-12-01T21:33:00Z\ncontainer: 77 pid=1 since=x\n")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateReady || st.Device != "gpu0" || st.Profile != "1g.18gb" || st.ProfileID != 19 ||
		st.Placement != (Span{6, 1}) || !strings.HasPrefix(st.UUID, "MIG-") || len(st.Containers) != 2 || st.Fields["owner"] != "0:0" {
		t.Fatalf("%+v", st)
	}
	if _, err := ParseStatus("device: gpu0\n"); err == nil {
		t.Fatal("a status without state accepted")
	}
	if _, err := ParseStatus("state: ready\nplacement: x\n"); err == nil {
		t.Fatal("a bad placement accepted")
	}
}

func TestValidJobName(t *testing.T) {
	for _, ok := range []string{"a", "job1", "k8s-2f1c7a4e-9b3d-4c41-8e0a-6d5b3f9a1c27-0", "A.b_c-d", strings.Repeat("x", 63)} {
		if !ValidJobName(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "job-", "job.", "job_", "-job", "a:b", "a/b", strings.Repeat("x", 64)} {
		if ValidJobName(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A directory laid out like a mount: the paths Mount uses, over a plain
// filesystem (no accelfs semantics: mkdir just makes the directory).
func fakeTree(t *testing.T) *Mount {
	t.Helper()
	root, cdi := t.TempDir(), t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "node-small.json"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "node.json"), data, 0o444))
	prof := filepath.Join(root, "gpu0", "mig", "1g.18gb")
	for _, s := range []string{"0", "1", "2", "3", "4", "5", "6"} {
		must(os.MkdirAll(filepath.Join(prof, "placements", s), 0o755))
	}
	must(os.WriteFile(filepath.Join(prof, "last_error"), []byte("no free placement: 3:1 overlaps job x\n"), 0o444))
	must(os.MkdirAll(filepath.Join(prof, "j1"), 0o755))
	must(os.WriteFile(filepath.Join(prof, "j1", "status"), []byte("state: ready\ndevice: gpu0\nprofile: 1g.18gb\nprofile_id: 19\nplacement: 3:1\nuuid: MIG-1\n"), 0o444))
	return &Mount{Root: root, CDIDir: cdi}
}

func TestMountPaths(t *testing.T) {
	m := fakeTree(t)
	n, err := m.ReadNode()
	if err != nil || n.Card("gpu0") == nil {
		t.Fatalf("ReadNode: %v", err)
	}
	if !m.PlacementsSupported("gpu0", "1g.18gb") || m.PlacementsSupported("gpu0", "2g.35gb") {
		t.Error("PlacementsSupported looks at <card>/mig/<profile>/placements")
	}
	if err := m.CarveAt("gpu0", "1g.18gb", 4, "k8s-a-0"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(m.Root, "gpu0/mig/1g.18gb/placements/4/k8s-a-0")); err != nil || !st.IsDir() {
		t.Fatalf("CarveAt made no placements/4/k8s-a-0: %v", err)
	}
	// A start the tree does not list: the errno, with last_error's sentence.
	err = m.CarveAt("gpu0", "1g.18gb", 9, "k8s-a-1")
	var oe *OpError
	if !errors.As(err, &oe) || !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "overlaps job x") {
		t.Fatalf("CarveAt at 9: %v", err)
	}
	st, err := m.Status("gpu0", "1g.18gb", "j1")
	if err != nil || st.Placement != (Span{3, 1}) {
		t.Fatalf("Status: %+v %v", st, err)
	}
	if err := m.Remove("gpu0", "1g.18gb", "j1"); !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("rmdir of a non-empty plain directory: %v", err)
	}
	if err := m.Remove("gpu0", "1g.18gb", "gone"); !IsGone(err) {
		t.Fatalf("rmdir of a job that is not there: %v", err)
	}
}

func TestCDILookup(t *testing.T) {
	m := fakeTree(t)
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(m.CDIDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	has := func(job string) bool {
		t.Helper()
		ok, err := m.HasCDIDevice(job)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if has("j1") {
		t.Fatal("an empty CDI directory lists j1")
	}
	// The one node-level file of every job.
	write("accelfs.json", `{"cdiVersion":"0.5.0","kind":"accelfs.io/mig","devices":[{"name":"j1"},{"name":"j2"}]}`)
	// A file per job, named for the daemon.
	write("accelfs-0a1b2c3d-j3.json", `{"cdiVersion":"0.5.0","kind":"accelfs.io/mig","devices":[{"name":"j3"}]}`)
	// A job's own copy (kind accelfs.io/job), another vendor's spec, a half-written file.
	write("accelfs-job-j4.json", `{"cdiVersion":"0.5.0","kind":"accelfs.io/job","devices":[{"name":"j4"}]}`)
	write("nvidia.json", `{"cdiVersion":"0.5.0","kind":"accelfs.io/mig","devices":[{"name":"j5"}]}`)
	write("accelfs-0a1b2c3d-j6.json", `{"cdiVersion":"0.5.0","kind":"accelfs.io/mig","devi`)
	for job, want := range map[string]bool{"j1": true, "j2": true, "j3": true, "j4": false, "j5": false, "j6": false} {
		if has(job) != want {
			t.Errorf("HasCDIDevice(%s) = %v, want %v", job, !want, want)
		}
	}
	if got := CDIDeviceID("j1"); got != "accelfs.io/mig=j1" {
		t.Errorf("CDIDeviceID %q", got)
	}
	gone := &Mount{Root: m.Root, CDIDir: filepath.Join(m.Root, "no-such-dir")}
	if ok, err := gone.HasCDIDevice("j1"); ok || err != nil {
		t.Errorf("a missing CDI directory: %v %v", ok, err)
	}
}

// A plain file never reports POLLPRI: Wait comes back after the fallback,
// and Read reads past the first page (node.json is larger than the size the
// tree reports).
func TestWatchPlainFile(t *testing.T) {
	m := fakeTree(t)
	w, err := m.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	n, err := w.Read()
	if err != nil || len(n.Devices) != 4 {
		t.Fatalf("Read: %v", err)
	}
	if err := w.Wait(context.Background(), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}
}

// A context cancelled while Wait sits in poll() ends the wait at once, not
// at the fallback, and leaves nothing behind: the next Wait, with a live
// context, waits its full fallback.
func TestWatchCancelledWhileWaiting(t *testing.T) {
	m := fakeTree(t)
	w, err := m.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for round := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		if err := w.Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: Wait cancelled while waiting: %v", round, err)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("round %d: the cancel was seen after %v", round, took)
		}
		start = time.Now()
		if err := w.Wait(context.Background(), 100*time.Millisecond); err != nil {
			t.Fatalf("round %d: Wait after a cancel: %v", round, err)
		}
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Fatalf("round %d: the last cancel woke the next Wait after %v", round, took)
		}
	}
}
