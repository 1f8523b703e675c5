package bustest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Script is an exchange recorded from a real client: the frames each
// connection sends and the frames it must receive, in order. Scripts live
// in testdata/ as text files:
//
//	# a comment
//	! option            a switch for the server under test
//	pub> {"frame":1}    connection pub sends this frame
//	pub< {"frame":2}    connection pub must receive a frame matching this
//
// In an expected frame the string "*" matches any value, and "$name"
// captures the value the first time and must equal it afterwards. In a
// frame to send, $name is replaced by the captured value's JSON.
type Script struct {
	Path    string
	Options []string
	Steps   []Step
}

// Step is one line of a Script.
type Step struct {
	Conn  string
	Send  bool
	Frame string
	Line  int
}

// ReadScript parses the script at path.
func ReadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, err
	}
	s := Script{Path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "!"):
			s.Options = append(s.Options, strings.TrimSpace(line[1:]))
			continue
		}
		i := strings.IndexAny(line, "<>")
		if i <= 0 || i+1 >= len(line) {
			return s, fmt.Errorf("%s:%d: want NAME> FRAME or NAME< FRAME", path, n)
		}
		s.Steps = append(s.Steps, Step{Conn: line[:i], Send: line[i] == '>', Frame: strings.TrimSpace(line[i+1:]), Line: n})
	}
	return s, sc.Err()
}

// Has reports whether the script sets option name.
func (s Script) Has(name string) bool { return slices.Contains(s.Options, name) }

// Conns lists the script's connections in order of first use.
func (s Script) Conns() []string {
	var out []string
	for _, st := range s.Steps {
		if !slices.Contains(out, st.Conn) {
			out = append(out, st.Conn)
		}
	}
	return out
}

// Captures holds the values captured by $name placeholders.
type Captures map[string]json.RawMessage

// Expand replaces each $name in frame by its captured JSON value.
func (c Captures) Expand(frame string) string {
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	// Longest first, so $id2 is not read as $id followed by 2.
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, k := range names {
		frame = strings.ReplaceAll(frame, `"$`+k+`"`, string(c[k]))
		frame = strings.ReplaceAll(frame, `$`+k, string(c[k]))
	}
	return frame
}

// Match checks got against the expected frame want, capturing $names.
func (c Captures) Match(want string, got []byte) error {
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return fmt.Errorf("expected frame is not JSON: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Errorf("frame %s is not JSON: %v", got, err)
	}
	if err := c.match("", w, g); err != nil {
		return fmt.Errorf("%v\n got: %s\nwant: %s", err, got, want)
	}
	return nil
}

func (c Captures) match(path string, w, g any) error {
	if s, ok := w.(string); ok {
		if s == "*" {
			return nil
		}
		if name, ok := strings.CutPrefix(s, "$"); ok && name != "" {
			raw, _ := json.Marshal(g)
			if prev, seen := c[name]; seen && !bytes.Equal(prev, raw) {
				return fmt.Errorf("at %s: %s, want $%s = %s", orRoot(path), raw, name, prev)
			}
			c[name] = raw
			return nil
		}
	}
	switch w := w.(type) {
	case map[string]any:
		g, ok := g.(map[string]any)
		if !ok {
			return fmt.Errorf("at %s: %v, want an object", orRoot(path), g)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Errorf("at %s: unexpected field %q", orRoot(path), k)
			}
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("at %s: missing field %q", orRoot(path), k)
			}
			if err := c.match(path+"."+k, wv, gv); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := g.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("at %s: %v, want %d elements", orRoot(path), g, len(w))
		}
		for i := range w {
			if err := c.match(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(w, g) {
		return fmt.Errorf("at %s: %v, want %v", orRoot(path), g, w)
	}
	return nil
}

func orRoot(p string) string {
	if p == "" {
		return "top level"
	}
	return p
}
