package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	yaml "go.yaml.in/yaml/v3"

	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/safefile"
)

// Env is the environment variable that, set to 1 in the environment of
// weave itself (a person's shell, a CI job), trusts the project config as
// --trust does. internal/proc withholds it from every child, so a model's
// bash call cannot pass it on to a weave it starts.
const Env = proc.TrustEnv

// maxFileSize bounds what is read of one file; config.Load refuses larger
// ones too.
const maxFileSize = 1 << 20

// File is one trusted-config file as it is on disk now.
type File struct {
	// Rel is the path from the project root, slash-separated.
	Rel string
	// Digest is the hex sha256 of the file's bytes.
	Digest string
	// Script marks a hook script a command hook of a config file names:
	// trusted by its bytes, shown without keys.
	Script bool
	// values are the file's flattened key paths with their values as
	// shown to a person; "" when the file does not parse.
	values map[string]string
}

// Snapshot is the trusted-config files of a project as they are on disk.
type Snapshot struct {
	// Project is the project's real absolute path.
	Project string
	// Files are the files that exist, in layout.TrustedFiles order.
	Files []File
}

// Take reads the project's trusted-config files. A file that exists but
// cannot be read is an error: it would otherwise be left out of the
// digest and act unseen.
func Take(project string) (*Snapshot, error) {
	abs, err := filepath.Abs(project)
	if err != nil {
		return nil, fmt.Errorf("trust: resolve project %s: %w", project, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	s := &Snapshot{Project: abs}
	for _, rel := range layout.TrustedFiles() {
		p := filepath.Join(abs, filepath.FromSlash(rel))
		data, err := safefile.ReadFile(p, maxFileSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s to check it is trusted: %w", rel, err)
		}
		sum := sha256.Sum256(data)
		s.Files = append(s.Files, File{Rel: rel, Digest: hex.EncodeToString(sum[:]), values: flatten(rel, data)})
	}
	scripts, err := hookScripts(abs, s.Files)
	if err != nil {
		return nil, err
	}
	s.Files = append(s.Files, scripts...)
	return s, nil
}

// hookCommand matches the key of a command hook's command, in Weave's
// config and in Claude Code's settings alike.
var hookCommand = regexp.MustCompile(`^hooks\.[^.]+\[\d+\]\.hooks\[\d+\]\.command$`)

// hookScripts reads the files inside the project that the command hooks
// of files name (a word of a command with a slash, $CLAUDE_PROJECT_DIR
// and $WEAVE_PROJECT_DIR standing for the root): what such a hook runs is
// in the script, so the script is trusted by its bytes too.
func hookScripts(root string, files []File) ([]File, error) {
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Rel] = true
	}
	var rels []string
	for _, f := range files {
		for k, v := range f.values {
			if !hookCommand.MatchString(k) {
				continue
			}
			for _, w := range scriptWords(v) {
				for _, name := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${WEAVE_PROJECT_DIR}", "$WEAVE_PROJECT_DIR"} {
					w = strings.ReplaceAll(w, name, root)
				}
				if !strings.ContainsRune(w, '/') {
					continue
				}
				p := filepath.FromSlash(w)
				if !filepath.IsAbs(p) {
					p = filepath.Join(root, p)
				}
				if real, err := filepath.EvalSymlinks(p); err == nil {
					p = real
				}
				rel, err := filepath.Rel(root, p)
				if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					continue
				}
				rel = filepath.ToSlash(rel)
				if !seen[rel] {
					seen[rel] = true
					rels = append(rels, rel)
				}
			}
		}
	}
	slices.Sort(rels)
	var out []File
	for _, rel := range rels {
		data, err := safefile.ReadFile(filepath.Join(root, filepath.FromSlash(rel)), maxScriptSize)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefile.ErrNotRegular) {
			// A directory (cd .weave/hooks) or a missing file runs
			// nothing by itself; the command that names it is trusted.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the hook script %s to check it is trusted: %w", rel, err)
		}
		sum := sha256.Sum256(data)
		out = append(out, File{Rel: rel, Digest: hex.EncodeToString(sum[:]), Script: true})
	}
	return out, nil
}

