package jwz

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/internal/proc"
)

// Names of the store's files.
const (
	DirName    = ".jwz"
	LegacyDir  = ".zawinski"
	LogFile    = "messages.jsonl"
	LockFile   = "lock"
	ignoreFile = ".gitignore"
)

// Sender is a message's sender object.
type Sender struct {
	ID    string  `json:"id"`
	Name  string  `json:"name"`
	Model *string `json:"model"`
	Role  *string `json:"role"`
}

// Git is the git context jwz attaches to a message.
type Git struct {
	OID    string `json:"oid"`
	Head   string `json:"head"`
	Dirty  bool   `json:"dirty"`
	Prefix string `json:"prefix"`
}

// Topic is a topic record of the log.
type Topic struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	CreatedAt   int64  `json:"created_at"`
}

// Message is a message record of the log.
type Message struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	TopicID   string  `json:"topic_id"`
	ParentID  *string `json:"parent_id"`
	Body      string  `json:"body"`
	CreatedAt int64   `json:"created_at"`
	Sender    *Sender `json:"sender"`
	Git       *Git    `json:"git"`
}

// Writer posts messages to the store of one project.
type Writer struct {
	project string
	sender  *Sender
	now     func() time.Time

	mu       sync.Mutex
	lastMS   int64
	lastRand [10]byte
	// topics caches topic ids found or written in the log at logPath,
	// valid while the log has not shrunk below logSize (append-only, so a
	// topic's first record stays first).
	topics  map[string]string
	logPath string
	logSize int64
}

// NewWriter returns a Writer for the store of project (found as jwz finds
// it, walking up from project, or created in project when there is none)
// whose messages carry sender (nil: none, as `jwz post` without identity
// flags).
func NewWriter(project string, sender *Sender) *Writer {
	return &Writer{project: project, sender: sender, now: time.Now}
}

// StoreDir returns the store directory jwz would use from dir: the first
// .jwz (or legacy .zawinski) found walking up, and ok false when none is.
func StoreDir(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for d := abs; ; d = filepath.Dir(d) {
		for _, name := range []string{DirName, LegacyDir} {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				return p, true
			}
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// Post appends body to topic as a new top-level message, creating the
// topic (and the store) first when missing, and returns the message id.
// The body is trimmed of surrounding white space, as jwz does; an empty
// body is refused.
func (w *Writer) Post(ctx context.Context, topic string, body []byte) (string, error) {
	topic = strings.TrimSpace(topic)
	text := strings.TrimSpace(string(body))
	if topic == "" {
		return "", errors.New("jwz post: empty topic name")
	}
	if text == "" {
		return "", errors.New("jwz post: empty message body")
	}
	dir, err := w.store()
	if err != nil {
		return "", err
	}
	git := capture(ctx, w.project)

	unlock, err := lock(dir)
	if err != nil {
		return "", err
	}
	defer unlock()

	logPath := filepath.Join(dir, LogFile)
	w.mu.Lock()
	defer w.mu.Unlock()
	if fi, err := os.Stat(logPath); w.logPath != logPath || err != nil || fi.Size() < w.logSize {
		w.topics, w.logPath, w.logSize = map[string]string{}, logPath, 0
	}
	topicID := w.topics[topic]
	if topicID == "" {
		if topicID, err = findTopic(logPath, topic); err != nil {
			return "", err
		}
	}
	var out bytes.Buffer
	if topicID == "" {
		ms, id := w.next()
		topicID = id
		if err := writeLine(&out, Topic{Type: "topic", ID: id, Name: topic, Description: "", CreatedAt: ms}); err != nil {
			return "", err
		}
	}
	ms, id := w.next()
	msg := Message{Type: "message", ID: id, TopicID: topicID, Body: text, CreatedAt: ms, Sender: w.sender, Git: git}
	if err := writeLine(&out, msg); err != nil {
		return "", err
	}
	size, err := appendSync(logPath, out.Bytes())
	if err != nil {
		return "", err
	}
	w.topics[topic], w.logSize = topicID, size
	return id, nil
}

// store finds the project's store or creates one in the project as
// `jwz init` does: the directory, an empty log and a .gitignore.
func (w *Writer) store() (string, error) {
	if dir, ok := StoreDir(w.project); ok {
		return dir, nil
	}
	dir := filepath.Join(w.project, DirName)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("create jwz store: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("create jwz store: %w", err)
	}
	_ = f.Close()
	if err := os.WriteFile(filepath.Join(dir, ignoreFile), []byte("*.db\n*.db-wal\n*.db-shm\nlock\n"), 0o644); err != nil {
		return "", fmt.Errorf("create jwz store: %w", err)
	}
	return dir, nil
}

// findTopic returns the id of the first topic record named name in the
// log ("" when none): jwz keeps the first of two same-named topics.
func findTopic(logPath, name string) (string, error) {
	f, err := os.Open(logPath)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read jwz log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && bytes.Contains(line, []byte(`"topic"`)) {
			var t Topic
			if json.Unmarshal(bytes.TrimSpace(line), &t) == nil && t.Type == "topic" && strings.TrimSpace(t.Name) == name && t.ID != "" {
				return t.ID, nil
			}
		}
		if err == io.EOF {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("read jwz log: %w", err)
		}
	}
}

// appendSync writes data at the end of the log in one write and fsyncs it.
// A log whose last line lacks its newline (a writer that died mid-line) is
// given one first, so the new records start on a line of their own.
// It returns the log's size after the write.
func appendSync(logPath string, data []byte) (int64, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open jwz log: %w", err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		size = fi.Size()
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err == nil && last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	if _, err := f.Write(data); err != nil {
		return 0, fmt.Errorf("append to jwz log: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("sync jwz log: %w", err)
	}
	return size + int64(len(data)), nil
}

func writeLine(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf) // one line, newline-terminated
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode jwz record: %w", err)
	}
	return nil
}

