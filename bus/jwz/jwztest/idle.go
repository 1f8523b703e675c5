package jwztest

import (
	"strconv"
	"strings"
)

// IdleFrame is a stack frame as idle's TUI holds it.
type IdleFrame struct {
	ID, Mode        string
	Iter, Max       int
	PromptFile      string
	IssueID, Filter string
	WorktreePath    string
	Branch, BaseRef string
}

// IdleState is a loop event as idle's TUI holds it.
type IdleState struct {
	Schema    int
	Event     string // STATE, DONE, ABORT or ANCHOR; anything else reads as STATE
	RunID     string
	UpdatedAt int64 // unix seconds; -1 when absent or unreadable
	Reason    string
	Stack     []IdleFrame
}

// IdleParse reads a loop event the way idle's TUI does: ok is false when
// the body is empty or has no numeric schema; every other field falls back
// to idle's default when its key is not found by text.
func IdleParse(body string) (IdleState, bool) {
	s := strings.Trim(body, " \t\n\r")
	if s == "" {
		return IdleState{}, false
	}
	schema, ok := number(s, `"schema"`)
	if !ok {
		return IdleState{}, false
	}
	st := IdleState{Schema: schema, Event: "STATE", UpdatedAt: -1}
	if ev, ok := str(s, `"event"`); ok {
		switch ev {
		case "STATE", "DONE", "ABORT", "ANCHOR":
			st.Event = ev
		}
	}
	st.RunID, _ = str(s, `"run_id"`)
	if ts, ok := str(s, `"updated_at"`); ok {
		st.UpdatedAt = iso8601(ts)
	}
	if r, ok := str(s, `"reason"`); ok {
		switch r {
		case "COMPLETE", "MAX_ITERATIONS", "STUCK", "NO_MORE_ISSUES", "MAX_ISSUES":
			st.Reason = r
		}
	}
	st.Stack = stack(s)
	return st, true
}

// stack finds "stack", then its '[', and reads each {...} object up to the
// closing ']', matching braces outside strings.
func stack(s string) []IdleFrame {
	k := strings.Index(s, `"stack"`)
	if k < 0 {
		return nil
	}
	b := strings.Index(s[k:], "[")
	if b < 0 {
		return nil
	}
	var out []IdleFrame
	pos := k + b + 1
	for pos < len(s) {
		for pos < len(s) && s[pos] != '{' && s[pos] != ']' {
			pos++
		}
		if pos >= len(s) || s[pos] == ']' {
			break
		}
		start, depth, inStr, esc := pos, 0, false, false
		for pos < len(s) {
			c := s[pos]
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = !inStr
			case !inStr && c == '{':
				depth++
			case !inStr && c == '}':
				depth--
			}
			pos++
			if !inStr && !esc && c == '}' && depth == 0 {
				break
			}
		}
		obj := s[start:pos]
		f := IdleFrame{Mode: "loop", Max: 10}
		f.ID, _ = str(obj, `"id"`)
		if m, ok := str(obj, `"mode"`); ok && (m == "loop" || m == "grind" || m == "issue") {
			f.Mode = m
		}
		if n, ok := number(obj, `"iter"`); ok {
			f.Iter = n
		}
		if n, ok := number(obj, `"max"`); ok {
			f.Max = n
		}
		f.PromptFile, _ = str(obj, `"prompt_file"`)
		f.IssueID, _ = str(obj, `"issue_id"`)
		f.WorktreePath, _ = str(obj, `"worktree_path"`)
		f.Branch, _ = str(obj, `"branch"`)
		f.BaseRef, _ = str(obj, `"base_ref"`)
		f.Filter, _ = str(obj, `"filter"`)
		out = append(out, f)
	}
	return out
}

// after returns what follows the first ':' after the first occurrence of
// key, without leading blanks.
func after(s, key string) (string, bool) {
	k := strings.Index(s, key)
	if k < 0 {
		return "", false
	}
	rest := s[k+len(key):]
	c := strings.Index(rest, ":")
	if c < 0 {
		return "", false
	}
	rest = strings.TrimLeft(rest[c+1:], " \t\n")
	return rest, rest != ""
}

// str is idle's string lookup: null or a non-string is absent; the value
// is the raw text up to the next unescaped quote (escapes are kept).
func str(s, key string) (string, bool) {
	rest, ok := after(s, key)
	if !ok || strings.HasPrefix(rest, "null") || rest[0] != '"' {
		return "", false
	}
	rest = rest[1:]
	esc := false
	for i := 0; i < len(rest); i++ {
		switch {
		case esc:
			esc = false
		case rest[i] == '\\':
			esc = true
		case rest[i] == '"':
			return rest[:i], true
		}
	}
	return rest, true
}

// number is idle's number lookup: the digits that follow, as a u32.
func number(s, key string) (int, bool) {
	rest, ok := after(s, key)
	if !ok {
		return 0, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.ParseUint(rest[:end], 10, 32)
	if end == 0 || err != nil {
		return 0, false
	}
	return int(n), true
}

// iso8601 reads the first 19 characters, YYYY-MM-DDTHH:MM:SS, as UTC.
func iso8601(ts string) int64 {
	if len(ts) < 19 {
		return -1
	}
	field := func(a, b int) (int, bool) {
		n, err := strconv.Atoi(ts[a:b])
		return n, err == nil
	}
	y, ok1 := field(0, 4)
	mo, ok2 := field(5, 7)
	d, ok3 := field(8, 10)
	h, ok4 := field(11, 13)
	mi, ok5 := field(14, 16)
	sec, ok6 := field(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > 31 {
		return -1
	}
	days := int64(0)
	leap := func(y int) bool { return y%400 == 0 || (y%100 != 0 && y%4 == 0) }
	for yy := 1970; yy < y; yy++ {
		days += 365
		if leap(yy) {
			days++
		}
	}
	month := []int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m < mo; m++ {
		days += int64(month[m-1])
		if m == 2 && leap(y) {
			days++
		}
	}
	days += int64(d - 1)
	return days*86400 + int64(h*3600+mi*60+sec)
}
