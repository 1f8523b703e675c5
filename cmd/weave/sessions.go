package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/internal/price"
	"github.com/weavehq/weave/plugins"
)

func newCmdSessions(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the conversations in .weave/sessions and show one with its token use and cost",
		Long: `Every conversation with an agent (weave chat, a start-work run, each
delegation) is a session, kept as .weave/sessions/<id>.jsonl: one line per
message, tool call, tool result and model call's token use. A delegation
runs in a child session that names its parent. Costs come from the price
table (prices: in config over weave's defaults); a model without a known
price shows its cost as ? (null in JSON), never as $0.`,
		Example: `  weave sessions list
  weave sessions show chat-1a2b3c4d`,
	}
	cmd.AddCommand(newCmdSessionsList(g, s), newCmdSessionsShow(g, s))
	return cmd
}

func newCmdSessionsList(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the sessions, the most recently active first",
		Long: `List the sessions, the most recently active first: id, agent, when it
started and was last active, its messages, and its tokens (its delegations'
included). Delegated sessions are listed with --all. Piped, one tab-separated
line per session: id, agent, started, last active, messages, tokens, parent.`,
		Example: `  weave sessions list
  weave sessions list --all --jq '.[] | select(.parent) | .id'
  weave chat --resume "$(weave sessions list | head -1 | cut -f1)"`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			project, err := g.project()
			if err != nil {
				return err
			}
			list, err := chat.Sessions(project)
			if err != nil {
				return err
			}
			shown := []chat.SessionSummary{}
			for _, ss := range list {
				if all || ss.Parent == "" {
					shown = append(shown, ss)
				}
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(shown)
			}
			return writeSessionList(s, shown, time.Now())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "list delegated sessions too")
	return cmd
}

func writeSessionList(s *Streams, list []chat.SessionSummary, now time.Time) error {
	if !s.Terminal {
		for _, ss := range list {
			fmt.Fprintf(s.Out, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", ss.ID, ss.Agent, ss.Started.UTC().Format(time.RFC3339),
				ss.LastActive.UTC().Format(time.RFC3339), ss.Messages, ss.Total.Total(), ss.Parent)
		}
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(s.Out, "no sessions yet in .weave/sessions: start one with `weave chat`")
		return nil
	}
	w := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGENT\tSTARTED\tLAST ACTIVE\tMESSAGES\tTOKENS\tCOST")
	for _, ss := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", ss.ID, ss.Agent, ss.Started.Local().Format("2006-01-02 15:04"),
			ago(now, ss.LastActive), ss.Messages, count(ss.Total.Total()), ss.TotalCost)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(s.Out, "\n`weave sessions show ID` shows one; `weave chat --resume ID` continues it.")
	return nil
}

// ago says how long before now t was, briefly.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

// count shows a number with thousands separators.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// tokenLine shows token use on one line.
func tokenLine(t chat.Tokens) string {
	return fmt.Sprintf("%s tokens (%s in, %s out, %s cache read, %s cache write)",
		count(t.Total()), count(t.Input), count(t.Output), count(t.CacheRead), count(t.CacheWrite))
}

// sessionTree is a session with the sessions delegated from it.
type sessionTree struct {
	*chat.Session
	Delegations []*sessionTree `json:"delegations,omitempty"`
}

// readSessionTree reads session id and its delegations, to a bounded depth.
func readSessionTree(project, id string, depth int) (*sessionTree, error) {
	s, err := chat.ReadSession(project, id)
	if err != nil {
		return nil, err
	}
	t := &sessionTree{Session: s}
	if depth >= maxShownDepth {
		return t, nil
	}
	for _, line := range s.Lines {
		if line.Child == "" {
			continue
		}
		child, err := readSessionTree(project, line.Child, depth+1)
		if err != nil {
			// A delegation cut off before its first line leaves no file.
			continue
		}
		t.Delegations = append(t.Delegations, child)
	}
	for _, d := range t.Delegations {
		t.Total.Add(d.Total)
		t.TotalCost.Add(d.TotalCost)
	}
	return t, nil
}

// maxShownDepth bounds the delegations followed, whatever the files say.
const maxShownDepth = 8

func newCmdSessionsShow(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's conversation, its delegations, and its tokens and cost per call, session and agent",
		Example: `  weave sessions show chat-1a2b3c4d
  weave sessions show chat-1a2b3c4d --jq '.by_agent'`,
		Args:              argsBetween(1, 1),
		ValidArgsFunction: completeSessionIDs(g),
		RunE: func(c *cobra.Command, args []string) error {
			project, err := g.project()
			if err != nil {
				return err
			}
			t, err := readSessionTree(project, args[0], 0)
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(t)
			}
			writeSessionShow(s, t)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the session, its lines and its delegations as JSON")
	return cmd
}

