package permrule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Set is one source's permissions block, in Claude Code's keys.
type Set struct {
	// Origin names the source for messages: "config", ".claude/settings.json".
	Origin                       string
	Allow, Ask, Deny             []string
	DefaultMode                  string
	AdditionalDirectories        []string
	DisableBypassPermissionsMode string
}

// ClaudeFiles are the Claude Code settings files of a project Weave reads
// permissions from, the one that wins a defaultMode first.
var ClaudeFiles = []string{".claude/settings.local.json", ".claude/settings.json"}

// maxSettings bounds a settings file read.
const maxSettings = 4 << 20

// ReadClaude reads the permissions blocks of the project's Claude Code
// settings files that exist, in ClaudeFiles' order. Keys of the block
// Weave does not know are reported as notes, never as errors: Claude
// Code's files grow keys.
func ReadClaude(project string) (sets []Set, notes []string, err error) {
	for _, name := range ClaudeFiles {
		p := filepath.Join(project, filepath.FromSlash(name))
		b, err := readBounded(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		var whole struct {
			Permissions map[string]json.RawMessage `json:"permissions"`
		}
		if err := json.Unmarshal(b, &whole); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w (want Claude Code's settings JSON)", name, err)
		}
		s := Set{Origin: name}
		for _, k := range slices.Sorted(maps.Keys(whole.Permissions)) {
			raw := whole.Permissions[k]
			var dst any
			switch k {
			case "allow":
				dst = &s.Allow
			case "ask":
				dst = &s.Ask
			case "deny":
				dst = &s.Deny
			case "additionalDirectories":
				dst = &s.AdditionalDirectories
			case "defaultMode":
				dst = &s.DefaultMode
			case "disableBypassPermissionsMode":
				dst = &s.DisableBypassPermissionsMode
			default:
				notes = append(notes, fmt.Sprintf("%s: permissions.%s is not used by Weave; ignored", name, k))
				continue
			}
			if err := json.Unmarshal(raw, dst); err != nil {
				return nil, nil, fmt.Errorf("read %s: permissions.%s: %w", name, k, err)
			}
		}
		sets = append(sets, s)
	}
	return sets, notes, nil
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSettings+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSettings {
		return nil, fmt.Errorf("larger than %d bytes", maxSettings)
	}
	return b, nil
}

// Compile builds the policy of sets: the lists of every set add up (a
// deny anywhere holds), and defaultMode is the first set's that has one
// (list the winning source first). A rule that cannot be parsed is an
// error naming its source; one naming a Claude Code tool Weave does not
// have is a note. additionalDirectories is accepted and noted: Weave's
// tools stay in the project.
func Compile(sets []Set, root, home string) (*Policy, []string, error) {
	var allow, ask, deny []Rule
	var notes []string
	var errs []error
	mode := ModeUnset
	for _, s := range sets {
		for _, l := range []struct {
			kind  Kind
			texts []string
			dst   *[]Rule
		}{{Deny, s.Deny, &deny}, {Ask, s.Ask, &ask}, {Allow, s.Allow, &allow}} {
			for i, t := range l.texts {
				r, err := Parse(t)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: permissions.%s[%d]: %w", s.Origin, l.kind, i, err))
					continue
				}
				if r.Foreign != "" {
					notes = append(notes, fmt.Sprintf("%s: permissions.%s[%d] %s: Weave has no %s tool; the rule matches nothing", s.Origin, l.kind, i, r.Text, r.Foreign))
				}
				*l.dst = append(*l.dst, r)
			}
		}
		if s.DefaultMode != "" {
			if !slices.Contains(Modes(), s.DefaultMode) {
				errs = append(errs, fmt.Errorf("%s: permissions.defaultMode %q: want one of %s", s.Origin, s.DefaultMode, strings.Join(Modes(), ", ")))
			} else if mode == ModeUnset {
				mode = Mode(s.DefaultMode)
			}
		}
		if len(s.AdditionalDirectories) > 0 {
			notes = append(notes, fmt.Sprintf("%s: permissions.additionalDirectories is accepted but not used: Weave's tools stay in the project", s.Origin))
		}
	}
	if len(errs) > 0 {
		return nil, notes, errors.Join(errs...)
	}
	return NewPolicy(allow, ask, deny, mode, root, home), notes, nil
}
