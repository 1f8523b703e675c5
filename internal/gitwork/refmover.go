package gitwork

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weavehq/weave/internal/proc"
)

// Reflog messages of the refs Weave moves: a person reading a branch's
// reflog tells a landing from a branch pointed somewhere.
const (
	msgLand   = "weave: land"
	msgBranch = "weave: branch"
)

// moverIdle is how long a ref mover's git process waits for the next
// transaction before it is ended: long enough to serve the moves of a run
// one after another, short enough that nothing it started outlives a run
// (or a test) for long.
const moverIdle = 2 * time.Second

// moverGrace is how long a git process asked to end (its stdin closed, or
// a SIGTERM) has before it is killed.
const moverGrace = 2 * time.Second

// refMovers are the long-lived `git update-ref --stdin` processes of a
// Repo, one per reflog message: git takes the message once, as -m, for
// every transaction of the process, and a landing and a branch pointed
// somewhere are told apart in the reflog. A run moves refs under two
// messages at most, so this costs a process or two a run where a process
// a move cost before (some 3 ms idle, 9 on a busy machine, each).
type refMovers struct {
	mu sync.Mutex
	m  map[string]*refMover
}

// mover returns the mover of msg, made when missing.
func (rm *refMovers) mover(dir, msg string) *refMover {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.m == nil {
		rm.m = map[string]*refMover{}
	}
	m := rm.m[msg]
	if m == nil {
		m = &refMover{dir: dir, msg: msg}
		rm.m[msg] = m
	}
	return m
}

// close ends every mover's process.
func (rm *refMovers) close() error {
	rm.mu.Lock()
	ms := make([]*refMover, 0, len(rm.m))
	for _, m := range rm.m {
		ms = append(ms, m)
	}
	rm.mu.Unlock()
	var errs []error
	for _, m := range ms {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

// refMover moves refs through one `git update-ref --stdin -m msg`
// process, started on first use and ended after moverIdle without a
// transaction. Its transactions are one at a time (mu).
type refMover struct {
	dir, msg string

	mu   sync.Mutex
	p    *moverProc  // nil when no process runs
	gen  uint64      // counts transactions and closes: an idle timer of an older one does nothing
	idle *time.Timer // ends p after moverIdle
}

// moverProc is a running `git update-ref --stdin`.
type moverProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
}

// move makes ref point at newSHA in one transaction: only when it points
// at oldSHA, when cas is set (an empty oldSHA then asks that ref be
// missing, as git update-ref's empty old value does). handled is false when the process could
// not be had or died without a word: the caller then asks a one-shot git,
// and no move was reported. A transaction git refused is git's error; one
// whose context ended is the context's, its process killed (git removes
// its locks on SIGTERM). git prints "commit: ok" after it moved the ref,
// so a process that died or was killed in between made a move reported
// as failed, as a one-shot git killed there would: a caller that must
// know reads the ref (host/run's landing does).
func (m *refMover) move(ctx context.Context, ref, newSHA, oldSHA string, cas bool) (handled bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	if m.idle != nil {
		m.idle.Stop()
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	if m.p == nil {
		p, err := startMover(m.dir, m.msg)
		if err != nil {
			return false, nil
		}
		m.p = p
	}
	p := m.p
	update := "update " + ref + " " + newSHA
	switch {
	case cas && oldSHA == "":
		update = "create " + ref + " " + newSHA
	case cas:
		update += " " + oldSHA
	}
	stop := context.AfterFunc(ctx, p.term)
	err = p.transact("start\n" + update + "\nprepare\ncommit\n")
	cancelled := !stop()
	if err == nil {
		if cancelled {
			// Committed before the kill: the move stands, the
			// process is done.
			_ = p.end()
			m.p = nil
		} else {
			m.armIdle()
		}
		return true, nil
	}
	// The process is done with: it said why, or died, or was ended.
	werr := p.end()
	m.p = nil
	if cancelled && ctx.Err() != nil {
		return true, ctx.Err()
	}
	if said := strings.TrimSpace(p.stderr.String()); strings.Contains(said, "fatal:") {
		if werr == nil {
			werr = err
		}
		return true, &Error{Args: []string{"update-ref", "--stdin", "-m", m.msg}, Stderr: said, Err: werr}
	}
	return false, nil
}

// armIdle ends the process after moverIdle unless another transaction
// (or close) comes first. Called with mu held.
func (m *refMover) armIdle() {
	gen := m.gen
	m.idle = time.AfterFunc(moverIdle, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.gen != gen || m.p == nil {
			return
		}
		_ = m.p.end()
		m.p = nil
	})
}

// close ends the process now, after the transaction under way.
func (m *refMover) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	if m.idle != nil {
		m.idle.Stop()
	}
	if m.p == nil {
		return nil
	}
	err := m.p.end()
	m.p = nil
	return err
}

