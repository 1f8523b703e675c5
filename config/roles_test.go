package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCustomAgentsAndCategories(t *testing.T) {
	e := newEnv(t)
	write(t, filepath.Join(e.project, "docs.md"), "You write docs.\n")
	write(t, filepath.Join(e.user, "mine.md"), "You are mine.\n")
	write(t, e.userFile("config.yaml"), "custom_agents:\n  mine:\n    prompt_file: mine.md\n")
	write(t, e.projectFile("config.yaml"), `custom_agents:
  docs:
    description: docs need writing
    prompt_file: docs.md
    tools: [read, write, task]
    delegates: [thread]
    mode: primary
categories:
  frontend:
    tools: [read, bash]
disabled_agents: [shuttle-frontend, mine]
`)
	c, _ := mustLoad(t, e.opts())
	docs := c.CustomAgents["docs"]
	if docs.Prompt != "You write docs.\n" || docs.PromptFile != "docs.md" || docs.Mode != "primary" || docs.Description != "docs need writing" {
		t.Errorf("docs = %+v; want its prompt read from the project root", docs)
	}
	if c.CustomAgents["mine"].Prompt != "You are mine.\n" {
		t.Errorf("mine = %+v; want its prompt read from the user config directory", c.CustomAgents["mine"])
	}
	if got := strings.Join(c.Categories["frontend"].Tools, ","); got != "read,bash" {
		t.Errorf("categories.frontend.tools = %s", got)
	}
	if got := strings.Join(c.DisabledAgents, ","); got != "shuttle-frontend,mine" {
		t.Errorf("disabled_agents = %s", got)
	}
}

func TestRoleErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"both prompts", "custom_agents:\n  a:\n    prompt: x\n    prompt_file: a.md\n", []string{"custom_agents.a", "not both"}},
		{"no prompt", "custom_agents:\n  a:\n    model: m\n", []string{"custom_agents.a", "no prompt"}},
		{"missing file", "custom_agents:\n  a:\n    prompt_file: nope.md\n", []string{"custom_agents.a.prompt_file", "no such file"}},
		{"built-in name", "custom_agents:\n  thread:\n    prompt: x\n", []string{"thread is a built-in agent"}},
		{"category name", "custom_agents:\n  shuttle-x:\n    prompt: x\n", []string{"categories.x"}},
		{"bad mode", "custom_agents:\n  a:\n    prompt: x\n    mode: boss\n", []string{"custom_agents.a.mode"}},
		{"unknown tool", "custom_agents:\n  a:\n    prompt: x\n    tools: [teleport]\n", []string{"custom_agents.a.tools"}},
		{"delegates need task", "custom_agents:\n  a:\n    prompt: x\n    tools: [read]\n    delegates: [thread]\n", []string{"needs task"}},
		{"unknown delegate", "custom_agents:\n  a:\n    prompt: x\n    delegates: [nobody]\n", []string{`no agent "nobody"`}},
		{"disable loom", "disabled_agents: [loom]\n", []string{"disabled_agents", "loom cannot be disabled"}},
		{"disable nobody", "disabled_agents: [threda]\n", []string{`no agent "threda"`, `did you mean "thread"`}},
		{"category tools", "categories:\n  x:\n    tools: [teleport]\n", []string{"categories.x.tools"}},
		{"category name", "categories:\n  Front End:\n    model: m\n", []string{"categories.Front End", "lower-case"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			write(t, e.projectFile("config.yaml"), tt.yaml)
			_, _, err := Load(e.opts())
			if err == nil {
				t.Fatal("Load() succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), e.projectFile("config.yaml")) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}
