package bus

// memLog is an append-only topic's log, kept in chunks of at most logChunk
// messages: chunks[0][head] has offset first, and the messages follow in
// order. Appends fill the last chunk; drops move head and release whole
// chunks. A message's slot is never written again once it is in a chunk, so
// a Replay reads the chunks it took under the lock without holding it, and
// no append ever copies the log or allocates more than one chunk.
type memLog struct {
	first  uint64
	chunks [][]Message
	head   int
	n      int // messages kept
	// bytes is what the kept messages hold, by storedSize.
	bytes int64
}

// A log's first chunk holds firstChunk messages, each next one twice as
// many as the one before, up to logChunk.
const (
	firstChunk = 4
	logChunk   = 1024
)

// add appends m, drops the oldest message past limit and returns m's offset
// and the bytes the log grew by (negative when it shrank).
func (l *memLog) add(m Message, limit int) (uint64, int64) {
	before := l.bytes
	last := len(l.chunks) - 1
	if last < 0 || len(l.chunks[last]) == cap(l.chunks[last]) {
		// Chunks start small and double up to logChunk, so that a log of
		// a few messages costs a few slots: a bus may keep many.
		size := firstChunk
		if last >= 0 {
			size = min(2*cap(l.chunks[last]), logChunk)
		}
		l.chunks = append(l.chunks, make([]Message, 0, size))
		last++
	}
	l.chunks[last] = append(l.chunks[last], m)
	l.n++
	l.bytes += storedSize(m)
	if l.n > limit {
		l.drop(l.n - limit)
	}
	return l.first + uint64(l.n) - 1, l.bytes - before
}

// front is the oldest message kept; the log must not be empty.
func (l *memLog) front() Message { return l.chunks[0][l.head] }

// drop forgets the n oldest messages. Their slots are never cleared, since
// a Replay may still be reading them; a chunk goes once all of it is
// dropped, or once the kept messages are fewer than the dropped slots
// (they move to a new chunk), and its memory with its last reader.
func (l *memLog) drop(n int) {
	for n > 0 && l.n > 0 {
		c := l.chunks[0]
		k := min(n, len(c)-l.head)
		for _, m := range c[l.head : l.head+k] {
			l.bytes -= storedSize(m)
		}
		l.head += k
		l.n -= k
		l.first += uint64(k)
		n -= k
		if l.head == len(c) && (len(c) == cap(c) || len(l.chunks) > 1) {
			l.chunks[0] = nil
			l.chunks = l.chunks[1:]
			l.head = 0
		}
	}
	if l.head > 0 && l.head >= l.n {
		// The dropped slots outnumber the kept messages, which then fit in
		// one chunk: they move to a new one, and the old chunks go with
		// their last reader. This copies at most a chunk.
		var kept []Message
		if l.n > 0 {
			kept = make([]Message, 0, max(l.n, firstChunk))
			skip := l.head
			for _, c := range l.chunks {
				kept = append(kept, c[skip:]...)
				skip = 0
			}
		}
		l.chunks, l.head = nil, 0
		if kept != nil {
			l.chunks = [][]Message{kept}
		}
	}
}

// logView is what a Replay reads: n kept messages as they were when it
// was taken, from chunks[0][head], which has offset first.
type logView struct {
	first  uint64
	chunks [][]Message
	head   int
	n      int
}

// view returns the kept messages from offset from on. Only the headers of
// the chunks that hold them are copied (a later append to the last chunk
// writes past the length this copy holds), and nothing when from is past
// the end: a reader catching up on every command asks that most often.
func (l *memLog) view(from uint64) logView {
	from = max(from, l.first)
	if from-l.first >= uint64(l.n) {
		return logView{first: from}
	}
	skip := l.head + int(from-l.first)
	i := 0
	for skip >= len(l.chunks[i]) {
		skip -= len(l.chunks[i])
		i++
	}
	return logView{first: from, chunks: append([][]Message(nil), l.chunks[i:]...), head: skip, n: l.n - int(from-l.first)}
}

// each calls fn on the view's messages, in order, until fn returns false.
func (v logView) each(fn func(uint64, Message) bool) {
	off, skip, left := v.first, v.head, v.n
	for _, c := range v.chunks {
		for _, m := range c[skip:min(len(c), skip+left)] {
			if !fn(off, m) {
				return
			}
			off++
			left--
		}
		skip = 0
	}
}
