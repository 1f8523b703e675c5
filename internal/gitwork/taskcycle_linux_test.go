package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTaskCycle is what a reused worktree of a worker costs a task
// outside its block: the reset onto a base that moved (other tasks
// landed), the plan's copy written, the task's file, the commit. "git"
// does it as git clean and git commit do, "here" as the worker does;
// cpu-ms/op is the CPU of the process and its git children in that part
// alone.
func BenchmarkTaskCycle(b *testing.B) {
	for _, mode := range []string{"git", "here"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "B"}, {"config", "user.email", "b@l"}} {
				benchGit(b, dir, "", args...)
			}
			writeBench(b, filepath.Join(dir, ".gitignore"), "/.weave/\n")
			for i := range 64 {
				writeBench(b, filepath.Join(dir, "out", fmt.Sprintf("s%d.txt", i)), fmt.Sprint(i))
			}
			benchGit(b, dir, "", "add", "-A")
			benchGit(b, dir, "", "commit", "-q", "-m", "start")
			base := benchGit(b, dir, "", "rev-parse", "HEAD")
			r := &Repo{Root: dir}
			w := filepath.Join(b.TempDir(), "w1")
			if err := r.Worktree(ctx, w, "slot", base); err != nil {
				b.Fatal(err)
			}
			plan := filepath.Join(w, ".weave", "plans", "p.md")
			var cpu time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				// Seven other tasks landed on the base since.
				base = benchLanded(b, dir, base, i, 7)
				before := rusage()
				b.StartTimer()
				src := fmt.Sprintf("# P\n\n- [x] %d\n", i)
				var sha string
				var err error
				if mode == "git" {
					for _, args := range [][]string{{"checkout", "-q", "-f", "--ignore-other-worktrees", "-B", "slot", base}, {"clean", "-q", "-f", "-d", "-x"}} {
						if _, err := run(ctx, w, nil, args...); err != nil {
							b.Fatal(err)
						}
					}
					_ = os.MkdirAll(filepath.Dir(plan), 0o755)
					writeBench(b, plan, src)
					writeBench(b, filepath.Join(w, "out", fmt.Sprintf("t%d.txt", i)), "t")
					if _, err := run(ctx, w, nil, append([]string{"add", "-A", "--", "."}, excludeDotWeave...)...); err != nil {
						b.Fatal(err)
					}
					if _, err := run(ctx, w, []byte("task\n"), "-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "--no-verify", "-F", "-"); err != nil {
						b.Fatal(err)
					}
				} else {
					if err := r.ResetWorktreeKeeping(ctx, w, "slot", base, []string{".weave/plans/p.md"}); err != nil {
						b.Fatal(err)
					}
					if have, err := os.ReadFile(plan); err != nil || string(have) != src {
						_ = os.Remove(plan)
						_ = os.MkdirAll(filepath.Dir(plan), 0o755)
						writeBench(b, plan, src)
					}
					writeBench(b, filepath.Join(w, "out", fmt.Sprintf("t%d.txt", i)), "t")
					if sha, err = r.Commit(ctx, w, "task", nil); err != nil || sha == "" {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				cpu += rusage() - before
				b.StartTimer()
			}
			// The ref mover's process is counted once it ended.
			before := rusage()
			_ = r.Close()
			cpu += rusage() - before
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// benchLanded is a commit on base adding n files, made as a landing
// would, in dir's object store.
func benchLanded(b *testing.B, dir, base string, i, n int) string {
	b.Helper()
	idx := filepath.Join(b.TempDir(), "index")
	env := "GIT_INDEX_FILE=" + idx
	benchGit(b, dir, env, "read-tree", base)
	var lines strings.Builder
	for k := range n {
		sha := benchGitIn(b, dir, env, fmt.Sprintf("landed %d %d\n", i, k), "hash-object", "-w", "--stdin")
		fmt.Fprintf(&lines, "100644 %s\tout/l%d-%d.txt\n", sha, i, k)
	}
	benchGitIn(b, dir, env, lines.String(), "update-index", "--index-info")
	tree := benchGit(b, dir, env, "write-tree")
	return benchGit(b, dir, "", "commit-tree", tree, "-p", base, "-m", "landed")
}

func benchGit(b *testing.B, dir, env string, args ...string) string {
	b.Helper()
	return benchGitIn(b, dir, env, "", args...)
}

func benchGitIn(b *testing.B, dir, env, stdin string, args ...string) string {
	b.Helper()
	var e []string
	if env != "" {
		e = []string{env}
	}
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	out, err := runEnv(context.Background(), dir, in, e, args...)
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func writeBench(b *testing.B, path, body string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
}

// rusage is the CPU time of this process and its children waited for.
func rusage() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