func writeSessionShow(s *Streams, t *sessionTree) {
	out, pal := s.Out, s.palette()
	fmt.Fprintf(out, "%s %s with %s, started %s, last active %s\n", pal.bold.Render("session"), t.ID, t.Agent,
		t.Started.Local().Format("2006-01-02 15:04:05"), t.LastActive.Local().Format("2006-01-02 15:04:05"))
	if t.Parent != "" {
		fmt.Fprintf(out, "delegated by %s in session %s\n", t.ParentAgent, t.Parent)
	}
	fmt.Fprintln(out)
	var rows []tokenRow
	var walk func(t *sessionTree, indent string)
	walk = func(t *sessionTree, indent string) {
		rows = append(rows, tokenRow{indent + t.ID + " (" + t.Agent + ")", t.Tokens, t.Cost})
		for _, d := range t.Delegations {
			walk(d, indent+"  ")
		}
	}
	walk(t, "")
	rows = append(rows, tokenRow{"total", t.Total, t.TotalCost})
	writeTokenTable(out, "SESSION", rows)
	fmt.Fprintln(out)

	byAgent := map[string]chat.Tokens{}
	costByAgent := map[string]chat.Cost{}
	var agentsSeen []string
	var sum func(t *sessionTree)
	sum = func(t *sessionTree) {
		for a, u := range t.ByAgent {
			if _, ok := byAgent[a]; !ok {
				agentsSeen = append(agentsSeen, a)
			}
			v := byAgent[a]
			v.Add(u)
			byAgent[a] = v
			c := costByAgent[a]
			c.Add(t.CostByAgent[a])
			costByAgent[a] = c
		}
		for _, d := range t.Delegations {
			sum(d)
		}
	}
	sum(t)
	sort.Strings(agentsSeen)
	rows = rows[:0]
	for _, a := range agentsSeen {
		rows = append(rows, tokenRow{a, byAgent[a], costByAgent[a]})
	}
	writeTokenTable(out, "AGENT", rows)
	fmt.Fprintln(out)
	writeConversation(out, t, "")
}

type tokenRow struct {
	name string
	t    chat.Tokens
	cost chat.Cost
}

// writeTokenTable prints token rows: names to the left, numbers to the
// right.
func writeTokenTable(out io.Writer, head string, rows []tokenRow) {
	width := len(head)
	for _, r := range rows {
		width = max(width, cellWidth(r.name))
	}
	fmt.Fprintf(out, "%s  %12s  %10s  %12s  %12s  %10s\n", padRight(head, width), "IN", "OUT", "CACHE READ", "CACHE WRITE", "COST")
	for _, r := range rows {
		fmt.Fprintf(out, "%s  %12s  %10s  %12s  %12s  %10s\n", padRight(r.name, width), count(r.t.Input), count(r.t.Output), count(r.t.CacheRead), count(r.t.CacheWrite), r.cost)
	}
}

// writeConversation prints a session's messages readably, each
// delegation's conversation under the task call that started it.
func writeConversation(out io.Writer, t *sessionTree, indent string) {
	children := map[string]*sessionTree{}
	for _, d := range t.Delegations {
		children[d.ID] = d
	}
	asker := "you"
	if t.Parent != "" {
		asker = t.ParentAgent
	}
	tools := map[string]string{} // by call id
	for _, line := range t.Lines {
		if line.Fallback != nil {
			fmt.Fprintf(out, "%s[%s: %s]\n", indent, line.Agent, line.Fallback.Line())
			continue
		}
		m := line.Message
		if line.Type == "usage" && line.Usage != nil {
			// Each model call's cost, under the answer it paid for.
			fmt.Fprintf(out, "%s  · %s (%s in, %s out, %s cache read, %s cache write%s)\n", indent, callCost(line),
				count(line.Usage.InputTokens), count(line.Usage.OutputTokens), count(line.Usage.CacheReadTokens), count(line.Usage.CacheWriteTokens), modelNote(line.Model))
			continue
		}
		if line.Type != "message" || m == nil {
			continue
		}
		switch m.Role {
		case plugins.RoleUser:
			who := asker
			if t.Parent == "" && line.Agent != t.Agent {
				// A plan run in a chat: the host gives Tapestry its tasks.
				who = "weave → " + line.Agent
			}
			fmt.Fprintf(out, "%s%s: %s\n", indent, who, indented(m.Content, indent+"  "))
		case plugins.RoleAssistant:
			if strings.TrimSpace(m.Content) != "" {
				fmt.Fprintf(out, "%s%s: %s\n", indent, line.Agent, indented(m.Content, indent+"  "))
			}
			for _, tc := range m.ToolCalls {
				tools[tc.ID] = tc.Tool
				fmt.Fprintf(out, "%s  → %s %s\n", indent, tc.Tool, chat.ShortArgs(tc.Tool, tc.Args))
			}
		case plugins.RoleTool:
			what := byteSize(len(m.Content))
			if m.IsError {
				what = "error: " + errorLine(m.Content)
			}
			fmt.Fprintf(out, "%s  ⎿ %s%s\n", indent, toolLabel(tools[m.ToolCallID]), what)
			if d := children[line.Child]; d != nil {
				fmt.Fprintf(out, "%s    ⤷ %s in session %s\n", indent, d.Agent, d.ID)
				writeConversation(out, d, indent+"      ")
			}
		}
	}
}

func toolLabel(tool string) string {
	if tool == "" {
		return ""
	}
	return tool + ": "
}

// indented continues a multi-line text under its first line.
func indented(s, indent string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+indent)
}

// errorLine shows a failed tool's output by its first line, clipped.
func errorLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return clip(s, 200)
}

// callCost is what one model call cost, "?" when its price was unknown.
func callCost(line chat.SessionLine) string {
	if line.CostUSD == nil {
		return "?"
	}
	return price.Format(*line.CostUSD, true)
}

func modelNote(model string) string {
	if model == "" {
		return ""
	}
	return ", " + model
}
