package plans

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ordinals names tasks by Ordinal, for comparisons.
func ordinals(ts []Task) []int {
	out := []int{}
	for _, t := range ts {
		out = append(out, t.Ordinal())
	}
	return out
}

// skipping skips the tasks of the given ordinals.
func skipping(ns ...int) func(Task) bool {
	return func(t Task) bool { return slices.Contains(ns, t.Ordinal()) }
}

func TestReady(t *testing.T) {
	const order = "## TODOs\n- [ ] 1. A\n- [ ] 2. B\n- [x] 3. C\n- [ ] 4. D\n## Verification\n- [ ] V1\n- [ ] V2\n"
	const deps = "## TODOs\n- [ ] 1. A\n- [ ] 2. B [after: 1]\n- [ ] 3. C\n  **Depends**: none\n- [ ] 4. D\n  **Depends**: 2, 3\n## Verification\n- [ ] V1\n- [ ] V2\n"
	const serial = "## TODOs\n- [ ] 1. A\n- [ ] 2. B [serial]\n- [ ] 3. C\n- [ ] 4. D [after: 1]\n"
	const files = "## TODOs\n" +
		"- [ ] 1. A\n  **Files**: `a.go`\n" +
		"- [ ] 2. B\n  **Files**: `b.go`\n" +
		"- [ ] 3. C\n  **Files**: `./a.go`, `c.go`\n" +
		"- [ ] 4. D\n  **Files**: `web/`\n" +
		"- [ ] 5. E\n  **Files**: `web/x.go:10`\n" +
		"- [ ] 6. F\n  **Files**: `docs/*.md`\n" +
		"- [ ] 7. G\n  **Files**: `docs/guide.md` (new)\n" +
		"- [ ] 8. H\n" +
		"- [ ] 9. I\n  **Files**: `d.go`\n" +
		"- [ ] 10. J [after: 2]\n  **Files**: `a.go`\n" +
		"## Verification\n- [ ] V\n"
	tests := []struct {
		name    string
		src     string
		running []string
		o       ScheduleOptions
		want    []int
	}{
		{name: "no deps: the first open task", src: order, want: []int{1}},
		{name: "no deps: one at a time", src: order, running: []string{"1"}, want: []int{}},
		{name: "no deps: skipped tasks are passed over", src: order, o: ScheduleOptions{Skip: skipping(1, 2)}, want: []int{4}},
		{name: "no deps: the checks after every TODO", src: order, o: ScheduleOptions{Skip: skipping(1, 2, 4)}, want: []int{5}},
		{name: "no deps: a check runs alone", src: strings.ReplaceAll(order, "[ ] 1", "[x] 1"), running: []string{"2"}, want: []int{}},
		{name: "deps: independent tasks together", src: deps, want: []int{1, 3}},
		{name: "deps: running tasks are not ready again", src: deps, running: []string{"1"}, want: []int{3}},
		{name: "deps: a task waits for each it names", src: strings.Replace(deps, "[ ] 1.", "[x] 1.", 1), running: []string{"3"}, want: []int{2}},
		{name: "deps: all named done", src: strings.NewReplacer("[ ] 1.", "[x] 1.", "[ ] 2.", "[x] 2.", "[ ] 3.", "[x] 3.").Replace(deps), want: []int{4}},
		{name: "deps: the checks wait for every TODO", src: strings.NewReplacer("[ ] 1.", "[x] 1.", "[ ] 2.", "[x] 2.", "[ ] 3.", "[x] 3.").Replace(deps), running: []string{"4"}, want: []int{}},
		{name: "deps: the checks together", src: strings.NewReplacer("[ ] 1.", "[x] 1.", "[ ] 2.", "[x] 2.", "[ ] 3.", "[x] 3.", "[ ] 4.", "[x] 4.").Replace(deps), want: []int{5, 6}},
		{name: "deps: a task after a skipped one never", src: deps, o: ScheduleOptions{Skip: skipping(1)}, want: []int{3}},
		{name: "deps: a skipped check is not run", src: strings.NewReplacer("[ ] 1.", "[x] 1.", "[ ] 2.", "[x] 2.", "[ ] 3.", "[x] 3.", "[ ] 4.", "[x] 4.").Replace(deps), o: ScheduleOptions{Skip: skipping(5)}, want: []int{6}},
		{name: "serial: ends the list", src: serial, want: []int{1}},
		{name: "serial: alone once nothing before it is ready", src: strings.Replace(serial, "[ ] 1.", "[x] 1.", 1), want: []int{2}},
		{name: "serial: not beside a running task", src: strings.Replace(serial, "[ ] 1.", "[x] 1.", 1), running: []string{"4"}, want: []int{}},
		{name: "serial: nothing beside it", src: strings.Replace(serial, "[ ] 1.", "[x] 1.", 1), running: []string{"2"}, want: []int{}},
		{name: "serial: after it, the rest", src: strings.NewReplacer("[ ] 1.", "[x] 1.", "[ ] 2. B", "[x] 2. B").Replace(serial), want: []int{3, 4}},
		{name: "infer: disjoint files together", src: files, o: ScheduleOptions{InferDeps: true}, want: []int{1, 2, 4, 6}},
		{name: "infer: an overlap waits", src: strings.NewReplacer("[ ] 1.", "[x] 1.", "[ ] 4.", "[x] 4.", "[ ] 6.", "[x] 6.").Replace(files), running: []string{"2"}, o: ScheduleOptions{InferDeps: true}, want: []int{3, 5, 7}},
		{name: "infer: no files waits for all", src: strings.NewReplacer("[ ] 1.", "[x] 1.", "[ ] 2.", "[x] 2.", "[ ] 3.", "[x] 3.", "[ ] 4.", "[x] 4.", "[ ] 5.", "[x] 5.", "[ ] 6.", "[x] 6.", "[ ] 7.", "[x] 7.").Replace(files), o: ScheduleOptions{InferDeps: true}, want: []int{8, 10}},
		{name: "infer: a skipped task holds nothing", src: files, o: ScheduleOptions{InferDeps: true, Skip: skipping(1, 2, 3, 4, 5, 6, 7, 8)}, want: []int{9}},
		{name: "without infer the files do not count", src: strings.Replace(files, " [after: 2]", "", 1), want: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse([]byte(tt.src))
			if got := ordinals(p.Ready(tt.running, tt.o)); !cmp.Equal(got, tt.want) {
				t.Errorf("Ready(%q, %+v) = %v, want %v", tt.running, tt.o, got, tt.want)
			}
		})
	}
}

