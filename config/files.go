package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	yaml "go.yaml.in/yaml/v3"

	"github.com/weavehq/weave/internal/safefile"
)

// findFile returns the config file in dir, "" when there is none, and an
// error when more than one format is present, since silently preferring
// one would hide edits made to the other.
func findFile(dir string) (string, error) {
	var found []string
	for _, name := range configNames {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("look for config in %s: %w", dir, err)
		case fi.IsDir():
			return "", fmt.Errorf("config %s is a directory; remove it or replace it with a file", p)
		case !fi.Mode().IsRegular():
			return "", fmt.Errorf("config %s is %s, not a regular file; replace it with a plain file", p, safefile.Kind(fi.Mode()))
		}
		found = append(found, p)
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("config files %s both exist; keep one of them", strings.Join(found, " and "))
}

// maxConfigSize bounds what is read of a config file; a real one is a few
// KiB.
const maxConfigSize = 1 << 20

// readFile decodes a config file by its extension into plain maps, keeping
// the case of every key (plugin env names, hook event names). A file past
// maxConfigSize, or one that is not a regular file, is refused unread.
func readFile(path string) (map[string]any, error) {
	data, err := safefile.ReadFile(path, maxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("read config: %w; fix or remove the file", err)
	}
	var raw any
	switch filepath.Ext(path) {
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if len(bytes.TrimSpace(data)) > 0 {
			err = dec.Decode(&raw)
			if err == nil {
				if _, extra := dec.Token(); extra != io.EOF {
					err = errors.New("unexpected data after the top-level object")
				}
			}
		}
	case ".toml":
		var m map[string]any
		err = toml.Unmarshal(data, &m)
		raw = m
	default:
		err = yaml.Unmarshal(data, &raw)
	}
	if err != nil {
		return nil, fmt.Errorf("parse config %s: %w; fix the syntax (or move the file aside)", path, err)
	}
	raw = normalize(raw)
	switch m := raw.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	}
	return nil, fmt.Errorf("parse config %s: the top level must be a mapping of keys like \"log:\", got %s", path, describe(raw))
}

// normalize turns YAML's map[any]any into map[string]any, recursively.
func normalize(v any) any {
	switch t := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case map[string]any:
		for k, e := range t {
			t[k] = normalize(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normalize(e)
		}
		return t
	}
	return v
}
