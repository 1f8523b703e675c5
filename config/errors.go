package config

import (
	"fmt"
	"slices"
	"strings"
)

// FieldError is one problem with one key, with where the bad value came
// from. Load joins them (errors.Join) so a user sees every problem at once;
// use errors.As to get at them.
type FieldError struct {
	Layer   Layer
	Origin  string // the file, the WEAVE_* variable, or the flag's key
	Key     string // dotted path, e.g. log.level or hooks.PreToolUse[0].hooks[1].command
	Problem string // what is wrong and what is allowed
}

func (e *FieldError) Error() string {
	where := e.Origin
	switch e.Layer {
	case LayerEnv:
		where = "env " + e.Origin
	case LayerFlag:
		where = "flag " + e.Origin
	case LayerDefault:
		where = "default"
	}
	if e.Key == "" {
		return where + ": " + e.Problem
	}
	return where + ": " + e.Key + ": " + e.Problem
}

// errorList collects FieldErrors for one layer.
type errorList struct {
	layer  Layer
	origin string
	errs   []error
}

func (l *errorList) add(key, format string, args ...any) {
	l.errs = append(l.errs, &FieldError{Layer: l.layer, Origin: l.origin, Key: key, Problem: fmt.Sprintf(format, args...)})
}

// unknown reports a key that is not in the schema, suggesting the closest
// known name.
func (l *errorList) unknown(prefix, name string, known []string) {
	msg := "unknown key"
	if s := suggest(name, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", join(prefix, s))
	} else if full := suffixMatch(name); full != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", full)
	} else if len(known) > 0 {
		msg += "; known here: " + strings.Join(known, ", ")
	}
	l.add(join(prefix, name), "%s", msg)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func oneOf(got string, allowed []string) string {
	return fmt.Sprintf("%q is not one of %s", got, strings.Join(allowed, ", "))
}

// suggest returns the known name closest to name, if it is close enough to
// be a likely typo.
func suggest(name string, known []string) string {
	best, bestDist := "", -1
	lname := strings.ToLower(name)
	for _, k := range known {
		d := levenshtein(lname, strings.ToLower(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist < 0 {
		return ""
	}
	limit := max(2, len(name)/3)
	if bestDist <= limit {
		return best
	}
	return ""
}

// suffixMatch finds a key written at the wrong level: "level" at the top
// is probably "log.level".
func suffixMatch(name string) string {
	for _, k := range keyTable() {
		if k.Name == name || strings.HasSuffix(k.Name, "."+name) {
			return k.Name
		}
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// UnknownEnv returns a warning for each WEAVE_* variable in environ that
// sets no config key and is not one of also (variables read elsewhere),
// with the closest known name when it looks like a typo.
func UnknownEnv(environ []string, also ...string) []string {
	known := append([]string(nil), also...)
	for _, k := range Keys() {
		if k.Env != "" {
			known = append(known, k.Env)
		}
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "WEAVE_") || slices.Contains(known, name) {
			continue
		}
		msg := fmt.Sprintf("unknown environment variable %s", name)
		// Compared without the prefix every name shares.
		rest := make([]string, len(known))
		for i, k := range known {
			rest[i] = strings.TrimPrefix(k, "WEAVE_")
		}
		if s := suggest(strings.TrimPrefix(name, "WEAVE_"), rest); s != "" {
			msg += fmt.Sprintf(" (did you mean WEAVE_%s?)", s)
		} else {
			msg += "; it sets nothing (see `weave config show --sources` for the WEAVE_* names)"
		}
		out = append(out, msg)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
