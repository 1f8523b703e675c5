package instructions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(body, "->") {
			if err := os.Symlink(strings.TrimPrefix(body, "->"), p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInstructionsFirstFoundWins(t *testing.T) {
	base := t.TempDir()
	project, user := filepath.Join(base, "p"), filepath.Join(base, "u")
	write(t, base, map[string]string{"p/AGENTS.md": "agents", "p/CLAUDE.md": "claude", "u/CLAUDE.md": "user claude", "secret.md": "secret"})
	files, warns := Sources{Project: project, UserDir: user}.Instructions()
	if len(warns) != 0 || len(files) != 2 || files[0].Text != "user claude" || !files[0].User || files[1].Text != "agents" || files[1].Shown != "AGENTS.md" {
		t.Errorf("Instructions() = %+v, %q", files, warns)
	}
	files, _ = Sources{Project: project, Files: []string{"CLAUDE.md"}}.Instructions()
	if len(files) != 1 || files[0].Text != "claude" {
		t.Errorf("Instructions(files CLAUDE.md) = %+v", files)
	}
	if files, _ := (Sources{Project: project, Files: []string{}}).Instructions(); len(files) != 0 {
		t.Errorf("Instructions(files []) = %+v, want none", files)
	}
	// A link out of the project is refused; a pipe never blocks the read.
	write(t, base, map[string]string{"q/AGENTS.md": "->../secret.md"})
	files, warns = Sources{Project: filepath.Join(base, "q")}.Instructions()
	if len(files) != 0 || len(warns) != 1 || !strings.Contains(warns[0], "AGENTS.md") {
		t.Errorf("linked out: %+v, %q; want a warning and no file", files, warns)
	}
}

func TestSkills(t *testing.T) {
	base := t.TempDir()
	project, user := filepath.Join(base, "p"), filepath.Join(base, "u")
	write(t, base, map[string]string{
		"p/.weave/skills/a/SKILL.md":      "---\nname: alpha\ndescription: The first.\n---\nALPHA BODY\n",
		"p/.claude/skills/alpha/SKILL.md": "---\ndescription: shadowed by .weave's\n---\nno\n",
		"p/.claude/skills/beta/SKILL.md":  "---\ndescription: >\n  folded over\n  two lines\n---\nBETA\n",
		"p/.claude/skills/bad/SKILL.md":   "---\nname: x\n",
		"p/.claude/skills/Upper/SKILL.md": "---\ndescription: bad name\n---\n",
		"p/.claude/skills/nofile/README":  "x",
		"u/skills/gamma/SKILL.md":         "---\nname: gamma\ndescription: user's\n---\nGAMMA\n",
		"p/.weave/skills/leak/SKILL.md":   "->../../../../outside.md",
		"outside.md":                      "---\ndescription: outside\n---\nOUTSIDE\n",
	})
	skills, warns := Sources{Project: project, UserDir: user}.Skills()
	if got := strings.Join(Names(skills), ","); got != "alpha,beta,gamma" {
		t.Errorf("skills = %s, want alpha,beta,gamma", got)
	}
	if len(warns) != 3 {
		t.Errorf("warnings = %q, want three (bad, Upper, leak)", warns)
	}
	for _, w := range []string{".claude/skills/bad/SKILL.md", ".claude/skills/Upper/SKILL.md", ".weave/skills/leak/SKILL.md"} {
		if !slices.ContainsFunc(warns, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("no warning names %s: %q", w, warns)
		}
	}
	b, _ := Lookup(skills, "beta")
	if b.Description != "folded over two lines" {
		t.Errorf("beta's description = %q", b.Description)
	}
	a, _ := Lookup(skills, "alpha")
	body, err := a.Body()
	if err != nil || !strings.Contains(body, "ALPHA BODY") || strings.Contains(body, "description") {
		t.Errorf("alpha's body = %q, %v", body, err)
	}
	if _, ok := Lookup(skills, "../../outside"); ok {
		t.Error("a path found a skill")
	}
}

func TestCommands(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "p")
	write(t, base, map[string]string{
		"p/.claude/commands/review.md":       "---\ndescription: Review\nargument-hint: [pr] [prio]\nallowed-tools: Bash(git add:*), Bash(git status:*) Read\n---\nPR $1 prio $2 all $ARGUMENTS $9.\n",
		"p/.weave/commands/frontend/test.md": "# Test the frontend\nrun it\n",
		"p/.weave/commands/backend/test.md":  "backend\n",
		"p/.weave/commands/bad name.md":      "x",
	})
	cmds, warns := Sources{Project: project}.Commands()
	if len(warns) != 1 || !strings.Contains(warns[0], "bad name.md") {
		t.Errorf("warnings = %q", warns)
	}
	r, ok, err := Resolve(cmds, "review")
	if !ok || err != nil {
		t.Fatalf("Resolve(review) = %v, %v", ok, err)
	}
	if got := strings.Join(r.AllowedTools, "|"); got != "Bash(git add:*)|Bash(git status:*)|Read" {
		t.Errorf("allowed-tools = %s", got)
	}
	if r.ArgumentHint != "[pr] [prio]" || r.Namespace != "project" {
		t.Errorf("review = %+v", r)
	}
	if got := r.Expand(`12 "very high" x`); got != `PR 12 prio very high all 12 "very high" x .` {
		t.Errorf("Expand = %q", got)
	}
	f, ok, _ := Resolve(cmds, "frontend:test")
	if !ok || f.Description != "Test the frontend" || f.Namespace != "project:frontend" {
		t.Errorf("frontend:test = %+v, %v", f, ok)
	}
	if got := f.Expand("now"); got != "# Test the frontend\nrun it\n\nARGUMENTS: now" {
		t.Errorf("Expand without placeholders = %q", got)
	}
	if _, _, err := Resolve(cmds, "test"); err == nil || !strings.Contains(err.Error(), "/frontend:test") {
		t.Errorf("Resolve(test) with two = %v, want an error naming both", err)
	}
	for _, c := range []struct {
		line, name, args string
		ok               bool
	}{{"/review 1 2", "review", "1 2", true}, {"/review\t1", "review", "1", true}, {"/etc/passwd", "", "", false}, {"hello", "", "", false}, {"/", "", "", false}} {
		n, a, ok := ParseCall(c.line)
		if n != c.name || a != c.args || ok != c.ok {
			t.Errorf("ParseCall(%q) = %q, %q, %v", c.line, n, a, ok)
		}
	}
}
