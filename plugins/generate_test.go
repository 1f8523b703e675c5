package plugins

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// versionLines are the generator versions in the generated headers; they may
// differ between machines without the code differing.
var versionLines = regexp.MustCompile(`(?m)^// (\t| - )?protoc.*$`)

// TestGeneratedCodeIsCurrent regenerates the protocol code and compares it to
// the committed files, when protoc and its Go plugins are installed.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	for _, tool := range []string{"protoc", "protoc-gen-go", "protoc-gen-go-grpc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("protoc", "-I", "internal/proto",
		"--go_out="+out, "--go_opt=paths=source_relative",
		"--go-grpc_out="+out, "--go-grpc_opt=paths=source_relative",
		"weave/v1/weave.proto")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	for _, name := range []string{"weave.pb.go", "weave_grpc.pb.go"} {
		fresh, err := os.ReadFile(filepath.Join(out, "weave", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("internal", "proto", "weave", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		if versionLines.ReplaceAllString(string(fresh), "") != versionLines.ReplaceAllString(string(committed), "") {
			t.Errorf("%s is stale: run go generate ./plugins and commit the result", name)
		}
	}
}
