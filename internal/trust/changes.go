package trust

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/weavehq/weave/internal/proc"
)

// Kind is how a file or key differs from what was trusted.
type Kind string

// The kinds of change.
const (
	Added   Kind = "added"
	Changed Kind = "changed"
	Removed Kind = "removed"
)

// Change is one difference from what was trusted.
type Change struct {
	Kind Kind
	File string // relative to the project root
	// Whole marks the change of a file as a whole, which its key changes
	// follow.
	Whole bool
	// Key is the key path.
	Key string
	// Value is the current value as shown to a person, "" for a removed
	// key or file.
	Value string
}

// Changes is what differs between a snapshot and its record.
type Changes struct {
	// New is set when nothing was ever trusted for the project.
	New bool
	// Files are the files that differ, each once, in snapshot order then
	// removed ones.
	Files []string
	List  []Change
}

// Trusted reports whether there is nothing to trust.
func (c Changes) Trusted() bool { return len(c.Files) == 0 }

// Compare lists how the snapshot differs from the record (nil: none). A
// project without files is trusted whatever the record says: nothing in
// it acts.
func Compare(r *Record, s *Snapshot) Changes {
	var c Changes
	if len(s.Files) == 0 {
		return c
	}
	c.New = r == nil
	seen := map[string]bool{}
	for _, f := range s.Files {
		seen[f.Rel] = true
		var rf RecordFile
		ok := false
		if r != nil {
			rf, ok = r.Files[f.Rel]
		}
		switch {
		case ok && rf.Digest == f.Digest:
			continue
		case !ok:
			c.Files = append(c.Files, f.Rel)
			ch := Change{Kind: Added, File: f.Rel, Whole: true}
			if f.Script {
				ch.Value = "hook script"
			}
			c.List = append(c.List, ch)
			for _, k := range sortedKeys(f.values) {
				c.List = append(c.List, Change{Kind: Added, File: f.Rel, Key: k, Value: f.values[k]})
			}
		case f.Script:
			c.Files = append(c.Files, f.Rel)
			c.List = append(c.List, Change{Kind: Changed, File: f.Rel, Whole: true, Value: "hook script"})
		default:
			c.Files = append(c.Files, f.Rel)
			c.List = append(c.List, Change{Kind: Changed, File: f.Rel, Whole: true})
			whole := len(c.List) - 1
			for _, k := range sortedKeys(f.values) {
				old, had := rf.Keys[k]
				switch {
				case !had:
					c.List = append(c.List, Change{Kind: Added, File: f.Rel, Key: k, Value: f.values[k]})
				case old != keyDigest(rf.Salt, k, f.values[k]):
					c.List = append(c.List, Change{Kind: Changed, File: f.Rel, Key: k, Value: f.values[k]})
				}
			}
			for _, k := range sortedKeys(rf.Keys) {
				if _, has := f.values[k]; !has {
					c.List = append(c.List, Change{Kind: Removed, File: f.Rel, Key: k})
				}
			}
			if whole == len(c.List)-1 {
				c.List[whole].Value = "comments or layout only"
			}
		}
	}
	if r != nil {
		for _, rel := range sortedKeys(r.Files) {
			if !seen[rel] {
				c.Files = append(c.Files, rel)
				c.List = append(c.List, Change{Kind: Removed, File: rel, Whole: true})
			}
		}
	}
	return c
}

// maxShown bounds the key lines a change list prints; the rest are
// counted.
const maxShown = 30

// maxValue bounds one value as shown.
const maxValue = 120

// Write prints the change list for a person: each file with what happened
// to it, then its keys (+ added, ~ changed, - removed) with their current
// values.
func (c Changes) Write(w io.Writer, indent string) {
	shown, hidden := 0, 0
	for _, ch := range c.List {
		if ch.Whole {
			what := map[Kind]string{Added: "new", Changed: "changed", Removed: "removed"}[ch.Kind]
			if ch.Value != "" {
				what += ": " + ch.Value
			}
			fmt.Fprintf(w, "%s%s (%s)\n", indent, ch.File, what)
			continue
		}
		if shown == maxShown {
			hidden++
			continue
		}
		shown++
		mark := map[Kind]string{Added: "+", Changed: "~", Removed: "-"}[ch.Kind]
		key := ch.Key
		if key == unparsed {
			key = "(whole file)"
		}
		if ch.Kind == Removed {
			fmt.Fprintf(w, "%s  %s %s\n", indent, mark, key)
			continue
		}
		fmt.Fprintf(w, "%s  %s %s: %s\n", indent, mark, key, shownValue(ch.Key, ch.Value))
	}
	if hidden > 0 {
		fmt.Fprintf(w, "%s  ... and %d more\n", indent, hidden)
	}
}

// shownValue is a value on one line, cut, and hidden under a secret name.
func shownValue(key, v string) string {
	leaf := key[strings.LastIndexAny(key, ".]")+1:]
	// A *_env key (model.api_key_env) names a variable, which is worth
	// seeing: a changed name may send another key.
	if !strings.HasSuffix(strings.ToLower(leaf), "_env") && proc.IsSecret(leaf, v) {
		return "(hidden)"
	}
	v = strings.Join(strings.Fields(v), " ")
	if len(v) > maxValue {
		cut := maxValue
		for cut > 0 && !isRuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "..."
	}
	return v
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// UntrustedError stops a command whose project config is not trusted: it
// says what changed and what to run.
type UntrustedError struct {
	Snapshot *Snapshot
	Changes  Changes
}

func (e *UntrustedError) Error() string {
	var b strings.Builder
	if e.Changes.New {
		b.WriteString("the project config is not trusted yet, so nothing in it runs:\n")
	} else {
		b.WriteString("the project config changed since it was trusted, so nothing in it runs:\n")
	}
	e.Changes.Write(&b, "  ")
	b.WriteString("review it and run `weave trust` (in a script: `weave trust --yes`)")
	return b.String()
}

// Check returns an *UntrustedError unless the snapshot's files are the
// ones recorded in st. A record that cannot be read is an error too.
func Check(st Store, s *Snapshot) error {
	if len(s.Files) == 0 {
		return nil
	}
	r, err := st.Load(s)
	if err != nil {
		return err
	}
	if c := Compare(r, s); !c.Trusted() {
		return &UntrustedError{Snapshot: s, Changes: c}
	}
	return nil
}
