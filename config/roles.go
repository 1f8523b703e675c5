package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// categoryPrefix starts the agent name of a category: shuttle-<name>
// (agents.CategoryAgent, which config may not import).
const categoryPrefix = "shuttle-"

// undisablable are the roles disabled_agents may not name
// (agents.Undisablable).
var undisablable = []string{"loom", "tapestry"}

// UndisablableAgents are the agents disabled_agents may not name.
func UndisablableAgents() []string { return slices.Clone(undisablable) }

// CategoryAgent is the agent name of a category.
func CategoryAgent(category string) string { return categoryPrefix + category }

var roleNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// maxPromptFile bounds a custom agent's prompt file: it goes to the model
// with every request.
const maxPromptFile = 256 << 10

// checkRoles validates the keys that add and remove agents, blaming the
// file or variable that set each, and reads the prompt files of custom
// agents (a relative path is taken from the project root for the project
// file, from the user config directory for the user file).
func checkRoles(c *Config, src *Sources) error {
	var errs []error
	blame := func(key, format string, args ...any) {
		l, o := src.Of(key)
		errs = append(errs, &FieldError{Layer: l, Origin: o, Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Categories)) {
		if !roleNameRE.MatchString(categoryPrefix + name) {
			blame("categories."+name, "a category name is lower-case letters, digits, - and _ (it names the agent %s<name>)", categoryPrefix)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.CustomAgents)) {
		a, key := c.CustomAgents[name], "custom_agents."+name
		switch {
		case !roleNameRE.MatchString(name):
			blame(key, "a name is lower-case letters, digits, - and _, starting with a letter")
			continue
		case slices.Contains(agentNames, name):
			blame(key, "%s is a built-in agent; choose another name, or change it under agents.%s", name, name)
			continue
		case strings.HasPrefix(name, categoryPrefix):
			blame(key, "names starting with %s are the agents of categories; configure categories.%s instead", categoryPrefix, strings.TrimPrefix(name, categoryPrefix))
			continue
		}
		switch {
		case a.Prompt != "" && a.PromptFile != "":
			blame(key, "set prompt or prompt_file, not both")
		case a.PromptFile != "":
			path := a.PromptFile
			if !filepath.IsAbs(path) {
				l, origin := src.Of(key + ".prompt_file")
				base := filepath.Dir(origin)
				if l == LayerProject {
					base = filepath.Dir(base) // the file is in <project>/.weave/
				}
				path = filepath.Join(base, path)
			}
			b, err := readPrompt(path)
			if err != nil {
				blame(key+".prompt_file", "%v", err)
				continue
			}
			a.Prompt = string(b)
			c.CustomAgents[name] = a
		case strings.TrimSpace(a.Prompt) == "":
			blame(key, "no prompt: set prompt (the agent's instructions) or prompt_file (a markdown file holding them)")
		}
		if len(a.Delegates) > 0 && len(a.Tools) > 0 && !slices.Contains(a.Tools, "task") {
			blame(key+".delegates", "delegating needs task in tools")
		}
	}
	known := slices.Clone(agentNames)
	for name := range c.Categories {
		known = append(known, categoryPrefix+name)
	}
	for name := range c.CustomAgents {
		known = append(known, name)
	}
	slices.Sort(known[len(agentNames):])
	for _, name := range c.DisabledAgents {
		switch {
		case slices.Contains(undisablable, name):
			blame("disabled_agents", "%s cannot be disabled: loom is the agent you talk to and tapestry runs the plans", name)
		case !slices.Contains(known, name):
			blame("disabled_agents", "no agent %q; the agents are %s%s", name, strings.Join(known, ", "), didYouMean(name, known))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.CustomAgents)) {
		for _, d := range c.CustomAgents[name].Delegates {
			if !slices.Contains(known, d) {
				blame("custom_agents."+name+".delegates", "no agent %q; the agents are %s%s", d, strings.Join(known, ", "), didYouMean(d, known))
			}
		}
	}
	return errors.Join(errs...)
}

func readPrompt(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the prompt file: %w", err)
	}
	if fi.IsDir() || fi.Size() > maxPromptFile {
		return nil, fmt.Errorf("%s is not a prompt file of at most %d KiB", path, maxPromptFile>>10)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the prompt file: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, fmt.Errorf("%s is empty; write the agent's instructions in it", path)
	}
	return b, nil
}
