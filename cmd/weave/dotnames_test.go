package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

// TestNamesWithDotsInsideThroughTheBinary has the model write, read, edit
// and write again two files whose names hold ".." without being a parent
// ("notes..txt", "docs/changes-v1..v2.md"): ordinary names, which once
// sent the path resolver into unbounded recursion (a crash at Go's stack
// limit) and the write guard into a gigabyte of memory.
func TestNamesWithDotsInsideThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	call := func(name, args string) modeltest.ToolCall { return modeltest.ToolCall{Name: name, Args: args} }
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{
			call("write", `{"path":"notes..txt","content":"one\n"}`),
			call("write", `{"path":"docs/changes-v1..v2.md","content":"v1\n"}`),
		}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{
			call("read", `{"path":"notes..txt"}`),
			call("read", `{"path":"docs/changes-v1..v2.md"}`),
		}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{
			call("edit", `{"path":"notes..txt","old_string":"one","new_string":"two"}`),
			call("edit", `{"path":"docs/changes-v1..v2.md","old_string":"v1","new_string":"v2"}`),
		}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{
			call("write", `{"path":"notes..txt","content":"three\n"}`),
			call("read", `{"path":"docs/../docs/changes-v1..v2.md"}`),
		}},
		modeltest.Turn{Text: "Done."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "keep notes")
	if code != 0 {
		t.Fatalf("chat = exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for name, want := range map[string]string{"notes..txt": "three\n", "docs/changes-v1..v2.md": "v2\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v, want %q", name, b, err, want)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := reqs[4].Decode(&body); err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	want := []string{
		"wrote 4 bytes to notes..txt", "wrote 3 bytes to docs/changes-v1..v2.md",
		"     1\tone\n", "     1\tv1\n",
		"replaced 1 occurrence in notes..txt", "replaced 1 occurrence in docs/changes-v1..v2.md",
		"wrote 6 bytes to notes..txt", "     1\tv2\n",
	}
	if !slices.Equal(results, want) {
		t.Errorf("tool results = %q,\nwant %q", results, want)
	}
}
