package plans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// taskView is the part of a Task most tests compare.
type taskView struct {
	Number   int
	Title    string
	Done     bool
	Line     int
	Section  string
	Category string
}

func views(ts []Task) []taskView {
	var vs []taskView
	for _, t := range ts {
		vs = append(vs, taskView{t.Number, t.Title, t.Done, t.Line, t.Section, t.Category})
	}
	return vs
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// checkOffsets asserts the offset invariants every parsed task must hold.
func checkOffsets(t testing.TB, p *Plan) {
	t.Helper()
	src := p.Src
	for i, tk := range p.Tasks {
		if tk.Index != i {
			t.Errorf("task %d: Index = %d", i, tk.Index)
		}
		if tk.Mark < 1 || tk.Mark+1 >= len(src) || src[tk.Mark-1] != '[' || src[tk.Mark+1] != ']' || !isMark(src[tk.Mark]) {
			t.Fatalf("task %d: Mark %d does not point between [ and ] at a space, x or X", i, tk.Mark)
		}
		if tk.Done != (src[tk.Mark] != ' ') {
			t.Errorf("task %d: Done = %v, mark %q", i, tk.Done, src[tk.Mark])
		}
		if !(tk.Start <= tk.Mark && tk.Mark < tk.End && tk.End <= len(src)) {
			t.Errorf("task %d: Start %d, Mark %d, End %d out of order (len %d)", i, tk.Start, tk.Mark, tk.End, len(src))
		}
		if tk.Start > 0 && src[tk.Start-1] != '\n' {
			t.Errorf("task %d: Start %d is not at a line start", i, tk.Start)
		}
		if got := strings.Count(string(src[:tk.Mark]), "\n") + 1; got != tk.Line {
			t.Errorf("task %d: Line = %d, want %d", i, tk.Line, got)
		}
		if i > 0 && p.Tasks[i-1].End > tk.Start {
			t.Errorf("task %d starts at %d, inside task %d ending at %d", i, tk.Start, i-1, p.Tasks[i-1].End)
		}
	}
}

func TestParseTasks(t *testing.T) {
	tests := []struct {
		file string
		want []taskView
	}{
		{"pattern.md", []taskView{
			{1, "Add the provider config", true, 24, "TODOs", "backend"},
			{2, "Add the callback handler", false, 29, "TODOs", ""},
			{3, "Document the setup", false, 43, "TODOs", "docs"},
			{0, "All tests pass", false, 48, "Verification", ""},
			{0, "No regressions", false, 49, "Verification", ""},
		}},
		{"runbook.md", []taskView{
			{0, "Create the greeting", false, 5, "Quickstart", ""},
			{0, "Count the words", true, 12, "Quickstart", ""},
			{0, "Clean up", true, 16, "Quickstart", ""},
			{0, "Ordered task one", false, 21, "Quickstart", ""},
			{0, "Ordered task two", false, 22, "Quickstart", ""},
			{0, "A quoted task", false, 30, "Quickstart", ""},
		}},
		{"nested.md", []taskView{
			{1, "Parent task", false, 5, "Phase one", ""},
			{2, "Task under a plain bullet", false, 10, "Phase one", ""},
			{3, "Last task", false, 11, "Phase one", ""},
		}},
		{"crlf.md", []taskView{
			{1, "Créer le fichier 日本語", false, 5, "TODOs", ""},
			{2, "Tab\tinside title", true, 8, "TODOs", ""},
			{3, "Trailing spaces", false, 10, "TODOs", ""},
		}},
		{"bom.md", []taskView{
			{1, "First", false, 3, "BOM plan", ""},
			{2, "Second", true, 4, "BOM plan", ""},
		}},
		{"edge.md", []taskView{
			{7, "Kept [see](http://x)", false, 6, "Edge cases", "ops"},
			{0, "", false, 7, "Edge cases", ""},
			{10, "Paren number", false, 8, "Edge cases", ""},
			{0, "11.NoSpace", false, 9, "Edge cases", ""},
		}},
		{"empty.md", nil},
		{"notasks.md", nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := Parse(readTestdata(t, tt.file))
			if diff := cmp.Diff(tt.want, views(p.Tasks)); diff != "" {
				t.Errorf("Parse(%s) tasks mismatch (-want +got):\n%s", tt.file, diff)
			}
			checkOffsets(t, p)
		})
	}
}

