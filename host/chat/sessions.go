package chat

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/safefile"
	"github.com/weavehq/weave/plugins"
)

// Tokens is the token use of model calls, summed.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// Add adds u to t.
func (t *Tokens) Add(u Tokens) {
	t.Input += u.Input
	t.Output += u.Output
	t.CacheRead += u.CacheRead
	t.CacheWrite += u.CacheWrite
}

// Total is every token counted.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

func tokensOf(u plugins.Usage) Tokens {
	return Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens}
}

// SessionSummary describes one session from its transcript.
type SessionSummary struct {
	ID string `json:"id"`
	// Agent is the agent the session began with (the one a person spoke
	// to, or the delegated one).
	Agent string `json:"agent"`
	// Parent and ParentAgent name the session and agent that delegated
	// this one; empty for a session a person or a run started.
	Parent      string    `json:"parent,omitempty"`
	ParentAgent string    `json:"parent_agent,omitempty"`
	Started     time.Time `json:"started"`
	LastActive  time.Time `json:"last_active"`
	// Messages counts the messages on file (the person's, the models',
	// tool results).
	Messages int `json:"messages"`
	// Tokens is this session's own use; Total adds its delegations'.
	Tokens Tokens `json:"tokens"`
	Total  Tokens `json:"total"`
	// Cost is what this session's own calls cost, TotalCost with its
	// delegations'; null when a call's price was unknown.
	Cost      Cost `json:"cost_usd"`
	TotalCost Cost `json:"total_cost_usd"`
	// Children are the sessions delegated from this one, oldest first.
	Children []string `json:"children,omitempty"`
}

// Session is one session's transcript, read back.
type Session struct {
	SessionSummary
	// ByAgent is the token use of each agent in this session alone.
	ByAgent map[string]Tokens `json:"by_agent"`
	// CostByAgent is what each agent's calls in this session alone cost.
	CostByAgent map[string]Cost `json:"cost_by_agent"`
	Lines       []SessionLine   `json:"lines"`
}

// ErrNoSession is returned for a session id with no transcript.
var ErrNoSession = errors.New("no such session")

// ReadSession reads the transcript of session id in project; id may be
// the start of one session's id.
func ReadSession(project, id string) (*Session, error) {
	if !sessionIDRE.MatchString(id) {
		return nil, fmt.Errorf("session %q: %w (ids are plain names; see `weave sessions list`)", id, ErrNoSession)
	}
	inside := safefile.Inside{Root: project}
	s, err := readTranscript(inside, layout.NewProject(project).Transcript(id), id, true)
	if errors.Is(err, fs.ErrNotExist) {
		// Not a whole id: the start of one, as git takes a commit's.
		var full string
		if full, err = sessionByPrefix(project, id); err != nil {
			return nil, err
		}
		s, err = readTranscript(inside, layout.NewProject(project).Transcript(full), full, true)
	}
	return s, err
}

// sessionByPrefix is the one session whose id starts with prefix.
func sessionByPrefix(project, prefix string) (string, error) {
	l := layout.NewProject(project)
	entries, err := safefile.Inside{Root: project}.ReadDir(l.Sessions())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("list sessions: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && !e.IsDir() && strings.HasPrefix(id, prefix) && sessionIDRE.MatchString(id) {
			ids = append(ids, id)
		}
	}
	ids = withoutDelegated(ids)
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("session %q: %w in %s; see `weave sessions list`", prefix, ErrNoSession, l.Rel(l.Sessions()))
	case 1:
		return ids[0], nil
	}
	shown := ids
	if len(shown) > 5 {
		shown = shown[:5]
	}
	return "", fmt.Errorf("session %q is the start of %d sessions (%s); give more of the id", prefix, len(ids), strings.Join(shown, ", "))
}

// Sessions lists the sessions of project, the most recently active first,
// each with its children named and its Total counting them.
func Sessions(project string) ([]SessionSummary, error) {
	dir := layout.NewProject(project).Sessions()
	inside := safefile.Inside{Root: project}
	entries, err := inside.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	byID := map[string]*SessionSummary{}
	var out []*SessionSummary
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || e.IsDir() || !sessionIDRE.MatchString(id) {
			continue
		}
		s, err := readTranscript(inside, filepath.Join(dir, e.Name()), id, false)
		if err != nil {
			// One unreadable file (a named pipe, a link out of the project)
			// does not hide the others.
			continue
		}
		sum := s.SessionSummary
		byID[id] = &sum
		out = append(out, &sum)
	}
	slices.SortFunc(out, func(a, b *SessionSummary) int { return cmp.Compare(a.Started.UnixNano(), b.Started.UnixNano()) })
	for _, s := range out {
		if p := byID[s.Parent]; p != nil {
			p.Children = append(p.Children, s.ID)
		}
	}
	var total func(s *SessionSummary, depth int) (Tokens, Cost)
	total = func(s *SessionSummary, depth int) (Tokens, Cost) {
		t, cost := s.Tokens, s.Cost
		if depth < maxSessionDepth {
			for _, c := range s.Children {
				ct, cc := total(byID[c], depth+1)
				t.Add(ct)
				cost.Add(cc)
			}
		}
		return t, cost
	}
	res := make([]SessionSummary, 0, len(out))
	for _, s := range out {
		s.Total, s.TotalCost = total(s, 0)
		res = append(res, *s)
	}
	slices.SortStableFunc(res, func(a, b SessionSummary) int {
		return cmp.Or(b.LastActive.Compare(a.LastActive), strings.Compare(a.ID, b.ID))
	})
	return res, nil
}

