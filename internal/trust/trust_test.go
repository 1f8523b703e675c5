package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func take(t *testing.T, root string) *Snapshot {
	t.Helper()
	s, err := Take(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFlatten(t *testing.T) {
	tests := []struct {
		rel, body string
		want      map[string]string
	}{
		{".weave/config.yaml", "# only comments\n", map[string]string{}},
		{".weave/config.yaml", "agents:\n  loom:\n    tools: [read, bash]\nhooks:\n  PreToolUse:\n    - matcher: '*'\n      hooks:\n        - {type: command, command: id}\n",
			map[string]string{"agents.loom.tools": "[read, bash]", "hooks.PreToolUse[0].matcher": "*",
				"hooks.PreToolUse[0].hooks[0].type": "command", "hooks.PreToolUse[0].hooks[0].command": "id"}},
		{".mcp.json", `{"mcpServers":{"x":{"command":"id","args":["-u"]}}}`,
			map[string]string{"mcpServers.x.command": "id", "mcpServers.x.args": "[-u]"}},
		{".weave/config.toml", "[model]\nbase_url = \"http://x\"\n", map[string]string{"model.base_url": "http://x"}},
		{".weave/config.yaml", "agents: [\n", map[string]string{"": "(the file does not parse)"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, flatten(tt.rel, []byte(tt.body))); diff != "" {
			t.Errorf("flatten(%s, %q) mismatch (-want +got):\n%s", tt.rel, tt.body, diff)
		}
	}
}

// A record trusts exactly the bytes it was made from: any change to a
// file, a new file, a removed one is untrusted; a project without files
// needs nothing.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	st := Store{Dir: filepath.Join(t.TempDir(), "trust")}
	if err := Check(st, take(t, root)); err != nil {
		t.Fatalf("Check(no files) = %v, want nil", err)
	}
	writeFile(t, root, ".weave/config.yaml", "runbook:\n  retries: 1\n")
	var untrusted *UntrustedError
	if err := Check(st, take(t, root)); !errors.As(err, &untrusted) || !untrusted.Changes.New {
		t.Fatalf("Check(new file) = %v, want a new UntrustedError", err)
	}
	if err := st.Save(take(t, root), nil); err != nil {
		t.Fatal(err)
	}
	if err := Check(st, take(t, root)); err != nil {
		t.Fatalf("Check(after Save) = %v", err)
	}

	steps := []struct {
		name string
		do   func()
		want []Change
	}{
		{"a comment", func() { writeFile(t, root, ".weave/config.yaml", "runbook:\n  retries: 1 # one\n") },
			[]Change{{Kind: Changed, File: ".weave/config.yaml", Whole: true, Value: "comments or layout only"}}},
		{"a value", func() { writeFile(t, root, ".weave/config.yaml", "runbook:\n  retries: 2\n  shell: /bin/zsh\n") },
			[]Change{{Kind: Changed, File: ".weave/config.yaml", Whole: true},
				{Kind: Changed, File: ".weave/config.yaml", Key: "runbook.retries", Value: "2"},
				{Kind: Added, File: ".weave/config.yaml", Key: "runbook.shell", Value: "/bin/zsh"}}},
		{"a new file", func() { writeFile(t, root, ".claude/settings.local.json", `{"a":1}`) },
			[]Change{{Kind: Added, File: ".claude/settings.local.json", Whole: true},
				{Kind: Added, File: ".claude/settings.local.json", Key: "a", Value: "1"}}},
		{"a removed file", func() {
			if err := os.Remove(filepath.Join(root, ".weave", "config.yaml")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, root, ".mcp.json", `{}`)
		}, []Change{{Kind: Added, File: ".mcp.json", Whole: true}, {Kind: Removed, File: ".weave/config.yaml", Whole: true}}},
	}
	for _, s := range steps {
		s.do()
		snap := take(t, root)
		err := Check(st, snap)
		if !errors.As(err, &untrusted) {
			t.Fatalf("%s: Check = %v, want an UntrustedError", s.name, err)
		}
		if diff := cmp.Diff(s.want, untrusted.Changes.List); diff != "" {
			t.Errorf("%s: changes mismatch (-want +got):\n%s", s.name, diff)
		}
		if err := st.Save(snap, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// The record is 0600, in the store, and keeps no value; a value under a
// secret name is shown hidden.
func TestRecordKeepsNoValue(t *testing.T) {
	root := t.TempDir()
	st := Store{Dir: filepath.Join(t.TempDir(), "trust")}
	const secret = "tok-planted-41c7"
	writeFile(t, root, ".weave/config.yaml", "bus:\n  token: "+secret+"\nmodel:\n  api_key_env: MY_KEY\n")
	snap := take(t, root)
	if err := st.Save(snap, nil); err != nil {
		t.Fatal(err)
	}
	p, _ := st.Path(snap)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(p)
	if strings.Contains(string(data), secret) || strings.Contains(string(data), "MY_KEY") {
		t.Errorf("the record keeps a value:\n%s", data)
	}
	writeFile(t, root, ".weave/config.yaml", "bus:\n  token: "+secret+"x\nmodel:\n  api_key_env: OTHER_KEY\n")
	var b strings.Builder
	Compare(mustLoad(t, st, take(t, root)), take(t, root)).Write(&b, "")
	if got := b.String(); strings.Contains(got, secret) || !strings.Contains(got, "~ bus.token: (hidden)") || !strings.Contains(got, "~ model.api_key_env: OTHER_KEY") {
		t.Errorf("the change list:\n%s\nwant bus.token hidden and the key variable's name shown", got)
	}
}

func mustLoad(t *testing.T, st Store, s *Snapshot) *Record {
	t.Helper()
	r, err := st.Load(s)
	if err != nil || r == nil {
		t.Fatalf("Load = %v, %v", r, err)
	}
	return r
}

// Fail closed: a record that cannot be read, a config that cannot be read
// and a store without a directory all stop.
func TestFailClosed(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, ".weave/config.yaml", "log:\n  level: info\n")
	st := Store{Dir: t.TempDir()}
	snap := take(t, root)
	p, _ := st.Path(snap)
	if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(st, snap); err == nil {
		t.Error("Check with a corrupt record = nil, want an error")
	}
	if err := Check(Store{}, snap); err == nil {
		t.Error("Check without a state directory = nil, want an error")
	}
	if err := os.Mkdir(filepath.Join(root, ".mcp.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Take(root); err == nil {
		t.Error("Take with .mcp.json a directory = nil error, want one")
	}
}

// Saving some files keeps what the record held for the others (weave init
// trusts only the config it wrote).
func TestSaveSome(t *testing.T) {
	root := t.TempDir()
	st := Store{Dir: t.TempDir()}
	writeFile(t, root, ".mcp.json", `{"mcpServers":{}}`)
	if err := st.Save(take(t, root), nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, ".weave/config.yaml", "log:\n  level: info\n")
	writeFile(t, root, ".claude/settings.json", `{"hooks":{}}`)
	if err := st.Save(take(t, root), []string{".weave/config.yaml"}); err != nil {
		t.Fatal(err)
	}
	var untrusted *UntrustedError
	if err := Check(st, take(t, root)); !errors.As(err, &untrusted) || !cmp.Equal(untrusted.Changes.Files, []string{".claude/settings.json"}) {
		t.Errorf("Check after trusting the config alone = %v, want only .claude/settings.json untrusted", err)
	}
}

// A hook script the config names runs what its bytes say: a change to it
// is a change to the config.
func TestHookScripts(t *testing.T) {
	root := t.TempDir()
	st := Store{Dir: t.TempDir()}
	writeFile(t, root, ".weave/config.yaml", "hooks:\n  PreToolUse:\n    - hooks:\n        - type: command\n          command: sh \"$CLAUDE_PROJECT_DIR/.weave/hooks/check.sh\" && sh scripts/second.sh; cat /etc/hostname\n")
	writeFile(t, root, ".weave/hooks/check.sh", "exit 0\n")
	snap := take(t, root)
	if got, want := snap.Rels(), []string{".weave/config.yaml", ".weave/hooks/check.sh"}; !cmp.Equal(got, want) {
		t.Fatalf("Take().Rels() = %q, want %q", got, want)
	}
	if err := st.Save(snap, nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, ".weave/hooks/check.sh", "id > pwned.txt\n")
	writeFile(t, root, "scripts/second.sh", "true\n")
	var untrusted *UntrustedError
	if err := Check(st, take(t, root)); !errors.As(err, &untrusted) {
		t.Fatalf("Check after the script changed = %v, want an UntrustedError", err)
	}
	want := []Change{
		{Kind: Changed, File: ".weave/hooks/check.sh", Whole: true, Value: "hook script"},
		{Kind: Added, File: "scripts/second.sh", Whole: true, Value: "hook script"},
	}
	if diff := cmp.Diff(want, untrusted.Changes.List); diff != "" {
		t.Errorf("changes mismatch (-want +got):\n%s", diff)
	}
}

func TestScriptWords(t *testing.T) {
	tests := []struct {
		command string
		want    []string
	}{
		{"cat >> .weave/prompts.jsonl; echo >> .weave/prompts.jsonl; touch .weave/heard", []string{"cat", "echo", "touch"}},
		{"./hooks/guard.sh --strict", []string{"./hooks/guard.sh"}},
		{`FOO=1 bash -e "$CLAUDE_PROJECT_DIR/.weave/hooks/a.sh" > out.log`, []string{"bash", "$CLAUDE_PROJECT_DIR/.weave/hooks/a.sh"}},
		{"python3 -c 'import sys' && exec node tools/x.js | tee log/x.txt", []string{"python3", "import", "node", "tools/x.js", "tee"}},
	}
	for _, tt := range tests {
		if got := scriptWords(tt.command); !cmp.Equal(got, tt.want) {
			t.Errorf("scriptWords(%q) = %q, want %q", tt.command, got, tt.want)
		}
	}
}
