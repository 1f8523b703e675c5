package bus

import (
	"errors"
	"fmt"
)

// ErrLimit is what errors.Is finds in an error of a bus that refused a
// message because one of its configured limits is reached (bus.max_topics,
// bus.max_store_bytes). The error's text names the limit and what to do; a
// face answers it as a limit, not as an internal failure.
var ErrLimit = errors.New("a bus limit is reached")

// limitError is an error whose text says which limit and what to do, and
// which errors.Is takes for ErrLimit.
type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrLimit }

func limitf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// Keeps reports whether a bus with these options keeps the messages of
// topic: whether it is retained or append-only (Retained, AppendOnly).
// Those are the topics that count against MaxTopics.
func (o Options) Keeps(topic string) bool {
	for _, ps := range [][]string{o.Retained, o.AppendOnly} {
		for _, p := range ps {
			if Match(p, topic) {
				return true
			}
		}
	}
	return false
}