func TestWaits(t *testing.T) {
	const src = "## TODOs\n- [ ] 1. A\n  **Files**: `a.go`\n- [x] 2. B\n- [ ] 3. C\n  **Files**: `a.go`\n- [ ] 4. D [after: 1, 2]\n## Verification\n- [ ] V\n"
	p := Parse([]byte(src))
	tests := []struct {
		task int
		o    ScheduleOptions
		want []int
	}{
		{1, ScheduleOptions{}, []int{}},
		{4, ScheduleOptions{}, []int{1}},
		{3, ScheduleOptions{}, []int{}}, // the plan has After: a task without it is independent
		{3, ScheduleOptions{InferDeps: true}, []int{1}},
		{5, ScheduleOptions{}, []int{1, 3, 4}},
		{5, ScheduleOptions{Skip: skipping(3)}, []int{1, 4}},
		{4, ScheduleOptions{Skip: skipping(1)}, []int{1}}, // a skipped task it names it still waits for
	}
	for _, tt := range tests {
		tk, _ := p.ByOrdinal(tt.task)
		if got := ordinals(p.Waits(tk, tt.o)); !cmp.Equal(got, tt.want) {
			t.Errorf("Waits(%d, %+v) = %v, want %v", tt.task, tt.o, got, tt.want)
		}
	}
	// Without After anywhere, the document's order.
	p = Parse([]byte(strings.Replace(src, " [after: 1, 2]", "", 1)))
	tk, _ := p.ByOrdinal(4)
	if got := ordinals(p.Waits(tk, ScheduleOptions{})); !cmp.Equal(got, []int{1, 3}) {
		t.Errorf("Waits(4) without After = %v, want [1 3]", got)
	}
}

