// Package layout names where weave keeps things: a project's .weave/
// directory (plans, logs, plugins, state, lock, config, run records) and the
// user's config and data directories. Every path weave reads or writes is
// spelled here once.
//
// The user directories follow the XDG Base Directory rule, for config, data
// and state alike: $XDG_CONFIG_HOME/weave, $XDG_DATA_HOME/weave and
// $XDG_STATE_HOME/weave when those are absolute paths (a relative value is
// ignored, as the spec says), else ~/.config/weave, ~/.local/share/weave and
// ~/.local/state/weave. Plugin binaries a user installs
// live under the data directory, as gh keeps its extensions; the older
// config-directory location is still read.
package layout

import (
	"os"
	"path/filepath"
	"strings"
)

// DirName is the project directory that holds weave's files.
const DirName = ".weave"

// Project is a project's layout, rooted at the directory holding .weave/.
type Project struct {
	// Root is the project directory.
	Root string
}

// NewProject returns the layout of the project at root.
func NewProject(root string) Project { return Project{Root: root} }

// Dir is .weave/.
func (p Project) Dir() string { return filepath.Join(p.Root, DirName) }

// Plans is .weave/plans/, the user's plan files.
func (p Project) Plans() string { return filepath.Join(p.Dir(), "plans") }

// Plan is the file of the plan named name.
func (p Project) Plan(name string) string { return filepath.Join(p.Plans(), name+".md") }

// PlanShown is how messages and prompts name the plan called name: its
// path from the project root, slash-separated whatever the system
// (".weave/plans/auth.md").
func PlanShown(name string) string { return DirName + "/plans/" + name + ".md" }

// Cache is .weave/cache/: machine-local caches, rebuilt when missing, safe
// to delete at any time.
func (p Project) Cache() string { return filepath.Join(p.Dir(), "cache") }

// Logs is .weave/logs/.
func (p Project) Logs() string { return filepath.Join(p.Dir(), "logs") }

// HostLog is .weave/logs/weave.log, the host's log.
func (p Project) HostLog() string { return filepath.Join(p.Logs(), "weave.log") }

// PlanLogs is .weave/logs/<plan>/, the task logs of one plan.
func (p Project) PlanLogs(plan string) string { return filepath.Join(p.Logs(), plan) }

// Plugins is .weave/plugins/, the project's plugin binaries.
func (p Project) Plugins() string { return filepath.Join(p.Dir(), "plugins") }

// State is .weave/state.json, the work state.
func (p Project) State() string { return filepath.Join(p.Dir(), StateFile) }

// StateFile is the work state's file name.
const StateFile = "state.json"

// Config is .weave/config.yaml, the project's config file.
func (p Project) Config() string { return filepath.Join(p.Dir(), "config.yaml") }

// TrustedFiles are the project's config files that run code or widen a
// role, relative to the root and slash-separated: every format of
// .weave/config.*, Claude Code's project settings and the project's MCP
// servers. They act only once trusted (package trust).
func TrustedFiles() []string {
	return []string{
		DirName + "/config.yaml", DirName + "/config.yml", DirName + "/config.json", DirName + "/config.toml",
		".mcp.json", ".claude/settings.json", ".claude/settings.local.json",
	}
}

// Ignore is .weave/.gitignore.
func (p Project) Ignore() string { return filepath.Join(p.Dir(), ".gitignore") }

// Lock is .weave/weave.lock, held by the process that drives the project.
func (p Project) Lock() string { return filepath.Join(p.Dir(), LockFile) }

// LockFile is the project lock's file name.
const LockFile = "weave.lock"

// Run is .weave/run/, where a running host records the process groups it
// started, for the next start to end if the host dies.
func (p Project) Run() string { return filepath.Join(p.Dir(), "run") }

// Sessions is .weave/sessions/, one transcript per session.
func (p Project) Sessions() string { return filepath.Join(p.Dir(), "sessions") }

// Transcript is the transcript of session id: .weave/sessions/<id>.jsonl.
func (p Project) Transcript(id string) string { return filepath.Join(p.Sessions(), id+".jsonl") }

// Rel shows path relative to the project root when it is inside it.
func (p Project) Rel(path string) string {
	rel, err := filepath.Rel(p.Root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// HomeSocket is the v1 envelope face's default socket under home:
// ~/.weave/coord.sock, where the weave protocol's clients look for it.
func HomeSocket(home string) string { return filepath.Join(home, DirName, "coord.sock") }

// User is the user's layout. An empty field means the directory is unknown
// (no HOME and no XDG variable).
type User struct {
	// Config is $XDG_CONFIG_HOME/weave or ~/.config/weave.
	Config string
	// Data is $XDG_DATA_HOME/weave or ~/.local/share/weave.
	Data string
	// State is $XDG_STATE_HOME/weave or ~/.local/state/weave: what weave
	// keeps for the user alone, outside every project.
	State string
}

// Trust is the directory of the user's trust records, one per project:
// State/trust/.
func (u User) Trust() string {
	if u.State == "" {
		return ""
	}
	return filepath.Join(u.State, "trust")
}

// UserFrom resolves the user's layout from an environment in os.Environ()
// form; nil means the process's own (with os.UserHomeDir for HOME).
func UserFrom(environ []string) User {
	lookup := os.Getenv
	if environ != nil {
		env := make(map[string]string, len(environ))
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		lookup = func(k string) string { return env[k] }
	}
	home := lookup("HOME")
	if home == "" && environ == nil {
		home, _ = os.UserHomeDir()
	}
	return User{
		Config: xdgDir(lookup("XDG_CONFIG_HOME"), home, ".config"),
		Data:   xdgDir(lookup("XDG_DATA_HOME"), home, filepath.Join(".local", "share")),
		State:  xdgDir(lookup("XDG_STATE_HOME"), home, filepath.Join(".local", "state")),
	}
}

// xdgDir is the one XDG rule: an absolute $XDG_* wins; a relative one is
// ignored, as the spec says; else the default under HOME.
func xdgDir(xdg, home, fallback string) string {
	if filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "weave")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, fallback, "weave")
}

// Plugins are the user's plugin directories, most preferred first: the data
// directory's plugins/, then the config directory's plugins/, read for
// plugins installed before weave followed XDG_DATA_HOME. Unknown
// directories are left out.
func (u User) Plugins() []string {
	var out []string
	for _, d := range []string{u.Data, u.Config} {
		if d != "" {
			out = append(out, filepath.Join(d, "plugins"))
		}
	}
	return out
}