// next returns the time in milliseconds and a ULID for a new record; both
// increase strictly from one call to the next.
func (w *Writer) next() (int64, string) {
	ms := w.now().UnixMilli()
	if ms <= w.lastMS {
		ms = w.lastMS + 1
		incr(&w.lastRand)
	} else if _, err := rand.Read(w.lastRand[:]); err != nil {
		incr(&w.lastRand)
	}
	w.lastMS = ms
	return ms, ulid(ms, w.lastRand)
}

func incr(b *[10]byte) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return
		}
	}
}

// ulid encodes a 48-bit millisecond time and 80 random bits as 26
// characters of Crockford's base32.
func ulid(ms int64, r [10]byte) string {
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var v [16]byte
	t := uint64(ms) & (1<<48 - 1)
	for i := 5; i >= 0; i-- {
		v[i] = byte(t)
		t >>= 8
	}
	copy(v[6:], r[:])
	out := make([]byte, 26)
	// 128 bits, most significant first; the first character holds 3 bits.
	for i := 25; i >= 0; i-- {
		bit := (25 - i) * 5 // bit offset from the least significant end
		var c byte
		for k := 0; k < 5; k++ {
			pos := bit + k
			if pos >= 128 {
				break
			}
			byteIdx := 15 - pos/8
			if v[byteIdx]>>(pos%8)&1 == 1 {
				c |= 1 << k
			}
		}
		out[i] = alphabet[c]
	}
	return string(out)
}

// capture is jwz's git context of dir: commit, branch (HEAD when
// detached), whether the tree has changes, the path from the repository's
// root; nil outside a repository.
func capture(ctx context.Context, dir string) *Git {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	status, err := proc.GitOutput(ctx, dir, "status", "--porcelain=v2", "--branch")
	if err != nil {
		return nil
	}
	prefix, err := proc.GitOutput(ctx, dir, "rev-parse", "--show-prefix")
	if err != nil {
		return nil
	}
	g := &Git{Prefix: strings.Trim(string(prefix), " \t\r\n/")}
	for _, l := range strings.Split(string(status), "\n") {
		switch {
		case strings.HasPrefix(l, "# branch.oid ") && g.OID == "":
			g.OID = strings.TrimPrefix(l, "# branch.oid ")
		case strings.HasPrefix(l, "# branch.head ") && g.Head == "":
			g.Head = strings.TrimPrefix(l, "# branch.head ")
		case l != "" && l[0] != '#':
			g.Dirty = true
		}
	}
	if g.OID == "" {
		return nil
	}
	if g.Head == "" {
		g.Head = "HEAD"
	}
	return g
}