// maxSessionDepth bounds how deep a session tree is followed, whatever
// the files on disk say.
const maxSessionDepth = 16

// LatestSession is the most recently active session a person or a run
// started (not a delegation), for `weave chat --resume` without an id.
func LatestSession(project string) (SessionSummary, error) {
	all, err := Sessions(project)
	if err != nil {
		return SessionSummary{}, err
	}
	for _, s := range all {
		if s.Parent == "" {
			return s, nil
		}
	}
	return SessionSummary{}, fmt.Errorf("%w yet in %s: start one with `weave chat`", ErrNoSession, filepath.Join(layout.DirName, "sessions"))
}

// SessionTokens sums the token use of the sessions ids and of the
// sessions delegated from them (named under them; see tools.ChildSession).
// It reads those transcripts only, so that a status redrawn every second
// stays cheap.
func SessionTokens(project string, ids []string) (Tokens, error) {
	t, _, err := SessionUse(project, ids)
	return t, err
}

// SessionUse is SessionTokens with what those calls cost.
func SessionUse(project string, ids []string) (Tokens, Cost, error) {
	dir := layout.NewProject(project).Sessions()
	inside := safefile.Inside{Root: project}
	entries, err := inside.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Tokens{}, Cost{}, nil
	}
	if err != nil {
		return Tokens{}, Cost{}, fmt.Errorf("list sessions: %w", err)
	}
	var t Tokens
	var cost Cost
	seen := map[string]bool{}
	for _, id := range ids {
		if !sessionIDRE.MatchString(id) {
			continue
		}
		// The session's own transcript and those delegated from it
		// (id.<agent>-<n>.jsonl).
		for _, e := range entries {
			name := e.Name()
			if seen[name] || (name != id+".jsonl" && !(strings.HasPrefix(name, id+".") && strings.HasSuffix(name, ".jsonl"))) {
				continue
			}
			seen[name] = true
			s, err := readTranscript(inside, filepath.Join(dir, name), id, false)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return Tokens{}, Cost{}, err
			}
			t.Add(s.Tokens)
			cost.Add(s.Cost)
		}
	}
	return t, cost, nil
}

func readTranscript(inside safefile.Inside, path, id string, keep bool) (*Session, error) {
	f, err := inside.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &Session{SessionSummary: SessionSummary{ID: id}, ByAgent: map[string]Tokens{}, CostByAgent: map[string]Cost{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxSessionLine)
	for sc.Scan() {
		var line SessionLine
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			// A torn last line (the process died mid-write) is skipped.
			continue
		}
		if s.Started.IsZero() || line.Time.Before(s.Started) {
			s.Started = line.Time
		}
		if line.Time.After(s.LastActive) {
			s.LastActive = line.Time
		}
		switch line.Type {
		case lineParent:
			s.Parent, s.ParentAgent = line.Parent, line.Agent
		case lineMessage:
			if s.Agent == "" {
				s.Agent = line.Agent
			}
			s.Messages++
		case lineUsage:
			if line.Usage != nil {
				u := tokensOf(*line.Usage)
				s.Tokens.Add(u)
				a := s.ByAgent[line.Agent]
				a.Add(u)
				s.ByAgent[line.Agent] = a
				c, ac := lineCost(line), s.CostByAgent[line.Agent]
				s.Cost.Add(c)
				ac.Add(c)
				s.CostByAgent[line.Agent] = ac
			}
		}
		if keep {
			s.Lines = append(s.Lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	s.Total, s.TotalCost = s.Tokens, s.Cost
	return s, nil
}

// withoutDelegated drops from ids the sessions delegated from another of
// ids: a delegation's id starts with its parent's ("PARENT.thread-1a2b3c"),
// so the start of a session's id also matches every session it delegated
// to, and means the session itself.
func withoutDelegated(ids []string) []string {
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	var out []string
	for _, id := range ids {
		parent, child := id, false
		for {
			i := strings.LastIndexByte(parent, '.')
			if i < 0 {
				break
			}
			if parent = parent[:i]; in[parent] {
				child = true
				break
			}
		}
		if !child {
			out = append(out, id)
		}
	}
	return out
}
