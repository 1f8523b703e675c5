package plans

import (
	"fmt"
	"strconv"
)

// TaskLabel is how every message names a task: by number and title,
// `3 (Add the login page)`, or by its quoted title when it has no number.
func TaskLabel(number int, title string) string {
	if number > 0 {
		return fmt.Sprintf("%d (%s)", number, title)
	}
	return strconv.Quote(title)
}

// Label names the task in messages (TaskLabel).
func (t Task) Label() string { return TaskLabel(t.Number, t.Title) }

// Label names the task in flight in messages (TaskLabel).
func (f *InFlight) Label() string { return TaskLabel(f.Number, f.Title) }