// pid is the process's id, 0 when none runs (for tests).
func (m *refMover) pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil {
		return 0
	}
	return m.p.cmd.Process.Pid
}

// startMover starts git update-ref --stdin in dir as runEnv starts git:
// the repository's own environment, no prompt, the children's attributes.
func startMover(dir, msg string) (*moverProc, error) {
	cmd := exec.Command("git", "update-ref", "--stdin", "-m", msg)
	cmd.Dir = dir
	cmd.Env = append(proc.Env(proc.Git, proc.EnvOptions{}), "GIT_TERMINAL_PROMPT=0")
	cmd.SysProcAttr = proc.ChildAttr()
	// A child of git's (a reference-transaction hook's) that keeps its
	// stderr open must not hold Wait, and with it every later move.
	cmd.WaitDelay = moverGrace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &moverProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), stderr: &tailBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// transact writes one transaction and reads git's answers to it: the move
// is known made only once git said "commit: ok".
func (p *moverProc) transact(tx string) error {
	if _, err := io.WriteString(p.stdin, tx); err != nil {
		return err
	}
	for _, want := range []string{"start: ok", "prepare: ok", "commit: ok"} {
		line, err := p.out.ReadString('\n')
		if err != nil {
			return err
		}
		if got := strings.TrimSuffix(line, "\n"); got != want {
			return fmt.Errorf("git update-ref said %q where %q was due", got, want)
		}
	}
	return nil
}

// term asks the process to end (git removes the ref locks it holds on
// SIGTERM); end kills it when it does not.
func (p *moverProc) term() {
	if p.cmd.Process.Signal(syscall.SIGTERM) != nil {
		_ = p.cmd.Process.Kill()
	}
}

// end closes the process's stdin (git aborts a transaction it has not
// committed and exits) and waits for it, killing it after moverGrace.
func (p *moverProc) end() error {
	_ = p.stdin.Close()
	t := time.AfterFunc(moverGrace, func() { _ = p.cmd.Process.Kill() })
	defer t.Stop()
	return p.cmd.Wait()
}

// tailBuffer keeps the last tailMax bytes written to it: a process that
// lives for a run keeps only what it said last (its fatal line).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4096

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailMax {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// plainField reports whether s can be written as a field of a line of
// update-ref --stdin: not empty, no space or control byte (git's ref
// names hold none; anything else goes to a one-shot git, which says
// exactly what it refuses).
func plainField(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// moveRef makes ref point at newSHA with the reflog message msg: only
// when it points at oldSHA, when cas is set ("" asks that ref be missing,
// as git update-ref's empty old value does). Written here as git would
// write it when nothing asks for more (refwrite.go), else through the
// Repo's long-lived git process of msg, or a one-shot git when that cannot be
// had: a move is reported only once git said it was made.
func (r *Repo) moveRef(ctx context.Context, msg, ref, newSHA, oldSHA string, cas bool) error {
	return r.moveRefAt(ctx, "", msg, ref, newSHA, oldSHA, cas)
}

// moveRefAt is moveRef made from the worktree whose git directory is
// headDir ("": the main one), whose HEAD's reflog gets the line too when
// HEAD is on ref.
func (r *Repo) moveRefAt(ctx context.Context, headDir, msg, ref, newSHA, oldSHA string, cas bool) error {
	if r.writeRef(ctx, headDir, msg, ref, newSHA, oldSHA, cas) {
		return nil
	}
	if plainField(ref) && plainField(newSHA) && (!cas || oldSHA == "" || plainField(oldSHA)) {
		handled, err := r.movers.mover(r.Root, msg).move(ctx, ref, newSHA, oldSHA, cas)
		if handled {
			return err
		}
	}
	args := []string{"update-ref", "-m", msg, ref, newSHA}
	if cas {
		args = append(args, oldSHA)
	}
	_, err := run(ctx, r.Root, nil, args...)
	return err
}

// SetBranch points branch (a name under refs/heads/) at sha, wherever it
// pointed before, with the reflog message "weave: branch".
func (r *Repo) SetBranch(ctx context.Context, branch, sha string) error {
	if err := r.moveRef(ctx, msgBranch, "refs/heads/"+branch, sha, "", false); err != nil {
		return fmt.Errorf("point branch %s at %s: %w", branch, short(sha), err)
	}
	return nil
}

// Close ends the git processes r keeps for moving refs, after the move
// under way. r stays usable: a later move starts one again. Without
// Close, they end after a short idle time anyway.
func (r *Repo) Close() error { return r.movers.close() }