// TestReadyProperties checks Ready against its rules on random plans: it
// never returns a task whose After is not all Done, a running, skipped or
// done task, or a Serial task beside another; without After and InferDeps it
// returns what NextExcept returns; and with nothing running and no Serial
// task it returns exactly the open tasks Waits finds free.
func TestReadyProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(25))
	pool := []string{"", "`a.go`", "`b.go`", "`web/`", "`web/x.go`", "`docs/*.md`", "`a.go`, `c.go`"}
	for trial := 0; trial < 3000; trial++ {
		n := 1 + rng.Intn(10)
		withDeps := rng.Intn(3) > 0
		var b strings.Builder
		b.WriteString("## TODOs\n")
		for i := 1; i <= n; i++ {
			box := " "
			if rng.Intn(3) == 0 {
				box = "x"
			}
			fmt.Fprintf(&b, "- [%s] %d. T%d", box, i, i)
			if withDeps && rng.Intn(2) == 0 {
				fmt.Fprintf(&b, " [after: %d]", 1+rng.Intn(n+1))
			}
			if rng.Intn(6) == 0 {
				b.WriteString(" [serial]")
			}
			b.WriteString("\n")
			if f := pool[rng.Intn(len(pool))]; f != "" {
				fmt.Fprintf(&b, "  **Files**: %s\n", f)
			}
		}
		b.WriteString("## Verification\n")
		for i := rng.Intn(3); i > 0; i-- {
			b.WriteString("- [ ] check\n")
		}
		p := Parse([]byte(b.String()))
		o := ScheduleOptions{InferDeps: rng.Intn(2) == 0}
		var skip, running []int
		serialRuns := false
		for _, tk := range p.Tasks {
			if tk.Done {
				continue
			}
			switch rng.Intn(5) {
			case 0:
				skip = append(skip, tk.Ordinal())
			case 1:
				running = append(running, tk.Ordinal())
				serialRuns = serialRuns || tk.Serial
			}
		}
		if rng.Intn(2) == 0 {
			running = nil
			serialRuns = false
		}
		o.Skip = skipping(skip...)
		var runKeys []string
		for _, r := range running {
			tk, _ := p.ByOrdinal(r)
			runKeys = append(runKeys, tk.Key())
		}
		got := p.Ready(runKeys, o)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("trial %d: %s\nplan:\n%sInferDeps %v, skip %v, running %v, Ready = %v", trial, fmt.Sprintf(format, args...), b.String(), o.InferDeps, skip, running, ordinals(got))
		}
		byNum := p.numbered()
		for _, tk := range got {
			if tk.Done || slices.Contains(skip, tk.Ordinal()) || slices.Contains(running, tk.Ordinal()) {
				fail("task %d is done, skipped or running", tk.Ordinal())
			}
			for _, a := range tk.After {
				if len(byNum[a]) == 0 || !p.Tasks[byNum[a][0]].Done {
					fail("task %d waits for %d, which is not done", tk.Ordinal(), a)
				}
			}
			if tk.Serial && (len(got) > 1 || len(running) > 0) {
				fail("serial task %d beside others", tk.Ordinal())
			}
			if w := p.Waits(tk, o); len(w) > 0 {
				fail("task %d is ready but waits for %v", tk.Ordinal(), ordinals(w))
			}
		}
		if serialRuns && len(got) > 0 {
			fail("tasks ready while a serial task runs")
		}
		if !p.HasDeps() && !o.InferDeps && len(running) == 0 {
			next, ok := p.NextExcept(o.Skip)
			if want := map[bool]int{true: 1}[ok]; len(got) != want || ok && got[0].Index != next.Index {
				fail("without deps Ready differs from NextExcept (%v, %v)", next.Ordinal(), ok)
			}
		}
		hasSerial := slices.ContainsFunc(p.Tasks, func(t Task) bool { return t.Serial })
		if len(running) == 0 && !hasSerial {
			var want []int
			for _, tk := range p.Tasks {
				if tk.Done || slices.Contains(skip, tk.Ordinal()) || len(p.Waits(tk, o)) > 0 {
					continue
				}
				if slices.ContainsFunc(tk.After, func(a int) bool { return len(byNum[a]) == 0 }) {
					continue
				}
				want = append(want, tk.Ordinal())
			}
			if g := ordinals(got); !cmp.Equal(g, append([]int{}, want...)) {
				fail("Ready = %v, want the tasks waiting for nothing %v", g, want)
			}
		}
	}
}

// BenchmarkReady asks for the ready tasks of a 1,000-task plan, as a run
// does after each task ends.
func BenchmarkReady(b *testing.B) {
	plain := Parse(genPlan(1000))
	// Every task waits for the one before the one before it: two chains.
	deps := Parse(regexp.MustCompile(`(?m)^- \[(.)\] (\d+)\. `).ReplaceAllFunc(genPlan(1000), func(m []byte) []byte {
		n, _ := strconv.Atoi(string(m[6 : len(m)-2]))
		return fmt.Appendf(nil, "%s [after: %d] ", m[:len(m)-1], max(1, n-2))
	}))
	if !deps.HasDeps() {
		b.Fatal("the plan with dependencies has none")
	}
	running := []string{"1", "2", "4"}
	for _, c := range []struct {
		name string
		p    *Plan
		o    ScheduleOptions
	}{{"order", plain, ScheduleOptions{}}, {"infer", plain, ScheduleOptions{InferDeps: true}}, {"deps", deps, ScheduleOptions{}}} {
		p, o := c.p, c.o
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(p.Ready(running, o)) == 0 && o.InferDeps {
					b.Fatal("Ready found nothing")
				}
			}
		})
	}
}
