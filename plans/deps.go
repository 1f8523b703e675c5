package plans

import (
	"slices"
	"strconv"
	"strings"
)

// maxRange bounds a range entry ("2-40") so that a typo such as "1-999999"
// cannot make a task wait for a million numbers.
const maxRange = 1000

// dependencyNumbers reads the task numbers of a **Depends** field and of
// [after: ...] tags, ascending and without repeats; entries that are not
// task numbers are left out (Validate reports them).
func dependencyNumbers(field, tag string) []int {
	if field == "" && tag == "" {
		return nil
	}
	a, _ := parseDepends(field)
	b, _ := parseDepends(tag)
	out := append(a, b...)
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// parseDepends reads a list of task numbers as people and models write it:
// "1, 3", "#1 and #3", "tasks 2-4", "1 (the schema)", "none" or "-". It
// returns the numbers in the order written and the entries it could not
// read.
func parseDepends(s string) (nums []int, bad []string) {
	s = strings.TrimSpace(s)
	for _, piece := range splitOutsideParens(s) {
		piece = strings.TrimSpace(piece)
		entry := piece
		// "1 (the schema)": the words in parentheses name the task.
		if i := strings.IndexByte(entry, '('); i > 0 && strings.HasSuffix(entry, ")") {
			entry = entry[:i]
		}
		entry = strings.Trim(entry, " \t`*.")
		switch strings.ToLower(entry) {
		case "", "none", "-", "n/a", "nothing":
			continue
		}
		var got []int
		ok := true
		for _, w := range strings.Fields(entry) {
			switch strings.ToLower(w) {
			case "task", "tasks", "and", "&":
				continue
			}
			ns, good := depNumbers(strings.TrimPrefix(w, "#"))
			if !good {
				ok = false
				break
			}
			got = append(got, ns...)
		}
		if !ok || len(got) == 0 {
			bad = append(bad, piece)
			continue
		}
		nums = append(nums, got...)
	}
	return nums, bad
}

// splitOutsideParens splits s at commas, semicolons and newlines that are
// not inside parentheses, so that "2 (schema, tables)" is one entry.
func splitOutsideParens(s string) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth = max(0, depth-1)
		case ',', ';', '\n':
			if depth == 0 {
				out = append(out, s[last:i])
				last = i + 1
			}
		}
	}
	return append(out, s[last:])
}

// depNumbers reads "3" or a range "2-4" (also "2–4" and "2..4").
func depNumbers(w string) ([]int, bool) {
	for _, sep := range []string{"..", "-", "–"} {
		lo, hi, found := strings.Cut(w, sep)
		if !found {
			continue
		}
		a, ok1 := taskNumber(strings.TrimPrefix(lo, "#"))
		b, ok2 := taskNumber(strings.TrimPrefix(hi, "#"))
		if !ok1 || !ok2 || b < a || b-a >= maxRange {
			return nil, false
		}
		ns := make([]int, 0, b-a+1)
		for n := a; n <= b; n++ {
			ns = append(ns, n)
		}
		return ns, true
	}
	n, ok := taskNumber(w)
	if !ok {
		return nil, false
	}
	return []int{n}, true
}

// taskNumber reads a task number as splitNumber does: 1 to 9 digits, above 0.
func taskNumber(w string) (int, bool) {
	if w == "" || len(w) > 9 || strings.Trim(w, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(w)
	return n, err == nil && n > 0
}

// HasDeps reports whether any task of the plan declares After.
func (p *Plan) HasDeps() bool {
	for i := range p.Tasks {
		if len(p.Tasks[i].After) > 0 {
			return true
		}
	}
	return false
}

// numbered maps each task number to the tasks that carry it (more than one
// only in a plan Validate rejects).
func (p *Plan) numbered() map[int][]int {
	m := make(map[int][]int, len(p.Tasks))
	for i, t := range p.Tasks {
		if t.Number > 0 {
			m[t.Number] = append(m[t.Number], i)
		}
	}
	return m
}