// interpreters run the script named by their first argument that is not
// an option.
var interpreters = []string{"sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "node", "deno", "bun", "ruby", "perl", "php", "lua", "source", "."}

// scriptWords are the words of a hook's command that name what it runs:
// the command of each segment (split at ;, &, | and newlines, leading
// VAR=value assignments skipped) and, after an interpreter (sh, python3,
// ...), its first argument that is not an option. A file the command only
// writes or reads (> log.txt, cat notes.md) is not one: it changes as the
// hook runs and runs nothing.
func scriptWords(command string) []string {
	var out []string
	segments := strings.FieldsFunc(command, func(r rune) bool { return r == ';' || r == '&' || r == '|' || r == '\n' || r == '(' || r == ')' })
	for _, seg := range segments {
		words := strings.Fields(seg)
		i := 0
		for i < len(words) && strings.Contains(words[i], "=") && !strings.ContainsAny(words[i][:strings.Index(words[i], "=")], "/$\"'") {
			i++
		}
		for _, cmd := range []string{"exec", "env", "command", "nohup", "time"} {
			if i < len(words) && words[i] == cmd {
				i++
			}
		}
		if i >= len(words) {
			continue
		}
		first := strings.Trim(words[i], `"'`)
		out = append(out, first)
		if !slices.Contains(interpreters, path.Base(first)) {
			continue
		}
		for _, w := range words[i+1:] {
			w = strings.Trim(w, `"'`)
			if strings.HasPrefix(w, "-") {
				continue
			}
			if !strings.HasPrefix(w, ">") && !strings.HasPrefix(w, "<") {
				out = append(out, w)
			}
			break
		}
	}
	return out
}

// maxScriptSize bounds what is read of one hook script.
const maxScriptSize = 8 << 20

// Same reports whether two snapshots hold the same files with the same
// bytes.
func (s *Snapshot) Same(o *Snapshot) bool {
	return slices.EqualFunc(s.Files, o.Files, func(a, b File) bool { return a.Rel == b.Rel && a.Digest == b.Digest })
}

// Rels are the paths of the snapshot's files.
func (s *Snapshot) Rels() []string {
	out := make([]string, len(s.Files))
	for i, f := range s.Files {
		out[i] = f.Rel
	}
	return out
}

// unparsed is the one key of a file that does not parse: its change is
// shown as the file's.
const unparsed = ""

// flatten decodes a file by its name and returns its leaves by key path:
// maps by dotted names, lists of maps by index, a list of plain values
// whole ([read, write]), so that a tools row reads as one line.
func flatten(rel string, data []byte) map[string]string {
	var raw any
	var err error
	switch path.Ext(rel) {
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if len(bytes.TrimSpace(data)) > 0 {
			err = dec.Decode(&raw)
		}
	case ".toml":
		var m map[string]any
		err = toml.Unmarshal(data, &m)
		raw = m
	default:
		err = yaml.Unmarshal(data, &raw)
	}
	out := map[string]string{}
	if err != nil {
		out[unparsed] = "(the file does not parse)"
		return out
	}
	if raw != nil {
		// A file of comments alone holds no key.
		walk(out, "", raw)
	}
	return out
}

func walk(out map[string]string, key string, v any) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 && key != "" {
			out[key] = "{}"
		}
		for k, e := range t {
			walk(out, join(key, k), e)
		}
	case map[any]any:
		if len(t) == 0 && key != "" {
			out[key] = "{}"
		}
		for k, e := range t {
			walk(out, join(key, fmt.Sprint(k)), e)
		}
	case []any:
		if !slices.ContainsFunc(t, isComposite) {
			parts := make([]string, len(t))
			for i, e := range t {
				parts[i] = scalar(e)
			}
			out[key] = "[" + strings.Join(parts, ", ") + "]"
			return
		}
		for i, e := range t {
			walk(out, fmt.Sprintf("%s[%d]", key, i), e)
		}
	default:
		out[key] = scalar(t)
	}
}

func isComposite(v any) bool {
	switch v.(type) {
	case map[string]any, map[any]any, []any:
		return true
	}
	return false
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

func scalar(v any) string {
	if v == nil {
		return "null"
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// DigestEnv names, in a built-in plugin's environment, the Digest of the
// project config the host started with: the plugin, which reads the config
// again, refuses one that changed since (a model's bash call during the
// run), so that a plugin started late in a run acts on what was trusted.
const DigestEnv = "WEAVE_CONFIG_SHA256"

// Digest is one sha256 over the snapshot's files and their digests: equal
// digests mean Same snapshots.
func (s *Snapshot) Digest() string {
	h := sha256.New()
	for _, f := range s.Files {
		fmt.Fprintf(h, "%s\x00%s\n", f.Rel, f.Digest)
	}
	return hex.EncodeToString(h.Sum(nil))
}
