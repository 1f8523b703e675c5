package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// spinner shows on a terminal's stderr that the model is thinking, until
// something is printed. A nil spinner (not a terminal) does nothing.
type spinner struct {
	out io.Writer

	mu sync.Mutex
	// stop ends the running spinner, which closes done once its line is
	// cleared; nil when none runs.
	stopc, done chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// start shows the spinner unless it is showing.
func (s *spinner) start() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopc != nil {
		return
	}
	s.stopc, s.done = make(chan struct{}), make(chan struct{})
	go s.spin(s.stopc, s.done)
}

// stop clears the spinner's line and returns once it is cleared, so that
// what is printed next starts on a clean line.
func (s *spinner) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopc == nil {
		return
	}
	close(s.stopc)
	<-s.done
	s.stopc, s.done = nil, nil
}

func (s *spinner) spin(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		fmt.Fprintf(s.out, "\r%s thinking", spinnerFrames[i%len(spinnerFrames)])
		select {
		case <-stop:
			fmt.Fprint(s.out, "\r\x1b[K")
			return
		case <-tick.C:
		}
	}
}
