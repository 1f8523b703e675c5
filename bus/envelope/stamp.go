package envelope

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/google/uuid"
)

// stamper gives envelopes their id and ts for one broker or client: the
// same values as NewID and FormatTime, made for less. Ids are random
// UUIDs drawn from crypto/rand a batch at a time rather than with one read
// each, and the ts of the current millisecond is formatted once and shared
// by every envelope stamped within it. The zero value is ready to use.
type stamper struct {
	mu    sync.Mutex
	rnd   [16 * 32]byte
	used  int // bytes of rnd handed out; a full batch is drawn again
	ms    int64
	stamp string
}

// id returns a fresh random (version 4) UUID, as NewID does.
func (s *stamper) id() string {
	var u uuid.UUID
	s.mu.Lock()
	if s.used == 0 || s.used == len(s.rnd) {
		_, _ = rand.Read(s.rnd[:]) // never fails; it crashes the program instead
		s.used = 0
	}
	copy(u[:], s.rnd[s.used:s.used+16])
	s.used += 16
	s.mu.Unlock()
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant RFC 4122
	return u.String()
}

// ts returns FormatTime(t).
func (s *stamper) ts(t time.Time) string {
	ms := t.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stamp == "" || ms != s.ms {
		s.ms, s.stamp = ms, FormatTime(t)
	}
	return s.stamp
}
