package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// A peer on the machine without the bus token cannot change what
// `weave start-work --bus` runs: its subscriptions to hook topics are
// refused, and the run executes the block as the plan has it. A peer with
// the token, answering the same way, does change it (and the run says so),
// which shows the run does ask the bus's hooks.
func TestStartWorkBusPeerWithoutTheTokenCannotModifyTheRun(t *testing.T) {
	url := serveBusBin(t)
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Write\n  ```sh\n  echo original > out.txt\n  ```\n"
	modifier := func(cmd string, calls *atomic.Int32) bus.Handler {
		return func(_ context.Context, m bus.Message) (bus.Ack, error) {
			var ev struct {
				Tool string `json:"tool"`
			}
			if json.Unmarshal(m.Payload, &ev) != nil || ev.Tool != "bash" {
				return bus.Ack{Processed: true, Result: json.RawMessage(`{"action":"allow"}`)}, nil
			}
			calls.Add(1)
			res, _ := json.Marshal(map[string]any{"action": "modify", "args": map[string]any{"command": cmd}})
			return bus.Ack{Processed: true, Result: res}, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()

	// The intruder sends no token, as any process on the machine can.
	intruder, err := jsonrpc.Dial(ctx, url, jsonrpc.ClientInfo{Name: "intruder", Version: "1"}, jsonrpc.WithClientID("intruder"))
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	var intruded atomic.Int32
	// Spelled with fnmatch escapes, classes and ? (issue 23), the patterns
	// still match hook topics, and are refused for what they match.
	for _, pattern := range []string{
		"hook:tool.execute.before", "hook:*", "hook:", "*", "h*",
		`\hook:*`, `h\ook:*`, `\h\o\o\k\:*`, `\hook:tool.execute.before`, `[h]ook:*`, `?ook:*`,
		`\agent:*`, `\a\gent:tapestry`, `\system:*`,
	} {
		err := intruder.Subscribe(ctx, pattern, modifier("echo HIJACKED > out.txt", &intruded), jsonrpc.SubscribeOptions{Policy: bus.ContinueAll})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeForbidden {
			t.Errorf("token-less Subscribe(%q) = %v, want forbidden", pattern, err)
		}
	}
	// \* matches only the topic "*", which nobody can publish: it is
	// allowed, and hears nothing of the run.
	if err := intruder.Subscribe(ctx, `\*`, modifier("echo HIJACKED > out.txt", &intruded), jsonrpc.SubscribeOptions{Policy: bus.ContinueAll}); err != nil {
		t.Errorf("token-less Subscribe(%q) = %v, want success: it matches no protected topic", `\*`, err)
	}
	dir := project(t, map[string]string{"p": plan})
	r := runBin(t, nil, "", "--dir", dir, "start-work", "--bus", url, "p")
	if r.code != exitOK {
		t.Fatalf("start-work --bus = %d\nout %s\nerr %s", r.code, r.out, r.err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "original\n" {
		t.Errorf("out.txt = %q after a token-less peer answered hooks, want the block's own %q", b, "original\n")
	}
	if n := intruded.Load(); n != 0 {
		t.Errorf("the token-less peer was asked %d times to decide a hook, want never", n)
	}
	if strings.Contains(r.out+r.err, "modified by hook") {
		t.Errorf("the run says a hook modified a call:\n%s%s", r.out, r.err)
	}

	// The control: a local peer that read the token file is a hook.
	trusted := dialPeer(t, url, "trusted")
	var asked atomic.Int32
	if err := trusted.Subscribe(ctx, "hook:tool.execute.before", modifier("echo trusted > out.txt", &asked), jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	dir = project(t, map[string]string{"p": plan})
	r = runBin(t, nil, "", "--dir", dir, "start-work", "--bus", url, "p")
	if r.code != exitOK {
		t.Fatalf("start-work --bus with a trusted hook = %d\nout %s\nerr %s", r.code, r.out, r.err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "trusted\n" || asked.Load() == 0 {
		t.Errorf("out.txt = %q, hook asked %d times; want the trusted peer's command to have run", b, asked.Load())
	}
	if !strings.Contains(r.out+r.err, "modified by hook") {
		t.Errorf("the run does not show the modified call:\nout %s\nerr %s", r.out, r.err)
	}
}
