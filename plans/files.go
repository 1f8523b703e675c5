package plans

import "strings"

// newMarkers are the annotations that mark a Files entry as created by the
// task, matched case-insensitively anywhere after the path.
var newMarkers = []string{"(new)", "(new file)", "(create)", "(created)", "(creates)", "[new]"}

// newPrefixes and otherPrefixes are verbs that may start an entry, as in
// "Create: cmd/x.go" or "Modify: go.mod".
var (
	newPrefixes   = []string{"create", "new", "add"}
	otherPrefixes = []string{"modify", "edit", "update", "change", "delete", "remove", "read", "test"}
)

// parseFileRefs splits a Files field into entries: one per line and per
// comma. An entry's path is its first `backticked` span, else its first
// word; ":12", ":12-40" and "#L12" suffixes are dropped. "N/A", "none" and
// "-" are no entries.
func parseFileRefs(s string) []FileRef {
	var refs []FileRef
	for _, line := range strings.Split(s, "\n") {
		for _, e := range splitOutsideBackticks(line) {
			if r, ok := parseFileRef(e); ok {
				refs = append(refs, r)
			}
		}
	}
	return refs
}

func splitOutsideBackticks(s string) []string {
	var parts []string
	in := false
	last := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '`':
			in = !in
		case ',', ';':
			if !in {
				parts = append(parts, s[last:i])
				last = i + 1
			}
		}
	}
	return append(parts, s[last:])
}

func parseFileRef(e string) (FileRef, bool) {
	e = strings.TrimSpace(e)
	// A list bullet or number before the entry.
	if len(e) > 1 && (e[0] == '-' || e[0] == '*' || e[0] == '+') && (e[1] == ' ' || e[1] == '\t') {
		e = strings.TrimSpace(e[2:])
	}
	var r FileRef
	lower := strings.ToLower(e)
	for _, m := range newMarkers {
		if strings.Contains(lower, m) {
			r.New = true
		}
	}
	if i := strings.IndexByte(e, ':'); i > 0 {
		verb := strings.ToLower(strings.Trim(e[:i], "*_ \t"))
		switch {
		case contains(newPrefixes, verb):
			r.New = true
			e = strings.TrimSpace(e[i+1:])
		case contains(otherPrefixes, verb):
			e = strings.TrimSpace(e[i+1:])
		}
	}
	if i := strings.IndexByte(e, '`'); i >= 0 {
		if j := strings.IndexByte(e[i+1:], '`'); j > 0 {
			r.Path = e[i+1 : i+1+j]
		}
	}
	if r.Path == "" {
		f := strings.Fields(e)
		if len(f) == 0 {
			return FileRef{}, false
		}
		r.Path = strings.Trim(f[0], "`*_\"'")
	}
	r.Path = strings.TrimRight(trimLineRef(strings.TrimSpace(r.Path)), ".,;:")
	switch strings.ToLower(r.Path) {
	case "", "n/a", "na", "none", "-", "—", "(none)":
		return FileRef{}, false
	}
	return r, true
}

// trimLineRef drops a line reference from a path: "a.go:12", "a.go:12-40",
// "a.go:3,9" or "a.go#L12-L20".
func trimLineRef(p string) string {
	if i := strings.LastIndex(p, "#L"); i > 0 && strings.Trim(p[i+2:], "0123456789-L") == "" {
		return p[:i]
	}
	if i := strings.IndexByte(p, ':'); i > 0 && i+1 < len(p) && strings.Trim(p[i+1:], "0123456789-,") == "" {
		return p[:i]
	}
	return p
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
