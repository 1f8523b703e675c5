package chat

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
