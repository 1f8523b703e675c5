package jwz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// storeRecord is one line of messages.jsonl as jwz's README documents it,
// read without this package's types.
type storeRecord struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	TopicID     string          `json:"topic_id"`
	ParentID    json.RawMessage `json:"parent_id"`
	Body        string          `json:"body"`
	CreatedAt   json.Number     `json:"created_at"`
	Sender      json.RawMessage `json:"sender"`
	Git         json.RawMessage `json:"git"`
}

var ulidRE = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)

// readStore reads a store's log from the documented format and returns the
// bodies of each topic's messages, in log order, failing the test on any
// line that is not a whole, well-formed record.
func readStore(t *testing.T, dir string) map[string][]storeRecord {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "messages.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("log does not end with a newline: %q", data[max(0, len(data)-40):])
	}
	topics := map[string]string{} // id -> name
	out := map[string][]storeRecord{}
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("line %d is not a JSON object: %v: %s", i+1, err, line)
		}
		var r storeRecord
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !ulidRE.MatchString(r.ID) || seen[r.ID] {
			t.Fatalf("line %d: id %q is not a fresh ULID", i+1, r.ID)
		}
		seen[r.ID] = true
		ms, err := r.CreatedAt.Int64()
		if err != nil || ms < 1_000_000_000_000 || ms > 10_000_000_000_000 {
			t.Fatalf("line %d: created_at %q is not a time in milliseconds", i+1, r.CreatedAt)
		}
		switch r.Type {
		case "topic":
			for _, k := range []string{"type", "id", "name", "description", "created_at"} {
				if _, ok := fields[k]; !ok {
					t.Fatalf("line %d: topic record has no %s", i+1, k)
				}
			}
			if _, dup := topics[r.ID]; dup {
				t.Fatalf("line %d: topic id repeated", i+1)
			}
			for _, n := range topics {
				if n == r.Name {
					t.Fatalf("line %d: topic %q created twice", i+1, r.Name)
				}
			}
			topics[r.ID] = r.Name
		case "message":
			for _, k := range []string{"type", "id", "topic_id", "parent_id", "body", "created_at", "sender", "git"} {
				if _, ok := fields[k]; !ok {
					t.Fatalf("line %d: message record has no %s", i+1, k)
				}
			}
			name, ok := topics[r.TopicID]
			if !ok {
				t.Fatalf("line %d: message of unknown topic %q", i+1, r.TopicID)
			}
			if string(r.ParentID) != "null" {
				t.Fatalf("line %d: parent_id = %s, want null", i+1, r.ParentID)
			}
			out[name] = append(out[name], r)
		default:
			t.Fatalf("line %d: type %q", i+1, r.Type)
		}
	}
	return out
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

