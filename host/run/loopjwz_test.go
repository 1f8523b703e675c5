package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jwz"
	"github.com/weavehq/weave/bus/jwz/jwztest"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/host/run/runtest"
)

// The loop events of three runs, written to the project's jwz store with
// no bus at all, read back from the documented format and by idle's TUI.
func TestLoopObserverWritesToJWZ(t *testing.T) {
	project := loopProject(t)
	prompt := filepath.Join(project, ".weave", "plans", "demo.md")
	ctx := context.Background()
	role := "loop"
	w := jwz.NewWriter(project, &jwz.Sender{ID: "weave", Name: "weave", Role: &role})
	for _, run := range [][]Event{pausedRun, resumedRun, failedRun} {
		feed(LoopObserver(ctx, nil, project, nil, nil, LoopToJWZ(w)), run)
	}
	store := jwztest.ReadStore(t, filepath.Join(project, ".jwz"))
	cur := store[loop.TopicCurrent]

	type seen struct {
		Event, Reason string
		Iter, Max     int
		Prompt        string
	}
	var got []seen
	for _, m := range cur {
		st, ok := jwztest.IdleParse(m.Body)
		if !ok {
			t.Fatalf("idle cannot parse %s", m.Body)
		}
		s := seen{Event: st.Event, Reason: st.Reason}
		if len(st.Stack) > 0 {
			top := st.Stack[len(st.Stack)-1]
			s.Iter, s.Max, s.Prompt = top.Iter, top.Max, top.PromptFile
		}
		got = append(got, s)
		if string(m.Sender) != `{"id":"weave","name":"weave","model":null,"role":"loop"}` {
			t.Errorf("sender = %s", m.Sender)
		}
		if _, err := loop.Decode([]byte(m.Body)); err != nil {
			t.Errorf("loop.Decode(%s) = %v", m.Body, err)
		}
	}
	want := []seen{
		{"STATE", "", 1, 2, prompt}, {"STATE", "", 1, 2, prompt}, {"STATE", "", 2, 2, prompt}, {"STATE", "", 2, 2, prompt},
		{Event: "ABORT"},
		{"STATE", "", 2, 2, prompt}, {"STATE", "", 2, 2, prompt}, {"STATE", "", 2, 2, prompt},
		{Event: "DONE", Reason: "COMPLETE"},
		{"STATE", "", 1, 2, prompt}, {"STATE", "", 1, 2, prompt},
		{Event: "ABORT"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loop:current as idle reads it (-want +got):\n%s", diff)
	}
	if st, _ := jwztest.IdleParse(cur[0].Body); st.UpdatedAt != at(0).Unix() || st.RunID != loop.RunID(loop.ModeLoop, at(0), os.Getpid()) {
		t.Errorf("first STATE as idle reads it = %+v", st)
	}
	if n := len(store[loop.TopicAnchor]); n != 3 {
		t.Fatalf("loop:anchor has %d messages, want 3", n)
	}
	for _, m := range store[loop.TopicAnchor] {
		if _, err := loop.DecodeAnchor([]byte(m.Body)); err != nil {
			t.Errorf("DecodeAnchor(%s) = %v", m.Body, err)
		}
	}
}

// A pause (Ctrl-C or a failed task) is an ABORT marked resumable; a
// frame names its prompt by content address beside its path.
func TestLoopObserverPauseAndPromptBlob(t *testing.T) {
	project := loopProject(t)
	plan, err := os.ReadFile(filepath.Join(project, ".weave", "plans", "demo.md"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(plan)
	blob := "sha256:" + hex.EncodeToString(sum[:])
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	rec := runtest.RecordLoop(t, b)
	feed(LoopObserver(context.Background(), b, project, nil, nil), pausedRun)
	feed(LoopObserver(context.Background(), b, project, nil, nil), failedRun)
	var aborts []loop.Event
	for _, m := range rec.WaitN(t, 8) {
		e, err := loop.Decode(m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := e.Top(); ok && f.PromptBlob != blob {
			t.Errorf("frame prompt_blob = %q, want %q", f.PromptBlob, blob)
		}
		if e.Kind == loop.KindAbort {
			aborts = append(aborts, e)
		}
	}
	want := []loop.Event{
		{Kind: loop.KindAbort, Reason: loop.ReasonUserCancelled, Resumable: true, Stack: []loop.Frame{}},
		{Kind: loop.KindAbort, Resumable: true, Stack: []loop.Frame{}},
	}
	if diff := cmp.Diff(want, aborts); diff != "" {
		t.Errorf("ABORTs (-want +got):\n%s", diff)
	}
}

// TestLoopObserverPromptBlobFollowsTicks: the plan ticked in place between
// a task's start and its end (one byte, the same size, the same inode) is
// hashed again for the task.done STATE: that frame names the plan as
// ticked, not as it was when the task started.
func TestLoopObserverPromptBlobFollowsTicks(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"demo": "# Demo\n\n## TODOs\n\n- [ ] 1. One\n- [ ] 2. Two\n"})
	path := filepath.Join(project, ".weave", "plans", "demo.md")
	blobOf := func() string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	rec := runtest.RecordLoop(t, b)
	obs := LoopObserver(context.Background(), b, project, nil, nil)
	obs(pausedRun[0])
	obs(pausedRun[1])
	before := blobOf()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if _, err := f.WriteAt([]byte("x"), int64(bytes.Index(data, []byte("[ ]"))+1)); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	after := blobOf()
	obs(pausedRun[3])
	var got []string
	for _, m := range rec.WaitN(t, 3) {
		e, err := loop.Decode(m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if fr, ok := e.Top(); ok {
			got = append(got, fr.PromptBlob)
		}
	}
	if want := []string{before, before, after}; !slices.Equal(got, want) {
		t.Errorf("prompt_blob of the STATEs = %q, want %q (the last after the tick)", got, want)
	}
}
