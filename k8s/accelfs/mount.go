package accelfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Interface is what the kubelet plugin needs of accelfs. Mount implements it
// over a mounted tree; accelfstest implements it in memory for unit tests.
// Errors of CarveAt and Remove wrap the errno (errors.Is(err, syscall.ENOSPC))
// and carry the profile directory's last_error.
type Interface interface {
	// ReadNode reads node.json afresh.
	ReadNode() (*Node, error)
	// CarveAt makes job at exactly that placement start of the card's profile.
	CarveAt(card, profile string, start int, job string) error
	// Remove gives the job back (rmdir).
	Remove(card, profile, job string) error
	// Status reads the job's status file.
	Status(card, profile, job string) (*Status, error)
	// HasCDIDevice says whether the node's CDI specs list accelfs.io/mig=<job>.
	HasCDIDevice(job string) (bool, error)
	// Watch opens a watch on node.json.
	Watch() (Watcher, error)
}

// Watcher wakes when node.json changes.
type Watcher interface {
	// Read reads node.json from the watch's own descriptor, which also arms
	// the next Wait: a change is measured against what was read last.
	Read() (*Node, error)
	// Wait returns once node.json differs from the last Read, or after
	// fallback at the latest (a periodic re-read, should a wake-up be
	// missed), or with ctx's error once ctx is done.
	Wait(ctx context.Context, fallback time.Duration) error
	Close() error
}

// CDIKind is the kind of the node-level CDI specs; a job's device is
// CDIKind=<job>.
const CDIKind = "accelfs.io/mig"

// CDIDeviceID is the CDI name of the job's device in the node-level spec.
func CDIDeviceID(job string) string { return CDIKind + "=" + job }

// jobNameRE is docs/tree.md's rule for job names (also CDI device names).
var jobNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// MaxJobName is the longest job name accelfs accepts, in bytes.
const MaxJobName = 63

// ValidJobName says whether accelfs accepts name for a job.
func ValidJobName(name string) bool {
	return len(name) <= MaxJobName && jobNameRE.MatchString(name)
}

// OpError is a failed mkdir or rmdir with the reason accelfs gave in the
// profile directory's last_error.
type OpError struct {
	Op     string // mkdir or rmdir
	Path   string
	Err    error // the errno
	Reason string
}

func (e *OpError) Error() string {
	msg := fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

func (e *OpError) Unwrap() error { return e.Err }

// Mount is a mounted accelfs tree and the daemon's CDI directory.
type Mount struct {
	Root   string // the mountpoint, /accel
	CDIDir string // the daemon's --cdi-dir, /var/run/cdi
}

var _ Interface = (*Mount)(nil)

// ReadNode reads node.json. It reads to the end of file: the size the
// tree reports for a generated file is not its length.
func (m *Mount) ReadNode() (*Node, error) {
	data, err := os.ReadFile(filepath.Join(m.Root, "node.json"))
	if err != nil {
		return nil, err
	}
	return ParseNode(data)
}

func (m *Mount) profileDir(card, profile string) string {
	return filepath.Join(m.Root, card, "mig", profile)
}

// PlacementsSupported says whether the daemon carves at a given placement:
// a profile directory of the card has placements/.
func (m *Mount) PlacementsSupported(card, profile string) bool {
	st, err := os.Stat(filepath.Join(m.profileDir(card, profile), "placements"))
	return err == nil && st.IsDir()
}

// CarveAt is mkdir <card>/mig/<profile>/placements/<start>/<job>.
func (m *Mount) CarveAt(card, profile string, start int, job string) error {
	path := filepath.Join(m.profileDir(card, profile), "placements", strconv.Itoa(start), job)
	if err := syscall.Mkdir(path, 0o755); err != nil {
		return &OpError{Op: "mkdir", Path: path, Err: err, Reason: m.lastError(card, profile)}
	}
	return nil
}

// Remove is rmdir <card>/mig/<profile>/<job>.
func (m *Mount) Remove(card, profile, job string) error {
	path := filepath.Join(m.profileDir(card, profile), job)
	if err := syscall.Rmdir(path); err != nil {
		return &OpError{Op: "rmdir", Path: path, Err: err, Reason: m.lastError(card, profile)}
	}
	return nil
}

func (m *Mount) lastError(card, profile string) string {
	data, err := os.ReadFile(filepath.Join(m.profileDir(card, profile), "last_error"))
	if err != nil {
		return ""
	}
	return lastErrorReason(string(data))
}

// lastErrorReason is a last_error line's why: accelfs writes "<UTC time> <why>"
// (docs/tree.md), and a reason compared or shown to the kubelet is the why alone.
func lastErrorReason(line string) string {
	line = strings.TrimSpace(line)
	if when, why, ok := strings.Cut(line, " "); ok {
		if _, err := time.Parse(time.RFC3339Nano, when); err == nil {
			return why
		}
	}
	return line
}

// Status reads <card>/mig/<profile>/<job>/status.
func (m *Mount) Status(card, profile, job string) (*Status, error) {
	data, err := os.ReadFile(filepath.Join(m.profileDir(card, profile), job, "status"))
	if err != nil {
		return nil, err
	}
	return ParseStatus(string(data))
}

// HasCDIDevice looks through the daemon's spec files in the CDI directory
// (accelfs*.json: one file of every job, or one file per job) for a spec of
// kind accelfs.io/mig naming the job's device.
func (m *Mount) HasCDIDevice(job string) (bool, error) {
	return hasCDIDevice(m.CDIDir, job)
}

// Watch opens node.json for waiting on.
func (m *Mount) Watch() (Watcher, error) {
	return openWatch(filepath.Join(m.Root, "node.json"))
}

// IsGone says whether err means the job (or its directory) is not there.
func IsGone(err error) bool {
	return errors.Is(err, syscall.ENOENT)
}
