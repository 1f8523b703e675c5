package main

import (
	"context"
	"sync"
)

// suspender is what a job control stops and continues with weave: an open
// host's process groups.
type suspender interface {
	SuspendChildren() int
	ContinueChildren()
}

// jobControl takes the process groups of weave's open hosts along when
// weave is stopped (Ctrl-Z) and continued (fg, bg): they are not in the
// terminal's foreground group, so without it a runbook block or a bash call
// would run on while weave is stopped. Main starts one (followJobControl,
// per platform) and puts it in the command's context; openLoggedHost
// registers each host it opens.
type jobControl struct {
	mu    sync.Mutex
	hosts map[suspender]struct{}
}

type jobControlKey struct{}

// withJobControl returns ctx carrying jc.
func withJobControl(ctx context.Context, jc *jobControl) context.Context {
	return context.WithValue(ctx, jobControlKey{}, jc)
}

// followJobs registers h with the job control in ctx, if any, until the
// returned function is called.
func followJobs(ctx context.Context, h suspender) (unfollow func()) {
	jc, _ := ctx.Value(jobControlKey{}).(*jobControl)
	if jc == nil {
		return func() {}
	}
	jc.mu.Lock()
	if jc.hosts == nil {
		jc.hosts = make(map[suspender]struct{})
	}
	jc.hosts[h] = struct{}{}
	jc.mu.Unlock()
	return func() {
		jc.mu.Lock()
		delete(jc.hosts, h)
		jc.mu.Unlock()
	}
}

// suspend stops the groups of every registered host and returns how many
// it stopped.
func (jc *jobControl) suspend() int {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	n := 0
	for h := range jc.hosts {
		n += h.SuspendChildren()
	}
	return n
}

// resume continues the groups of every registered host.
func (jc *jobControl) resume() {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	for h := range jc.hosts {
		h.ContinueChildren()
	}
}
