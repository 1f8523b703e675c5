package tools

import (
	"github.com/weavehq/weave/internal/realpath"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// Caller is who makes a tool call: the acting agent and how it came to act.
type Caller struct {
	// Agent is the role making the call (e.g. "thread").
	Agent string
	// Chain is the delegation chain from the top agent down to Agent, e.g.
	// [loom, thread] for Thread working for Loom. Empty means [Agent]: an
	// agent acting on its own.
	Chain []string
}

// Delegated returns the caller that agent becomes when c delegates to it.
func (c Caller) Delegated(agent string) Caller {
	return Caller{Agent: agent, Chain: append(c.Path(), strings.ToLower(agent))}
}

// Path is the normalised chain: lower-case, ending with Agent.
func (c Caller) Path() []string {
	if len(c.Chain) == 0 {
		return []string{strings.ToLower(c.Agent)}
	}
	out := make([]string, len(c.Chain))
	for i, a := range c.Chain {
		out[i] = strings.ToLower(a)
	}
	return out
}

// Role is the acting role, lower-case: the end of the chain.
func (c Caller) Role() string {
	ch := c.Path()
	return ch[len(ch)-1]
}

// String renders the chain as "loom > thread".
func (c Caller) String() string { return strings.Join(c.Path(), " > ") }

// DeniedError is the gate's refusal of one tool call. Its text is what the
// model reads, and names the rule that refused: "denied by the capability
// matrix (thread has no write)", "denied by delegation.max_depth (...)".
type DeniedError struct {
	Agent string
	Tool  string
	// Rule is what refused: RuleMatrix, RuleDepth, or "" for a call no rule
	// has to weigh (a tool or an agent that does not exist).
	Rule string
	// Reason is the cause within the rule, e.g. "thread has no write".
	Reason string
}

// The rules a DeniedError names.
const (
	// RuleMatrix is the capability matrix: the roles' rows, their write
	// scopes and whom they delegate to.
	RuleMatrix = "the capability matrix"
	// RuleDepth is the bound on delegation chains.
	RuleDepth = "delegation.max_depth"
)

func (e *DeniedError) Error() string {
	if e.Rule == "" {
		return "denied: " + e.Reason
	}
	return fmt.Sprintf("denied by %s (%s)", e.Rule, e.Reason)
}

// GateRow is one role's capability row as the gate enforces it.
type GateRow struct {
	// Role is the role as defined; Role.Tools is its default row.
	Role agents.Role
	// Tools is the effective row after config, in matrix column order.
	Tools []string
	// Narrowed lists the default row's tools that config took away.
	Narrowed []string
	// Widened lists tools config added beyond the default row
	// (agents.<name>.allow_widen: true).
	Widened []string
	// MCP names the MCP servers the role may use (config.MCPAll: every
	// one), from agents.<name>.mcp, else every server for a role whose row
	// has write or edit and none for a read-only role.
	MCP []string
	// MCPFromConfig says agents.<name>.mcp set MCP.
	MCPFromConfig bool
}

// Gate enforces the capability matrix on every tool call. The matrix is a
// ceiling through delegation: a delegated agent gets the intersection of
// the rows along its chain, so Thread working for Loom still cannot write.
// Delegation (the task tool) goes only to a role's Delegates, and chains
// are at most delegation.max_depth deep.
//
// Write scopes (Pattern: .md files under .weave/) are checked on the real
// path: "..", symlinks of the file and of every directory on the way
// (dangling ones included) and absolute paths are resolved first, and the
// directory must be the project's own .weave, not a link to elsewhere.
// The extension is compared exactly: ".MD" is not ".md".
//
// A Gate is immutable after NewGate and safe for concurrent use.
type Gate struct {
	rows map[string]GateRow
	// order is the roles' order: the built-in roles, then the categories'
	// Shuttles and the custom agents (see Roster).
	order    []string
	maxDepth int
	project  string
}

// GateOption configures a Gate.
type GateOption func(*Gate)

// GateProject sets the project directory that Check resolves paths against
// for write scopes. Without it, a scoped write through Check is denied;
// Tools always checks against its own project.
func GateProject(dir string) GateOption { return func(g *Gate) { g.project = dir } }

// NewGate builds the gate from the roles and cfg (nil means defaults).
// agents.<name>.tools narrows a row; a tool outside the row is an error
// unless allow_widen is set, in which case the widening is logged as a
// warning. logger may be nil.
func NewGate(cfg *config.Config, logger *slog.Logger, opts ...GateOption) (*Gate, error) {
	if cfg == nil {
		cfg = config.Default()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Gate{rows: make(map[string]GateRow), maxDepth: cfg.Delegation.MaxDepth}
	for _, o := range opts {
		o(g)
	}
	if g.maxDepth < 0 {
		return nil, fmt.Errorf("delegation.max_depth is %d; want 0 (no delegation) or more", g.maxDepth)
	}
	roster, err := Roster(cfg)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, name := range sortedKeys(cfg.Agents) {
		if _, ok := agents.RoleByName(name); !ok {
			errs = append(errs, fmt.Errorf("agents.%s: no such agent; the agents are %s", name, strings.Join(agents.RoleNames(), ", ")))
		}
	}
	for _, r := range roster {
		g.order = append(g.order, r.Name)
		row := GateRow{Role: r, Tools: slices.Clone(r.Tools)}
		if r.Category != "" {
			// A category's Shuttle never gets more than Shuttle's own row.
			row.Tools = slices.DeleteFunc(row.Tools, func(t string) bool { return !slices.Contains(shuttleRow(cfg), t) })
		}
		ac, ok := cfg.Agents[r.Name]
		if ok && len(ac.Tools) > 0 {
			for _, t := range ac.Tools {
				if !slices.Contains(agents.ToolNames(), t) {
					errs = append(errs, fmt.Errorf("agents.%s.tools: unknown tool %q; the tools are %s", r.Name, t, strings.Join(agents.ToolNames(), ", ")))
				} else if !r.Can(t) && !slices.Contains(row.Widened, t) {
					row.Widened = append(row.Widened, t)
				}
			}
			if len(row.Widened) > 0 && !ac.AllowWiden {
				errs = append(errs, fmt.Errorf("agents.%s.tools: %s outside %s's row (%s); config may only narrow a row: remove them, or set agents.%s.allow_widen: true to widen it on purpose",
					r.Name, strings.Join(row.Widened, ", ")+pluralIs(len(row.Widened)), r.Name, strings.Join(r.Tools, ", "), r.Name))
				continue
			}
			row.Tools = inColumnOrder(ac.Tools)
			for _, t := range r.Tools {
				if !slices.Contains(row.Tools, t) {
					row.Narrowed = append(row.Narrowed, t)
				}
			}
			row.Narrowed = inColumnOrder(row.Narrowed)
			row.Widened = inColumnOrder(row.Widened)
			if len(row.Widened) > 0 {
				logger.Warn("capability row widened by config", "agent", r.Name, "added", row.Widened, "row", row.Tools)
			}
			if len(row.Narrowed) > 0 {
				logger.Debug("capability row narrowed by config", "agent", r.Name, "removed", row.Narrowed)
			}
		}
		row.MCP, row.MCPFromConfig = mcpRow(row, mcpConfig(cfg, r, ac, ok))
		if row.MCPFromConfig && len(row.MCP) > 0 && readOnlyRow(row) {
			logger.Warn("MCP servers given to a read-only role by config", "agent", r.Name, "mcp", row.MCP)
		}
		g.rows[r.Name] = row
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("capability matrix: %w", errors.Join(errs...))
	}
	return g, nil
}

func pluralIs(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

func inColumnOrder(tools []string) []string {
	var out []string
	for _, t := range agents.ToolNames() {
		if slices.Contains(tools, t) {
			out = append(out, t)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Rows returns every role's effective row, in the roles' order.
func (g *Gate) Rows() []GateRow {
	out := make([]GateRow, 0, len(g.rows))
	for _, name := range g.order {
		out = append(out, g.rows[name])
	}
	return out
}

// Role returns the role called name (case-insensitive) with its effective
// row as Tools.
func (g *Gate) Role(name string) (agents.Role, bool) {
	row, ok := g.rows[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return agents.Role{}, false
	}
	r := row.Role
	r.Tools = slices.Clone(row.Tools)
	return r, true
}

// Names lists the roles in their order.
func (g *Gate) Names() []string { return slices.Clone(g.order) }

// MaxDepth is the deepest delegation chain allowed (delegation.max_depth).
func (g *Gate) MaxDepth() int { return g.maxDepth }

// Allowed returns the tools c may call: the intersection of the effective
// rows along its chain. Agents offer only these to their model. An invalid
// chain allows nothing.
func (g *Gate) Allowed(c Caller) []string {
	chain := c.Path()
	if _, p := g.chainProblem(chain); p != "" {
		return nil
	}
	var out []string
	for _, t := range agents.ToolNames() {
		if g.ceiling(chain, t) == "" {
			out = append(out, t)
		}
	}
	return out
}

// Check decides whether c may make call. A refusal is a *DeniedError; Check
// returns no other error. Write scopes are resolved against the project
// given with GateProject.
func (g *Gate) Check(ctx context.Context, c Caller, call plugins.ToolCall) error {
	return g.check(ctx, g.project, c, call.Tool, call.Args)
}

func (g *Gate) check(_ context.Context, project string, c Caller, tool string, args map[string]any) error {
	chain := c.Path()
	agent := chain[len(chain)-1]
	deny := func(rule, format string, a ...any) error {
		return &DeniedError{Agent: agent, Tool: tool, Rule: rule, Reason: fmt.Sprintf(format, a...)}
	}
	if c.Agent != "" && !strings.EqualFold(c.Agent, agent) {
		return deny("", "the caller %q does not match the end of its delegation chain (%s)", c.Agent, c)
	}
	if plugins.IsMCPTool(tool) {
		if rule, p := g.chainProblem(chain); p != "" {
			return deny(rule, "%s", p)
		}
		if p := g.mcpCeiling(chain, tool); p != "" {
			return deny(RuleMatrix, "%s", p)
		}
		return nil
	}
	if !plugins.IsTool(tool) {
		return deny("", "there is no tool %q; the tools are %s", tool, strings.Join(agents.ToolNames(), ", "))
	}
	if rule, p := g.chainProblem(chain); p != "" {
		return deny(rule, "%s", p)
	}
	if p := g.ceiling(chain, tool); p != "" {
		return deny(RuleMatrix, "%s", p)
	}
	if tool == plugins.ToolTask {
		if rule, p := g.delegation(chain, args); p != "" {
			return deny(rule, "%s", p)
		}
	}
	if slices.Contains(agents.ScopedTools(), tool) {
		for _, name := range chain {
			if s := g.rows[name].Role.WriteScope; !s.IsZero() {
				if p := scopeProblem(project, name, tool, s, args); p != "" {
					return deny(RuleMatrix, "%s", p)
				}
			}
		}
	}
	return nil
}

// chainProblem says what is wrong with a delegation chain, and the rule
// that says so, or "".
func (g *Gate) chainProblem(chain []string) (rule, problem string) {
	for _, name := range chain {
		if _, ok := g.rows[name]; !ok {
			return "", fmt.Sprintf("%q is not an agent; the agents are %s", name, strings.Join(g.order, ", "))
		}
	}
	if d := len(chain) - 1; d > g.maxDepth {
		return RuleDepth, fmt.Sprintf("the delegation chain %s is %d deep, beyond delegation.max_depth %d", strings.Join(chain, " > "), d, g.maxDepth)
	}
	for i := 1; i < len(chain); i++ {
		from, to := g.rows[chain[i-1]].Role, chain[i]
		if !slices.Contains(from.Delegates, to) {
			return RuleMatrix, fmt.Sprintf("%s may not delegate to %s, so the chain %s is not possible: %s", from.Name, to, strings.Join(chain, " > "), delegatesText(from))
		}
	}
	return "", ""
}

// ceiling says why tool is outside the intersection of the chain's rows:
// "thread has no write", or, for a delegated agent whose own row has the
// tool, which agent above it has not.
func (g *Gate) ceiling(chain []string, tool string) string {
	agent := chain[len(chain)-1]
	for i := len(chain) - 1; i >= 0; i-- {
		row := g.rows[chain[i]]
		if slices.Contains(row.Tools, tool) {
			continue
		}
		if i == len(chain)-1 {
			return fmt.Sprintf("%s has no %s%s", agent, tool, narrowNote(row, tool))
		}
		return fmt.Sprintf("%s has no %s, and %s works for %s (%s): a delegated agent never gets more than the agents above it%s",
			chain[i], tool, agent, chain[i], strings.Join(chain, " > "), narrowNote(row, tool))
	}
	return ""
}

func narrowNote(row GateRow, tool string) string {
	if slices.Contains(row.Narrowed, tool) {
		return fmt.Sprintf("; config agents.%s.tools leaves it out", row.Role.Name)
	}
	return ""
}

func delegatesText(r agents.Role) string {
	if len(r.Delegates) == 0 {
		return r.Name + " never delegates"
	}
	return fmt.Sprintf("%s delegates only to %s", r.Name, strings.Join(r.Delegates, ", "))
}

// delegation checks a task call's target, and says which rule refuses it.
func (g *Gate) delegation(chain []string, args map[string]any) (rule, problem string) {
	me := g.rows[chain[len(chain)-1]].Role
	target, _ := args[argAgent].(string)
	target = strings.ToLower(strings.TrimSpace(target))
	if len(me.Delegates) == 0 {
		if target == "" {
			return RuleMatrix, me.Name + " never delegates; do the work yourself"
		}
		return RuleMatrix, fmt.Sprintf("%s may not delegate to %s: %s never delegates; do the work yourself", me.Name, target, me.Name)
	}
	if target == "" {
		return "", fmt.Sprintf("task needs an agent argument naming whom to delegate to: %s", strings.Join(me.Delegates, ", "))
	}
	if !slices.Contains(me.Delegates, target) {
		return RuleMatrix, fmt.Sprintf("%s may not delegate to %s; it may delegate only to %s", me.Name, target, strings.Join(me.Delegates, ", "))
	}
	if len(chain) > g.maxDepth {
		return RuleDepth, fmt.Sprintf("delegating to %s would make the chain %s > %s %d deep, beyond delegation.max_depth %d; do the work yourself or report back",
			target, strings.Join(chain, " > "), target, len(chain), g.maxDepth)
	}
	return "", ""
}

// scopeProblem checks a write or edit by a scoped role.
func scopeProblem(project, agent, tool string, s agents.Scope, args map[string]any) string {
	what := scopeWhat(agent, tool, s)
	p, ok := plugins.ToolPath(args)
	if !ok {
		return what + ", and this call names no path"
	}
	if project == "" {
		return what + ", and there is no project directory to check the path against"
	}
	root, err := realpath.Resolve("", project)
	if err != nil {
		return fmt.Sprintf("%s; cannot resolve the project directory: %v", what, err)
	}
	real, err := realpath.Resolve(root, p)
	if err != nil {
		return fmt.Sprintf("%s; cannot resolve %s: %v", what, p, err)
	}
	return realScopeProblem(root, agent, tool, s, p, real)
}

func scopeWhat(agent, tool string, s agents.Scope) string {
	return fmt.Sprintf("%s may only %s %s files under %s/, lower-case %s, checked on the real path", agent, tool, s.Ext, s.Dir, s.Ext)
}

// realScopeProblem checks real, the resolved path p of a write or edit, against s.
func realScopeProblem(root, agent, tool string, s agents.Scope, p, real string) string {
	dir := filepath.Join(root, filepath.FromSlash(s.Dir))
	base := filepath.Base(real)
	if !realpath.Within(dir, real) || real == dir || filepath.Ext(base) != s.Ext || base == s.Ext {
		return fmt.Sprintf("%s; %s resolves to %s", scopeWhat(agent, tool, s), p, projectRel(root, real))
	}
	return ""
}

// scopeOnReal checks a resolved path against the write scopes of c's chain,
// as the tool is about to write it: the path may have changed since Check.
func (g *Gate) scopeOnReal(c Caller, tool, root, p, real string) string {
	for _, name := range c.Path() {
		if s := g.rows[name].Role.WriteScope; !s.IsZero() {
			if prob := realScopeProblem(root, name, tool, s, p, real); prob != "" {
				return prob
			}
		}
	}
	return ""
}
