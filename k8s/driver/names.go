package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"accelfs.io/k8s/accelfs"
)

// JobPrefix starts the name of every job this plugin carves. Jobs of any
// other name (Slurm's slurm-<jobid>-<n>, a notebook's) are never removed by
// it: they only take their slices away from the scheduler.
const JobPrefix = "k8s-"

var uidRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,46}[A-Za-z0-9])?$`)

// claimPart is the claim's part of its jobs' names: the UID itself (a UUID,
// 36 characters) when it fits the job-name rule, else 32 hex digits of its
// SHA-256.
func claimPart(uid types.UID) string {
	if uidRE.MatchString(string(uid)) {
		return string(uid)
	}
	sum := sha256.Sum256([]byte(uid))
	return hex.EncodeToString(sum[:16])
}

// JobName is the job of the claim's i-th device of this driver, in the order
// of the claim's allocation results: "k8s-<claim UID>-<i>". At most 4 + 48 +
// 1 + 2 bytes (a claim has at most 32 results): within accelfs's 63, and a
// valid CDI device name (docs/tree.md, Job names).
func JobName(uid types.UID, i int) string {
	return JobPrefix + claimPart(uid) + "-" + strconv.Itoa(i)
}

// ParseJobName splits a name made by JobName into the claim part and the
// index; ok is false for any other name.
func ParseJobName(job string) (claim string, i int, ok bool) {
	if !strings.HasPrefix(job, JobPrefix) || !accelfs.ValidJobName(job) {
		return "", 0, false
	}
	rest := job[len(JobPrefix):]
	dash := strings.LastIndexByte(rest, '-')
	if dash <= 0 {
		return "", 0, false
	}
	idx := rest[dash+1:]
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || strconv.Itoa(n) != idx {
		return "", 0, false
	}
	claim = rest[:dash]
	if !uidRE.MatchString(claim) {
		return "", 0, false
	}
	return claim, n, true
}
