package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"accelfs.io/k8s/accelfs"
)

// The manifests under deploy/ are objects the API server would take: every
// document decodes strictly (no unknown or misspelt field) into its type.
func TestManifests(t *testing.T) {
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("manifests %v: %v", files, err)
	}
	kinds := map[string]int{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // kustomize's, not the API server's: TestKustomization
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			if len(bytes.TrimSpace(stripComments(doc))) == 0 || string(bytes.TrimSpace(doc)) == "---" {
				continue
			}
			_, gvk, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Errorf("%s, document %d: %v", f, i, err)
				continue
			}
			kinds[gvk.Kind]++
		}
	}
	for _, k := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "DeviceClass", "DaemonSet", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "ResourceClaimTemplate", "Pod"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in deploy/: %v", k, kinds)
		}
	}
}

// The kustomize base renders the whole deployment: every manifest of
// deploy/ but the example.
func TestKustomization(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Kind      string   `json:"kind"`
		Resources []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil && !strings.Contains(err.Error(), "unknown field") {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "*.yaml"))
	want := map[string]bool{}
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && b != "example.yaml" {
			want[b] = true
		}
	}
	for _, r := range k.Resources {
		if !want[r] {
			t.Errorf("kustomization.yaml lists %s, not a manifest of deploy/", r)
		}
		delete(want, r)
	}
	if k.Kind != "Kustomization" || len(want) > 0 {
		t.Errorf("kind %q; manifests left out of the base: %v", k.Kind, want)
	}
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// accelfs-dra classes prints deploy/deviceclasses.yaml for the simulated node.
func TestClassesCommand(t *testing.T) {
	if os.Getenv("ACCELFS_DRA_MAIN") == "1" {
		os.Args = append([]string{"accelfs-dra"}, strings.Fields(os.Getenv("ACCELFS_DRA_ARGS"))...)
		main()
		return
	}
	run := func(args string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestClassesCommand$")
		cmd.Env = append(os.Environ(), "ACCELFS_DRA_MAIN=1", "ACCELFS_DRA_ARGS="+args)
		out, err := cmd.Output()
		return string(out), err
	}
	out, err := run("classes --node-json=" + filepath.Join("..", "..", "accelfs", "testdata", "node-default.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "deploy", "deviceclasses.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("accelfs-dra classes printed:\n%s", out)
	}
	if _, err := run("classes --node-json=/nonexistent/node.json"); err == nil {
		t.Fatal("classes over a missing file succeeded")
	}
}

// The plugin refuses a directory that is not an accelfs mount, and an
// accelfs that cannot carve at a placement.
func TestCheckMount(t *testing.T) {
	root := t.TempDir()
	m := &accelfs.Mount{Root: root}
	if err := checkMount(m); err == nil || !strings.Contains(err.Error(), "not an accelfs mount") {
		t.Fatalf("an empty directory: %v", err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "accelfs", "testdata", "node-small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "node.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkMount(m); err == nil || !strings.Contains(err.Error(), "placements/") {
		t.Fatalf("no placements/: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "ppu0", "mig", "4g.48gb", "placements"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkMount(m); err != nil {
		t.Fatal(err)
	}
}