func TestPostWritesTheDocumentedFormat(t *testing.T) {
	project := gitRepo(t)
	role := "loop"
	w := NewWriter(project, &Sender{ID: "weave", Name: "weave", Role: &role})
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		id, err := w.Post(ctx, "loop:current", []byte(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := w.Post(ctx, "loop:anchor", []byte(" {\"a\":1}\n")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(project, ".jwz")
	got := readStore(t, dir)
	cur := got["loop:current"]
	if len(cur) != 3 || len(got["loop:anchor"]) != 1 || got["loop:anchor"][0].Body != `{"a":1}` {
		t.Fatalf("store = %+v", got)
	}
	for i, r := range cur {
		if r.ID != ids[i] || r.Body != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("message %d = %s %q", i, r.ID, r.Body)
		}
		if i > 0 && (r.ID <= cur[i-1].ID || r.CreatedAt <= cur[i-1].CreatedAt && len(r.CreatedAt) <= len(cur[i-1].CreatedAt)) {
			t.Errorf("message %d does not sort after %d: %s %s", i, i-1, r.ID, r.CreatedAt)
		}
		if string(r.Sender) != `{"id":"weave","name":"weave","model":null,"role":"loop"}` {
			t.Errorf("sender = %s", r.Sender)
		}
		var g Git
		if err := json.Unmarshal(r.Git, &g); err != nil || len(g.OID) != 40 || g.Head != "main" || !g.Dirty { // dirty: .jwz itself is untracked, as with jwz
			t.Errorf("git = %s", r.Git)
		}
	}
	ign, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil || !strings.Contains(string(ign), "lock") {
		t.Errorf(".gitignore = %q, %v", ign, err)
	}
	// The store is found from a subdirectory, as jwz finds it.
	sub := filepath.Join(project, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, ok := StoreDir(sub); !ok || d != dir {
		t.Errorf("StoreDir(sub) = %q, %v", d, ok)
	}
}

// A writer that holds the store's lock (jwz appending) keeps Post from
// writing until it lets go; many writers at once leave whole lines and one
// topic record.
func TestPostRespectsTheLockAndNeverTearsLines(t *testing.T) {
	project := t.TempDir()
	dir := filepath.Join(project, ".jwz")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another process's half-written line, as a writer that died mid-line
	// leaves it: the next record must start on its own line.
	if err := os.WriteFile(filepath.Join(dir, "messages.jsonl"), []byte(`{"type":"topic","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","name":"other","description":"","created_at":1700000000000}`+"\n"+`{"type":"mess`), 0o644); err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(project, nil)
	done := make(chan error, 1)
	go func() {
		_, err := w.Post(context.Background(), "loop:current", []byte(`{"first":true}`))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Post returned (%v) while the lock was held", err)
	case <-time.After(300 * time.Millisecond): // failure guard: it must still be waiting
	}
	before, _ := os.ReadFile(filepath.Join(dir, "messages.jsonl"))
	if bytes.Contains(before, []byte("first")) {
		t.Fatal("Post wrote while the lock was held")
	}
	// Complete the torn line as its writer would not: drop it, as a
	// reader skips it; then let go.
	if err := os.WriteFile(filepath.Join(dir, "messages.jsonl"), before[:bytes.LastIndexByte(before, '\n')+1], 0o644); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	_ = lf.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	writers := []*Writer{NewWriter(project, nil), NewWriter(project, nil), w}
	for i, wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				if _, err := wr.Post(context.Background(), "loop:current", []byte(fmt.Sprintf(`{"w":%d,"j":%d,"pad":%q}`, i, j, strings.Repeat("x", 5000)))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got := readStore(t, dir)
	if n := len(got["loop:current"]); n != 61 {
		t.Errorf("loop:current has %d messages, want 61", n)
	}
	if s := string(got["loop:current"][0].Sender); s != "null" {
		t.Errorf("sender without identity = %s, want null", s)
	}
}

func TestPostAppendsAfterATornLine(t *testing.T) {
	project := t.TempDir()
	dir := filepath.Join(project, ".jwz")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "messages.jsonl"), []byte(`{"type":"mess`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWriter(project, nil).Post(context.Background(), "t", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "messages.jsonl"))
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[0] != `{"type":"mess` {
		t.Fatalf("log = %q", data)
	}
	for _, l := range lines[1:] {
		if !json.Valid([]byte(l)) {
			t.Errorf("line %q is not whole", l)
		}
	}
}

func TestULIDEncoding(t *testing.T) {
	// The ULID spec's example time 1469918176385 encodes as 01ARYZ6S41.
	got := ulid(1469918176385, [10]byte{})
	if got != "01ARYZ6S410000000000000000" {
		t.Errorf("ulid = %s", got)
	}
	if got := ulid(1<<48-1, [10]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); got != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Errorf("max ulid = %s", got)
	}
}

// A store removed between two posts is made again, topic record first.
func TestPostAfterTheStoreIsRemoved(t *testing.T) {
	project := t.TempDir()
	w := NewWriter(project, nil)
	ctx := context.Background()
	if _, err := w.Post(ctx, "loop:current", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(project, ".jwz")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Post(ctx, "loop:current", []byte("two")); err != nil {
		t.Fatal(err)
	}
	got := readStore(t, filepath.Join(project, ".jwz"))
	if len(got["loop:current"]) != 1 || got["loop:current"][0].Body != "two" {
		t.Errorf("store = %+v", got)
	}
}

func BenchmarkPost(b *testing.B) {
	project := b.TempDir()
	w := NewWriter(project, nil)
	body := []byte(`{"schema":0,"event":"STATE","run_id":"loop-1-2","updated_at":"2024-12-21T10:00:00Z","stack":[{"id":"loop-1-2","mode":"loop","iter":1,"max":2,"prompt_file":"/p.md"}]}`)
	for b.Loop() {
		if _, err := w.Post(context.Background(), "loop:current", body); err != nil {
			b.Fatal(err)
		}
	}
}