func TestParsePlan(t *testing.T) {
	tests := []struct {
		file       string
		title      string
		effort     string
		effortLine int
		hasTODOs   bool
		sections   []string
	}{
		{"pattern.md", "Add OAuth2 Login", "Medium", 5, true, []string{"Add OAuth2 Login", "TL;DR", "Context", "Original Request", "Key Findings", "Objectives", "Core Objective", "Deliverables", "Definition of Done", "TODOs", "Verification"}},
		{"crlf.md", "Ünïcode plan", "", 0, true, []string{"Ünïcode plan", "TODOs"}},
		{"bom.md", "BOM plan", "", 0, false, []string{"BOM plan"}},
		{"empty.md", "", "", 0, false, nil},
		{"nested.md", "Nesting", "", 0, false, []string{"Nesting", "Phase one"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := Parse(readTestdata(t, tt.file))
			if p.Title != tt.title {
				t.Errorf("Title = %q, want %q", p.Title, tt.title)
			}
			if p.Effort != tt.effort || p.EffortLine != tt.effortLine {
				t.Errorf("Effort = %q on line %d, want %q on line %d", p.Effort, p.EffortLine, tt.effort, tt.effortLine)
			}
			if p.HasTODOs != tt.hasTODOs {
				t.Errorf("HasTODOs = %v, want %v", p.HasTODOs, tt.hasTODOs)
			}
			var got []string
			for _, s := range p.Sections {
				got = append(got, s.Title)
				if line := strings.Count(string(p.Src[:s.Offset]), "\n") + 1; line != s.Line {
					t.Errorf("section %q: Line = %d, want %d", s.Title, s.Line, line)
				}
			}
			if diff := cmp.Diff(tt.sections, got); diff != "" {
				t.Errorf("sections mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	p := Parse(readTestdata(t, "pattern.md"))
	if len(p.Tasks) != 5 {
		t.Fatalf("Parse(pattern.md) has %d tasks, want 3 TODOs and 2 Verification items", len(p.Tasks))
	}
	type fields struct {
		What, Files, Acceptance string
		FileRefs                []FileRef
		Blocks                  []Block
	}
	want := []fields{
		{
			What:       "Read the client id and secret from the config.",
			Files:      "`config/oauth.go` (new), `config/config.go`",
			Acceptance: "`go test ./config` passes",
			FileRefs:   []FileRef{{"config/oauth.go", true}, {"config/config.go", false}},
		},
		{
			What:       "Exchange the code for a token,\nthen create a session.",
			Files:      "- Create: `web/callback.go`\n- Modify: `web/routes.go:10-20`",
			Acceptance: "- [ ] a valid code signs the user in\n- [ ] a bad state is rejected",
			FileRefs:   []FileRef{{"web/callback.go", true}, {"web/routes.go", false}},
			Blocks:     []Block{{Info: "sh verify", Lang: "sh", Args: []string{"verify"}, Code: "go test ./web -run Callback\n", Line: 39}},
		},
		{
			What:       "Explain how to register the app.",
			Acceptance: "README has an OAuth2 section",
		},
	}
	for i, w := range want {
		tk := p.Tasks[i]
		got := fields{tk.What, tk.Files, tk.Acceptance, tk.FileRefs(), tk.Blocks}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("task %d fields mismatch (-want +got):\n%s", tk.Number, diff)
		}
	}
}

func TestParseFieldForms(t *testing.T) {
	tests := []struct {
		name string
		src  string
		what string
		acc  string
	}{
		{"colon inside bold", "- [ ] a\n  **What:** x\n  **Acceptance:** y\n", "x", "y"},
		{"bulleted fields", "- [ ] a\n  - **What**: x\n  - **Acceptance**: y\n", "x", "y"},
		{"long labels", "- [ ] a\n  **What to do**: x\n  **Acceptance Criteria**: y\n", "x", "y"},
		{"unknown label ends a field", "- [ ] a\n  **What**: x\n  **Must NOT do**: z\n  more z\n", "x", ""},
		{"code lines left out", "- [ ] a\n  **What**: run\n  ```sh\n  **Acceptance**: not a label\n  ```\n  then check\n", "run\nthen check", ""},
		{"field on a CRLF line", "- [ ] a\r\n  **What**: x  \r\n  y\r\n", "x\ny", ""},
		{"no bold no field", "- [ ] a\n  What: x\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse([]byte(tt.src))
			if len(p.Tasks) != 1 {
				t.Fatalf("Parse(%q) has %d tasks, want 1", tt.src, len(p.Tasks))
			}
			if got := p.Tasks[0].What; got != tt.what {
				t.Errorf("What = %q, want %q", got, tt.what)
			}
			if got := p.Tasks[0].Acceptance; got != tt.acc {
				t.Errorf("Acceptance = %q, want %q", got, tt.acc)
			}
		})
	}
}

func TestParseBlocks(t *testing.T) {
	p := Parse(readTestdata(t, "runbook.md"))
	type bv struct {
		Lang          string
		Shell         string
		Shellish      bool
		Verify        bool
		Code          string
		Line          int
		TaskIdx, Nblk int
	}
	var got []bv
	for i, tk := range p.Tasks {
		for _, b := range tk.Blocks {
			got = append(got, bv{b.Lang, b.Shell(), b.IsShell(), b.IsVerify(), b.Code, b.Line, i, len(tk.Blocks)})
		}
	}
	want := []bv{
		{"sh", "sh", true, false, "echo hello > greeting.txt\n", 6, 0, 2},
		{"sh", "sh", true, true, "grep -q hello greeting.txt\n", 9, 0, 2},
		{"bash", "bash", true, false, "wc -w greeting.txt\n", 13, 1, 1},
		{"go", "", false, false, "fmt.Println(\"not a shell block\")\n", 17, 2, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks mismatch (-want +got):\n%s", diff)
	}
}

func TestBlockKinds(t *testing.T) {
	tests := []struct {
		info          string
		shell, verify bool
	}{
		{"sh", true, false},
		{"SH verify", true, true},
		{"bash,verify", true, true},
		{"shell", true, false},
		{"zsh", false, false},
		{"console verify", false, true},
		{"", false, false},
		{"verify", false, false},
	}
	for _, tt := range tests {
		src := "- [ ] t\n  ```" + tt.info + "\n  true\n  ```\n"
		p := Parse([]byte(src))
		if len(p.Tasks) != 1 || len(p.Tasks[0].Blocks) != 1 {
			t.Fatalf("Parse(%q): want one task with one block, got %+v", src, p.Tasks)
		}
		b := p.Tasks[0].Blocks[0]
		if b.IsShell() != tt.shell || b.IsVerify() != tt.verify {
			t.Errorf("block %q: IsShell() = %v, IsVerify() = %v, want %v, %v", tt.info, b.IsShell(), b.IsVerify(), tt.shell, tt.verify)
		}
	}
}

func TestParseTODOsRule(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "only TODOs and Verification items count when the TODOs section exists",
			src:  "# P\n## Objectives\n- [ ] deliverable\n## TODOs\n- [ ] 1. real\n### Sub\n- [ ] 2. also real\n## Verification\n- [ ] tests pass\n",
			want: []string{"real", "also real", "tests pass"},
		},
		{
			name: "without TODOs every top-level item counts",
			src:  "# P\n## Objectives\n- [ ] deliverable\n## Work\n- [ ] 1. real\n",
			want: []string{"deliverable", "real"},
		},
		{
			name: "TODOs heading with colon and any case",
			src:  "- [ ] outside\n## todo:\n- [ ] inside\n",
			want: []string{"inside"},
		},
		{
			name: "TODOs section runs to the end",
			src:  "## TODOs\n- [ ] a\n\n- [x] b\n",
			want: []string{"a", "b"},
		},
		{
			name: "a heading inside a list item does not end the section",
			src:  "## TODOs\n- [ ] a\n  ## note\n- [ ] b\n",
			want: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse([]byte(tt.src))
			var got []string
			for _, tk := range p.Tasks {
				got = append(got, tk.Title)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) titles mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestParseItemRange(t *testing.T) {
	src := "# P\n\n- [ ] 1. one\n  body\n  - [ ] sub\n\n  ```sh\n  true\n  ```\n- [ ] 2. two\n\nafter\n"
	p := Parse([]byte(src))
	if len(p.Tasks) != 2 {
		t.Fatalf("got %d tasks, want 2", len(p.Tasks))
	}
	want := []string{
		"- [ ] 1. one\n  body\n  - [ ] sub\n\n  ```sh\n  true\n  ```\n",
		"- [ ] 2. two\n",
	}
	for i, w := range want {
		tk := p.Tasks[i]
		if got := src[tk.Start:tk.End]; got != w {
			t.Errorf("task %d: src[Start:End] = %q, want %q", i, got, w)
		}
	}
}

func TestParseFileRefs(t *testing.T) {
	tests := []struct {
		in   string
		want []FileRef
	}{
		{"`a.go`, `b/c.go` (new)", []FileRef{{"a.go", false}, {"b/c.go", true}}},
		{"a.go (create); b.go (NEW FILE)", []FileRef{{"a.go", true}, {"b.go", true}}},
		{"- Create: `x.go`\n- Modify: `y.go:12`\n- Edit: z.go#L3-L9", []FileRef{{"x.go", true}, {"y.go", false}, {"z.go", false}}},
		{"New: docs/guide.md", []FileRef{{"docs/guide.md", true}}},
		{"`pkg/a.go:14-44` — the schema", []FileRef{{"pkg/a.go", false}}},
		{"N/A", nil},
		{"none", nil},
		{"", nil},
		{"`a, b.go` [new]", []FileRef{{"a, b.go", true}}},
	}
	for _, tt := range tests {
		got := parseFileRefs(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseFileRefs(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestTaskKey(t *testing.T) {
	tests := []struct {
		task Task
		want string
	}{
		{Task{Number: 3, Title: "Anything"}, "3"},
		{Task{Title: "Add the  Login page!"}, "add-the-login-page"},
		{Task{Title: "Créer 日本語"}, "créer-日本語"},
		{Task{Title: "42"}, "title-42"},
		{Task{Title: "  ", Index: 4}, "task-5"},
		{Task{Title: "--x--"}, "x"},
	}
	for _, tt := range tests {
		if got := tt.task.Key(); got != tt.want {
			t.Errorf("Task{Number: %d, Title: %q}.Key() = %q, want %q", tt.task.Number, tt.task.Title, got, tt.want)
		}
	}
}

func TestProgressAndNext(t *testing.T) {
	tests := []struct {
		src      string
		want     Progress
		complete bool
		next     string
	}{
		{"", Progress{0, 0}, false, ""},
		{"- [x] a\n- [ ] b\n- [X] c\n", Progress{2, 3}, false, "b"},
		{"- [x] a\n- [X] b\n", Progress{2, 2}, true, ""},
	}
	for _, tt := range tests {
		p := Parse([]byte(tt.src))
		got := p.Progress()
		if got != tt.want || got.Complete() != tt.complete {
			t.Errorf("Parse(%q).Progress() = %+v (complete %v), want %+v (complete %v)", tt.src, got, got.Complete(), tt.want, tt.complete)
		}
		next, ok := p.Next()
		if ok != (tt.next != "") || next.Title != tt.next {
			t.Errorf("Parse(%q).Next() = %q, %v, want %q", tt.src, next.Title, ok, tt.next)
		}
	}
}

func TestParseWhatIsATask(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"bullets", "- [ ] a\n* [ ] b\n+ [ ] c\n", []string{"a", "b", "c"}},
		{"ordered", "1. [ ] a\n2) [x] b\n", []string{"a", "b"}},
		{"html comment", "<!--\n- [ ] hidden\n-->\n- [ ] shown\n", []string{"shown"}},
		{"fenced code", "~~~\n- [ ] no\n~~~\n- [ ] yes\n", []string{"yes"}},
		{"indented code", "para\n\n    - [ ] no\n\n- [ ] yes\n", []string{"yes"}},
		{"nested in task", "- [ ] parent\n  - [ ] child\n  1. [ ] child 2\n", []string{"parent"}},
		{"nested in plain bullet", "- plain\n  - [ ] child\n", []string{"child"}},
		{"tab mark", "- [\t] no\n- [ ] yes\n", []string{"yes"}},
		{"colon after box", "- [ ]: no\n- [x]: no\n- [ ] yes: ok\n", []string{"yes: ok"}},
		{"no box", "- [] no\n- [ x] no\n- [xx] no\n- x [ ] no\n", nil},
		{"escaped box", "- \\[ ] no\n", nil},
		{"quoted list", "> - [ ] q\n>   - [ ] nested\n", []string{"q"}},
		{"tags removed", "- [ ] 4. Do [category: ops] it [prio: 1]\n", []string{"Do it"}},
		{"lazy line is not title", "- [ ] first\nsecond\n", []string{"first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse([]byte(tt.src))
			var got []string
			for _, tk := range p.Tasks {
				got = append(got, tk.Title)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) titles mismatch (-want +got):\n%s", tt.src, diff)
			}
			checkOffsets(t, p)
		})
	}
}

func TestParseItemRangeWithHTML(t *testing.T) {
	src := "- [ ] 1. one\n  <!--\n  note\n  -->\n- [ ] 2. two\n"
	p := Parse([]byte(src))
	if len(p.Tasks) != 2 {
		t.Fatalf("got %d tasks, want 2", len(p.Tasks))
	}
	if got, want := src[p.Tasks[0].Start:p.Tasks[0].End], "- [ ] 1. one\n  <!--\n  note\n  -->\n"; got != want {
		t.Errorf("src[Start:End] = %q, want %q", got, want)
	}
}

func TestBudgetTag(t *testing.T) {
	p := Parse([]byte("# P\n\n## TODOs\n\n- [ ] 1. Port the parser [budget: $2] [category: backend]\n- [ ] 2. No budget\n- [ ] 3. Odd [Budget:  1.50 ]\n"))
	want := []struct{ title, budget string }{{"Port the parser", "$2"}, {"No budget", ""}, {"Odd", "1.50"}}
	if len(p.Tasks) != len(want) {
		t.Fatalf("%d tasks, want %d", len(p.Tasks), len(want))
	}
	for i, w := range want {
		if got := p.Tasks[i]; got.Title != w.title || got.Budget != w.budget {
			t.Errorf("task %d = %q budget %q, want %q budget %q", i+1, got.Title, got.Budget, w.title, w.budget)
		}
	}
	if p.Tasks[0].Category != "backend" {
		t.Errorf("category = %q, want backend beside the budget", p.Tasks[0].Category)
	}
}
