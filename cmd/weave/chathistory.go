package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// chatHistoryMax bounds the messages kept per project; the file is cut
// back to it when it grows to twice as many.
const chatHistoryMax = 1000

// chatHistory is what the person typed in a project's chats, newest last,
// kept in the user's state directory (never in the project, which may be
// shared): $XDG_STATE_HOME/weave/history/, else ~/.local/state/weave/
// history/, one file per project named by a hash of its path, readable
// by its owner only. A message is one JSON string a line, so that one of
// several lines stays one entry. Without a state directory the history
// lives for the chat only.
type chatHistory struct {
	path string

	mu      sync.Mutex
	entries []string
	// lines is how many entries the file holds.
	lines int
}

// chatHistoryPath is the history file of project, "" when no state
// directory is known.
func chatHistoryPath(project string, getenv func(string) string) string {
	dir := ""
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		dir = filepath.Join(d, "weave")
	} else if home := getenv("HOME"); home != "" {
		dir = filepath.Join(home, ".local", "state", "weave")
	}
	if dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(dir, "history", "chat-"+hex.EncodeToString(sum[:8])+".jsonl")
}

// loadChatHistory reads the history at path ("" for none). A missing or
// damaged file is an empty history: history is a convenience.
func loadChatHistory(path string) *chatHistory {
	h := &chatHistory{path: path}
	if path == "" {
		return h
	}
	f, err := os.Open(path)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e string
		if json.Unmarshal(sc.Bytes(), &e) == nil && e != "" {
			h.entries = append(h.entries, e)
		}
		h.lines++
	}
	if len(h.entries) > chatHistoryMax {
		h.entries = h.entries[len(h.entries)-chatHistoryMax:]
	}
	return h
}

// add records a message the person sent: in memory, and appended to the
// file (rewritten with the newest chatHistoryMax when it has grown to
// twice that). A repeat of the last message is not recorded again.
func (h *chatHistory) add(msg string) error {
	if strings.TrimSpace(msg) == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && h.entries[n-1] == msg {
		return nil
	}
	h.entries = append(h.entries, msg)
	if len(h.entries) > chatHistoryMax {
		h.entries = h.entries[len(h.entries)-chatHistoryMax:]
	}
	if h.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return fmt.Errorf("keep the chat history: %w", err)
	}
	if h.lines+1 >= 2*chatHistoryMax {
		return h.rewrite()
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("keep the chat history: %w", err)
	}
	b, _ := json.Marshal(msg)
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keep the chat history: %w", err)
	}
	h.lines++
	return nil
}

// rewrite replaces the file with the entries in memory, through a
// temporary file so that a crash leaves the old history or the new.
func (h *chatHistory) rewrite() error {
	tmp, err := os.CreateTemp(filepath.Dir(h.path), ".chat-history-*")
	if err != nil {
		return fmt.Errorf("keep the chat history: %w", err)
	}
	w := bufio.NewWriter(tmp)
	for _, e := range h.entries {
		b, _ := json.Marshal(e)
		w.Write(b)
		w.WriteByte('\n')
	}
	err = errors.Join(w.Flush(), tmp.Chmod(0o600), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), h.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("keep the chat history: %w", err)
	}
	h.lines = len(h.entries)
	return nil
}

// recall is the line editor's view of the history: newest first, a
// message's line breaks shown as ↵ (and sent as line breaks again).
type recall struct{ h *chatHistory }

// Add is a no-op: the editor records whole messages itself.
func (recall) Add(string) {}

func (r recall) Len() int {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return len(r.h.entries)
}

func (r recall) At(i int) string {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return strings.ReplaceAll(r.h.entries[len(r.h.entries)-1-i], "\n", recallBreak)
}

// recallBreak stands for a line break in a recalled message.
const recallBreak = "↵"

// noRecall is an empty history, for answers to questions.
type noRecall struct{}

func (noRecall) Add(string)    {}
func (noRecall) Len() int      { return 0 }
func (noRecall) At(int) string { panic("noRecall has no entries") }
