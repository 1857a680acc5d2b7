package accelfs

import (
	"fmt"
	"strconv"
	"strings"
)

// Status is a job's status file: key: value lines (docs/tree.md, Jobs).
type Status struct {
	State      string
	Reason     string
	Device     string
	Profile    string
	ProfileID  int
	Placement  Span
	UUID       string
	Containers []string // the container: lines, one per attached container
	Fields     map[string]string
}

// ParseStatus reads the key: value lines of a status file. Unknown keys are
// kept in Fields; container: lines may repeat.
func ParseStatus(text string) (*Status, error) {
	st := &Status{Fields: map[string]string{}}
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, ": ")
		if !ok {
			key, value, ok = strings.Cut(line, ":")
			if !ok {
				return nil, fmt.Errorf("status: line %q is not key: value", line)
			}
		}
		value = strings.TrimSpace(value)
		switch key {
		case "state":
			st.State = value
		case "reason":
			st.Reason = value
		case "device":
			st.Device = value
		case "profile":
			st.Profile = value
		case "profile_id":
			id, err := strconv.Atoi(value)
			if err != nil {
				return nil, fmt.Errorf("status: profile_id %q: %w", value, err)
			}
			st.ProfileID = id
		case "placement":
			sp, err := ParseSpan(value)
			if err != nil {
				return nil, fmt.Errorf("status: %w", err)
			}
			st.Placement = sp
		case "uuid":
			st.UUID = value
		case "container":
			st.Containers = append(st.Containers, value)
			continue
		}
		st.Fields[key] = value
	}
	if st.State == "" {
		return nil, fmt.Errorf("status: no state line")
	}
	return st, nil
}

// ParseSpan reads "start:size".
func ParseSpan(s string) (Span, error) {
	a, b, ok := strings.Cut(s, ":")
	start, err1 := strconv.Atoi(a)
	size, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || start < 0 || size <= 0 {
		return Span{}, fmt.Errorf("placement %q is not start:size", s)
	}
	return Span{Start: start, Size: size}, nil
}
