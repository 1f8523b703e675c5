package host

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/weavehq/weave/plugins"
)

// SessionLine is one line of a session's transcript,
// .weave/sessions/<id>.jsonl: a message (the person's, the model's with its
// tool calls, or a tool result) or the token use of one model call. Every
// agent of the session writes to it, delegated ones included, each line
// naming its agent.
type SessionLine struct {
	Time time.Time `json:"time"`
	// Type is "message", "usage", "review" (a reviewer's verdict), or
	// "conversation", which starts a new conversation of its agent (a later
	// delegation to the same role).
	Type    string               `json:"type"`
	Agent   string               `json:"agent"`
	Message *plugins.ChatMessage `json:"message,omitempty"`
	Usage   *plugins.Usage       `json:"usage,omitempty"`
	Model   string               `json:"model,omitempty"`
	// Review is a reviewer's verdict on a plan's work (type "review").
	Review *ReviewLine `json:"review,omitempty"`
}

// sessionLog appends model calls to their session's transcript. It writes
// what the model saw and said, never credentials.
type sessionLog struct {
	dir string

	mu sync.Mutex
	// written counts the messages of each agent's conversation already on
	// file, by session and agent.
	written map[[2]string]int
}

func newSessionLog(project string) *sessionLog {
	if project == "" {
		return nil
	}
	return &sessionLog{dir: filepath.Join(project, ".weave", "sessions"), written: map[[2]string]int{}}
}

var sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// record appends the request's messages not yet on file, the answer and
// its usage.
func (l *sessionLog) record(session, agent string, req plugins.ChatRequest, resp plugins.ChatResponse) error {
	if l == nil || session == "" {
		return nil
	}
	if !sessionIDRE.MatchString(session) {
		return fmt.Errorf("session id %q is not a plain name", session)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := [2]string{session, agent}
	from := l.written[key]
	if from > len(req.Messages) {
		// A shorter chat is a new conversation of the same agent (a second
		// delegation in one session).
		from = 0
	}
	now := time.Now().UTC()
	var lines []SessionLine
	if from == 0 {
		lines = append(lines, SessionLine{Time: now, Type: "conversation", Agent: agent})
	}
	for i := from; i < len(req.Messages); i++ {
		m := req.Messages[i]
		lines = append(lines, SessionLine{Time: now, Type: "message", Agent: agent, Message: &m})
	}
	answer := resp.Message
	u := resp.Usage
	lines = append(lines,
		SessionLine{Time: now, Type: "message", Agent: agent, Message: &answer, Model: resp.Model},
		SessionLine{Time: now, Type: "usage", Agent: agent, Usage: &u, Model: resp.Model})
	l.written[key] = len(req.Messages) + 1
	return l.append(session, lines)
}

// append writes lines to the end of session's transcript; l.mu is held,
// so that the lines of two agents never interleave.
func (l *sessionLog) append(session string, lines []SessionLine) error {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(l.dir, session+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, line := range lines {
		if err := enc.Encode(line); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

// history reads agent's last conversation in session back from its
// transcript: what a resumed chat continues. A session with no transcript
// has no history.
func (l *sessionLog) history(session, agent string) ([]plugins.ChatMessage, error) {
	if l == nil || session == "" {
		return nil, nil
	}
	if !sessionIDRE.MatchString(session) {
		return nil, fmt.Errorf("session id %q is not a plain name", session)
	}
	f, err := os.Open(filepath.Join(l.dir, session+".jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var msgs []plugins.ChatMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxSessionLine)
	for sc.Scan() {
		var line SessionLine
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Agent != agent {
			// A torn last line (the process died mid-write) is skipped.
			continue
		}
		switch line.Type {
		case "conversation":
			msgs = msgs[:0]
		case "message":
			if line.Message != nil {
				msgs = append(msgs, *line.Message)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read session %s: %w", session, err)
	}
	l.mu.Lock()
	l.written[[2]string{session, agent}] = len(msgs)
	l.mu.Unlock()
	return msgs, nil
}

// maxSessionLine bounds one transcript line: a tool result is capped well
// below it.
const maxSessionLine = 16 << 20
