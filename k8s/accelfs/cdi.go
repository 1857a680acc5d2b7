package accelfs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// cdiSpec is the part of a CDI spec that names its devices.
type cdiSpec struct {
	Kind    string `json:"kind"`
	Devices []struct {
		Name string `json:"name"`
	} `json:"devices"`
}

// hasCDIDevice reads the accelfs spec files of dir. A file that cannot be
// read or parsed (one being replaced, another program's) is skipped: the
// daemon replaces its files atomically, so the next look sees it whole.
// Files whose name ends in -<job>.json are read first.
func hasCDIDevice(dir, job string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, err
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "accelfs") || !strings.HasSuffix(name, ".json") || e.IsDir() {
			continue
		}
		names = append(names, name)
	}
	suffix := "-" + job + ".json"
	sort.SliceStable(names, func(i, j int) bool {
		return strings.HasSuffix(names[i], suffix) && !strings.HasSuffix(names[j], suffix)
	})
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var spec cdiSpec
		if json.Unmarshal(data, &spec) != nil || spec.Kind != CDIKind {
			continue
		}
		for _, d := range spec.Devices {
			if d.Name == job {
				return true, nil
			}
		}
	}
	return false, nil
}
