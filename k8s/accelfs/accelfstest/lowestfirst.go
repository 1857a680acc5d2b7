package accelfstest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"accelfs.io/k8s/accelfs"
)

// LowestFirst carves at a given placement on a daemon that has no
// placements/ yet, for tests only: accelfs's mkdir <profile>/<job> takes the
// lowest free legal placement, so the lower free placements are taken first
// by filler jobs, the job is carved, and the fillers are given back. A
// profile's legal placements never overlap one another, so a filler never
// takes a slice of the wanted placement. Everything else is the mount's.
type LowestFirst struct {
	*accelfs.Mount
}

var _ accelfs.Interface = LowestFirst{}

// CarveAt makes job at exactly start, through fillers below it.
func (l LowestFirst) CarveAt(card, profile string, start int, job string) error {
	dir := filepath.Join(l.Root, card, "mig", profile)
	path := filepath.Join(dir, "placements", fmt.Sprint(start), job)
	node, err := l.ReadNode()
	if err != nil {
		return err
	}
	d := node.Card(card)
	var p *accelfs.Profile
	if d != nil {
		p = d.Profile(profile)
	}
	if p == nil {
		return &accelfs.OpError{Op: "mkdir", Path: path, Err: syscall.ENOENT}
	}
	var want *accelfs.Span
	for _, pl := range p.Placements {
		if pl.Start == start {
			want = &pl
		}
	}
	if want == nil {
		return &accelfs.OpError{Op: "mkdir", Path: path, Err: syscall.EINVAL, Reason: fmt.Sprintf("%d is not a legal start", start)}
	}
	var fillers []string
	defer func() {
		for _, f := range fillers {
			_ = syscall.Rmdir(filepath.Join(dir, f))
		}
	}()
	for _, pl := range p.Placements {
		if pl.Start >= start || !isFree(d, pl) {
			continue
		}
		if pl.Overlaps(*want) {
			return fmt.Errorf("lowest-first carve: placement %s overlaps %s", pl, want)
		}
		f := fmt.Sprintf("filler-%d-%s", pl.Start, job)
		if len(f) > accelfs.MaxJobName {
			f = f[:accelfs.MaxJobName]
		}
		if err := syscall.Mkdir(filepath.Join(dir, f), 0o755); err != nil {
			return &accelfs.OpError{Op: "mkdir", Path: filepath.Join(dir, f), Err: err}
		}
		fillers = append(fillers, f)
	}
	if err := syscall.Mkdir(filepath.Join(dir, job), 0o755); err != nil {
		reason, _ := os.ReadFile(filepath.Join(dir, "last_error"))
		return &accelfs.OpError{Op: "mkdir", Path: filepath.Join(dir, job), Err: err, Reason: string(reason)}
	}
	st, err := l.Status(card, profile, job)
	if err == nil && st.Placement != *want {
		_ = syscall.Rmdir(filepath.Join(dir, job))
		return &accelfs.OpError{Op: "mkdir", Path: path, Err: syscall.ENOSPC, Reason: fmt.Sprintf("placement %s is taken (the lowest free was %s)", want, st.Placement)}
	}
	return err
}

func isFree(d *accelfs.Device, s accelfs.Span) bool {
	for _, in := range d.Instances {
		if in.Placement.Overlaps(s) {
			return false
		}
	}
	return true
}
