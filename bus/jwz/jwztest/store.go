package jwztest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Record is one line of messages.jsonl as jwz's README documents it.
type Record struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	TopicID   string          `json:"topic_id"`
	ParentID  json.RawMessage `json:"parent_id"`
	Body      string          `json:"body"`
	CreatedAt int64           `json:"created_at"`
	Sender    json.RawMessage `json:"sender"`
	Git       json.RawMessage `json:"git"`
}

var ulidRE = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)

// ReadStore reads the log of the store dir and returns each topic's
// messages in log order. It fails t on a line that is not a whole record
// (every documented field present, a fresh ULID id, a time in
// milliseconds), on a topic created twice and on a message of an unknown
// topic.
func ReadStore(t testing.TB, dir string) map[string][]Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "messages.jsonl"))
	if err != nil {
		t.Fatalf("read jwz store: %v", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("jwz log does not end with a newline")
	}
	names := map[string]string{}
	byName := map[string]bool{}
	seen := map[string]bool{}
	out := map[string][]Record{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var fields map[string]json.RawMessage
		var r Record
		if json.Unmarshal([]byte(line), &fields) != nil || json.Unmarshal([]byte(line), &r) != nil {
			t.Fatalf("jwz log line %d is not a record: %s", i+1, line)
		}
		if !ulidRE.MatchString(r.ID) || seen[r.ID] {
			t.Fatalf("jwz log line %d: id %q is not a fresh ULID", i+1, r.ID)
		}
		seen[r.ID] = true
		if r.CreatedAt < 1_000_000_000_000 || r.CreatedAt > 10_000_000_000_000 {
			t.Fatalf("jwz log line %d: created_at %d is not in milliseconds", i+1, r.CreatedAt)
		}
		var want []string
		switch r.Type {
		case "topic":
			want = []string{"type", "id", "name", "description", "created_at"}
			if byName[r.Name] {
				t.Fatalf("jwz log line %d: topic %q created twice", i+1, r.Name)
			}
			byName[r.Name], names[r.ID] = true, r.Name
		case "message":
			want = []string{"type", "id", "topic_id", "parent_id", "body", "created_at", "sender", "git"}
			name, ok := names[r.TopicID]
			if !ok {
				t.Fatalf("jwz log line %d: message of unknown topic %s", i+1, r.TopicID)
			}
			out[name] = append(out[name], r)
		default:
			t.Fatalf("jwz log line %d: type %q", i+1, r.Type)
		}
		for _, k := range want {
			if _, ok := fields[k]; !ok {
				t.Fatalf("jwz log line %d: %s record has no %s", i+1, r.Type, k)
			}
		}
	}
	return out
}
