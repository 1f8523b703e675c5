package tools

import (
	"github.com/weavehq/weave/internal/realpath"
	"github.com/weavehq/weave/plugins"

	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// argError is a bad argument; Call reports it to the agent.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func badArg(format string, a ...any) error { return &argError{fmt.Sprintf(format, a...)} }

func stringArg(args map[string]any, name string, required bool) (string, error) {
	v, present := args[name]
	if !present || v == nil {
		if required {
			return "", badArg("missing argument %q", name)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", badArg("argument %q must be a string, got %s", name, jsonType(v))
	}
	if required && s == "" {
		return "", badArg("argument %q is empty", name)
	}
	return s, nil
}

// intArg reads a whole number (JSON numbers arrive as float64).
func intArg(args map[string]any, name string) (int, bool, error) {
	v, present := args[name]
	if !present || v == nil {
		return 0, false, nil
	}
	switch n := v.(type) {
	case int:
		return n, true, nil
	case int64:
		return int(n), true, nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			return 0, false, badArg("argument %q must be a whole number, got %v", name, n)
		}
		return int(n), true, nil
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return 0, false, badArg("argument %q must be a whole number, got %v", name, n)
		}
		return int(i), true, nil
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			return 0, false, badArg("argument %q must be a whole number, got %q", name, n)
		}
		return i, true, nil
	}
	return 0, false, badArg("argument %q must be a number, got %s", name, jsonType(v))
}

func boolArg(args map[string]any, name string) (bool, error) {
	v, present := args[name]
	if !present || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, badArg("argument %q must be true or false, got %s", name, jsonType(v))
	}
	return b, nil
}

// durationArg reads seconds (a number) or a Go duration string ("30s").
func durationArg(args map[string]any, name string) (time.Duration, bool, error) {
	v, present := args[name]
	if !present || v == nil {
		return 0, false, nil
	}
	var d time.Duration
	switch x := v.(type) {
	case float64:
		d = time.Duration(x * float64(time.Second))
	case int:
		d = time.Duration(x) * time.Second
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, false, badArg("argument %q must be seconds or a duration like \"30s\", got %q", name, x)
		}
	default:
		return 0, false, badArg("argument %q must be seconds or a duration like \"30s\", got %s", name, jsonType(v))
	}
	if d <= 0 {
		return 0, false, badArg("argument %q must be positive, got %v", name, v)
	}
	return d, true, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// resolve turns a path argument into the real path it reaches, refusing
// anything outside the project. It returns the real path and the path
// relative to the project root (with forward slashes) for messages.
func (t *Tools) resolve(p string) (real, rel string, err error) {
	if strings.ContainsRune(p, 0) {
		return "", "", badArg("the path contains a NUL byte")
	}
	real, err = realpath.Resolve(t.root, filepath.FromSlash(p))
	if err != nil {
		return "", "", badArg("cannot resolve %s: %v", p, err)
	}
	if !realpath.Within(t.root, real) {
		// A symlink inside the project may point out of it; say both.
		return "", "", badArg("%s is outside the project (it resolves to %s); tools only reach files inside %s", p, real, t.root)
	}
	return real, projectRel(t.root, real), nil
}

// pathOf reads and resolves the path argument (required).
func (t *Tools) pathOf(args map[string]any) (real, rel string, err error) {
	p, ok := plugins.ToolPath(args)
	if !ok {
		if _, err := stringArg(args, argPath, true); err != nil {
			return "", "", err
		}
	}
	return t.resolve(p)
}
