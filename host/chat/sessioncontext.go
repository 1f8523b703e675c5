package chat

import "strings"

// AddContext has texts go with session's next model call, as a reminder
// beside its newest message, the way the context chat.message hooks leave
// does: what a SessionStart hook says reaches the model in the session's
// first request.
func (d *Door) AddContext(session string, texts []string) {
	if d == nil || len(texts) == 0 {
		return
	}
	d.mu.Lock()
	d.pending[session] = append(d.pending[session], texts...)
	d.mu.Unlock()
}

// wasAnnounced reports whether text is a message UserMessage announced
// for session, and forgets it.
func (d *Door) wasAnnounced(session, text string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	list := d.announced[session]
	for i, t := range list {
		if t == text || strings.HasPrefix(text, t) {
			d.announced[session] = append(list[:i:i], list[i+1:]...)
			return true
		}
	}
	return false
}
