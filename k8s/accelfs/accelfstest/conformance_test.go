package accelfstest_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/accelfs/accelfstest"
)

// The in-memory Fake stands in for the tree in the driver's unit tests, so
// it must answer as the daemon does. Here the same operations go to both,
// the Fake built from the daemon's own node.json: the named cases of
// docs/tree.md's placements/ table, then a seeded random walk of carves
// and removals over every card, profile, start (legal or not) and a few
// names. After every step the errno must be the same, the reason too where
// the driver shows it (a taken placement, a name in use), and the two nodes
// must show the same jobs at the same placements and the same available.
func TestFakeMatchesDaemon(t *testing.T) {
	sim := accelfstest.StartSim(t, "small")
	start, err := sim.ReadNode()
	if err != nil {
		t.Fatal(err)
	}
	fake := accelfstest.New(start)
	step := 0
	both := func(what string, op func(accelfs.Interface) error) {
		t.Helper()
		step++
		want, got := op(sim.Mount), op(fake)
		if errnoOf(want) != errnoOf(got) {
			t.Fatalf("step %d, %s: the daemon answered %v, the Fake %v", step, what, want, got)
		}
		if e := errnoOf(want); e == syscall.ENOSPC || e == syscall.EEXIST || e == syscall.ENOENT {
			if w, g := reason(want), reason(got); w != g {
				t.Fatalf("step %d, %s: reasons differ:\n daemon: %s\n fake:   %s", step, what, w, g)
			}
		}
		sameNode(t, fmt.Sprintf("step %d, %s", step, what), sim.Mount, fake)
	}
	carve := func(card, profile string, at int, job string) {
		t.Helper()
		both(fmt.Sprintf("mkdir %s/mig/%s/placements/%d/%s", card, profile, at, job),
			func(fs accelfs.Interface) error { return fs.CarveAt(card, profile, at, job) })
	}
	remove := func(card, profile, job string) {
		t.Helper()
		both(fmt.Sprintf("rmdir %s/mig/%s/%s", card, profile, job),
			func(fs accelfs.Interface) error { return fs.Remove(card, profile, job) })
	}

	carve("gpu0", "3g.71gb", 4, "a1")                    // free: carved
	carve("gpu0", "3g.71gb", 4, "a1")                    // the same job again: EEXIST
	carve("ppu0", "4g.48gb", 0, "a1")                    // the name elsewhere on the node: EEXIST
	carve("gpu0", "1g.18gb", 5, "b1")                    // overlaps a1: ENOSPC naming it
	carve("gpu0", "7g.141gb", 0, "b1")                   // overlaps a1 and what was there before
	carve("gpu0", "3g.71gb", 1, "b1")                    // not a legal start: ENOENT (no directory)
	carve("gpu0", "3g.71gb", 0, "status")                // a file of placements/<start>/: EEXIST
	carve("gpu0", "3g.71gb", 0, "placements")            // a file of the profile directory: EEXIST
	carve("gpu0", "3g.71gb", 0, "b-")                    // not a job name: EINVAL
	carve("gpu0", "3g.71gb", 0, strings.Repeat("x", 64)) // too long: ENAMETOOLONG
	carve("gpu0", "5g.99gb", 0, "b1")                    // no such profile: ENOENT
	carve("gpu1", "1g.18gb", 0, "b1")                    // MIG off, no profiles: ENOENT
	carve("ppu1", "4g.48gb", 4, "b1")                    // a refused card: EBUSY
	remove("gpu0", "1g.18gb", "a1")                      // under another profile: ENOENT
	remove("gpu0", "3g.71gb", "a1")                      // given back
	remove("gpu0", "3g.71gb", "a1")                      // gone: ENOENT

	type place struct {
		card, profile string
		starts        []int
	}
	var places []place
	for _, d := range start.Devices {
		for _, p := range d.Profiles {
			pl := place{card: d.Name, profile: p.Name}
			for _, s := range p.Placements {
				pl.starts = append(pl.starts, s.Start)
			}
			pl.starts = append(pl.starts, pl.starts[len(pl.starts)-1]+1) // one not legal
			places = append(places, pl)
		}
	}
	seed := int64(1)
	if s, err := strconv.ParseInt(os.Getenv("ACCELFS_K8S_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (ACCELFS_K8S_SEED repeats it)", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 150; i++ {
		p := places[rng.Intn(len(places))]
		job := fmt.Sprintf("w%d", rng.Intn(6))
		if rng.Intn(3) == 0 {
			remove(p.card, p.profile, job)
		} else {
			carve(p.card, p.profile, p.starts[rng.Intn(len(p.starts))], job)
		}
	}
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if err == nil || !errors.As(err, &e) {
		return 0
	}
	return e
}

// GPU instance ids, and so the order the driver lists instances in (the
// holders of a taken placement), are the driver's to choose; the Fake
// numbers its own. The holders are compared as a set.
var (
	giRE      = regexp.MustCompile(`GPU instance \d+`)
	holdersRE = regexp.MustCompile(`is taken:([^.]*)\.`)
)

func reason(err error) string {
	var op *accelfs.OpError
	if !errors.As(err, &op) {
		return ""
	}
	r := giRE.ReplaceAllString(op.Reason, "GPU instance N")
	return holdersRE.ReplaceAllStringFunc(r, func(m string) string {
		h := strings.Split(holdersRE.FindStringSubmatch(m)[1], ";")
		sort.Strings(h)
		return "is taken:" + strings.Join(h, ";") + "."
	})
}

// sameNode compares what the driver reads of the two nodes: every job
// (card, profile, state, placement), every instance's placement and owner,
// and every profile's available.
func sameNode(t *testing.T, what string, a, b accelfs.Interface) {
	t.Helper()
	describe := func(fs accelfs.Interface) []string {
		n, err := fs.ReadNode()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var out []string
		for _, d := range n.Devices {
			for _, p := range d.Profiles {
				out = append(out, fmt.Sprintf("%s %s available %d", d.Name, p.Name, p.Available))
			}
			for _, j := range d.Jobs {
				at := "-"
				if j.Placement != nil {
					at = j.Placement.String()
				}
				out = append(out, fmt.Sprintf("%s job %s %s %s at %s", d.Name, j.Name, j.Profile, j.State, at))
			}
			for _, in := range d.Instances {
				owner := "-"
				if in.Job != nil {
					owner = *in.Job
				}
				out = append(out, fmt.Sprintf("%s instance %s at %s of %s", d.Name, in.Profile, in.Placement, owner))
			}
		}
		sort.Strings(out)
		return out
	}
	da, db := describe(a), describe(b)
	if strings.Join(da, "\n") != strings.Join(db, "\n") {
		t.Fatalf("%s: the nodes differ:\n daemon:\n  %s\n fake:\n  %s", what, strings.Join(da, "\n  "), strings.Join(db, "\n  "))
	}
}
