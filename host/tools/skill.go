package tools

import (
	"context"
	"strings"

	"github.com/weavehq/weave/host/instructions"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolSkill, func(_ context.Context, t *Tools, c call) (plugins.ToolResult, error) {
		return t.skill(c.args)
	})
}

// argName is the skill tool's argument.
const argName = "name"

// WithSkills gives the skill tool the skills it loads (see
// instructions.Sources.Skills); without it, there are none.
func WithSkills(skills []instructions.Skill) Option {
	return func(t *Tools) { t.skills = skills }
}

// skill answers a skill's instructions. The list the model chooses from is
// in its system prompt; a name not in it is a failure that lists them.
func (t *Tools) skill(args map[string]any) (plugins.ToolResult, error) {
	name, err := stringArg(args, argName, true)
	if err != nil {
		return failf("skill: %v", err)
	}
	sk, found := instructions.Lookup(t.skills, name)
	if !found {
		if len(t.skills) == 0 {
			return failf("skill: no skill named %q; this project has no skills", name)
		}
		return failf("skill: no skill named %q (have %s)", name, strings.Join(instructions.Names(t.skills), ", "))
	}
	body, err := sk.Body()
	if err != nil {
		return failf("skill %s: %v", sk.Name, err)
	}
	return ok("%s", body)
}
