package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolTodoWrite, func(_ context.Context, t *Tools, c call) (plugins.ToolResult, error) {
		return t.todowrite(c.session, c.args)
	})
}

var todoMarks = map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

// todo is one entry of a session's checklist.
type todo struct {
	Content string
	Status  string
}

func (t *Tools) todowrite(session string, args map[string]any) (plugins.ToolResult, error) {
	raw, present := args[argTodos]
	list, isList := raw.([]any)
	if !present || !isList {
		return failf("todowrite: argument %q must be a list of {content, status}, got %s", argTodos, jsonType(raw))
	}
	todos := make([]todo, 0, len(list))
	for i, item := range list {
		m, isMap := item.(map[string]any)
		if !isMap {
			return failf("todowrite: todos[%d] must be an object {content, status}, got %s", i, jsonType(item))
		}
		content, _ := m["content"].(string)
		status, _ := m["status"].(string)
		if strings.TrimSpace(content) == "" {
			return failf("todowrite: todos[%d] has no content", i)
		}
		if status == "" {
			status = "pending"
		}
		if _, known := todoMarks[status]; !known {
			return failf("todowrite: todos[%d] has status %q; want pending, in_progress or completed", i, status)
		}
		todos = append(todos, todo{Content: strings.TrimSpace(content), Status: status})
	}
	t.mu.Lock()
	t.todos[session] = todos
	t.mu.Unlock()
	if len(todos) == 0 {
		return ok("the checklist is empty")
	}
	var b strings.Builder
	done := 0
	for _, td := range todos {
		fmt.Fprintf(&b, "- %s %s\n", todoMarks[td.Status], td.Content)
		if td.Status == "completed" {
			done++
		}
	}
	fmt.Fprintf(&b, "%d/%d done\n", done, len(todos))
	return ok("%s", b.String())
}

// Todos returns session's checklist as the last todowrite left it.
func (t *Tools) Todos(session string) []plugins.PlanTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]plugins.PlanTask, len(t.todos[session]))
	for i, td := range t.todos[session] {
		out[i] = plugins.PlanTask{Number: i + 1, Title: td.Content, Done: td.Status == "completed"}
	}
	return out
}

// EndSession forgets what the tools kept for session (its checklist).
func (t *Tools) EndSession(session string) {
	t.mu.Lock()
	delete(t.todos, session)
	t.mu.Unlock()
}
