package proc

// Job control. A terminal's Ctrl-Z sends SIGTSTP to its foreground process
// group, which is weave's; the groups weave starts for blocks, bash calls
// and command hooks are not in it, so they would run on while weave is
// stopped. Suspend and Continue let weave take them along: it suspends its
// groups before it stops itself and continues them once it is continued.

// Suspend stops every running group of the set (SIGSTOP, which a command
// cannot catch or ignore) and every group started before Continue, and
// returns how many groups it stopped. A nil Set has none.
func (s *Set) Suspend() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suspended = true
	for g := range s.live {
		suspendGroup(g.pid)
		// A child being forked as the stop came may have missed it.
		go s.stopAgain(g.pid)
	}
	return len(s.live)
}

// Continue continues every group of the set (SIGCONT). It is harmless for
// groups that are not stopped.
func (s *Set) Continue() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suspended = false
	for g := range s.live {
		continueGroup(g.pid)
	}
}
