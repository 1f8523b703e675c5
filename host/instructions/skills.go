package instructions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// SkillFile is the file that makes a folder a skill.
const SkillFile = "SKILL.md"

// Skill is one skill: its name and description go in the system prompt,
// its body is read when the model asks for it.
type Skill struct {
	Name, Description string
	// Path is its SKILL.md; Dir the folder holding it and what it refers to.
	Path, Dir string
	// Shown is Path as a person reads it.
	Shown string
	// root is the project the skill must stay inside, "" for a user's.
	root string
}

// skillName is what a skill may be called: Claude Code's rule.
var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Skills finds the skills of every place, the first of a name winning. A
// SKILL.md that cannot be read, or whose front matter is malformed or
// lacks a description, is skipped with a warning naming it.
func (s Sources) Skills() (skills []Skill, warnings []string) {
	for _, pl := range s.places("skills") {
		entries, err := os.ReadDir(pl.dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				warnings = append(warnings, fmt.Sprintf("skills in %s not read: %v", shownPath(s.Project, pl.dir), err))
			}
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(pl.dir, e.Name())
			path := filepath.Join(dir, SkillFile)
			if ok, _ := isFile(path); !ok {
				continue
			}
			sk, err := readSkill(pl.root, dir, path)
			sk.Shown = shownPath(s.Project, path)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("skill %s skipped: %v", sk.Shown, err))
				continue
			}
			if slices.ContainsFunc(skills, func(o Skill) bool { return o.Name == sk.Name }) {
				continue
			}
			skills = append(skills, sk)
		}
	}
	return skills, warnings
}

func readSkill(root, dir, path string) (Skill, error) {
	sk := Skill{Path: path, Dir: dir, root: root}
	text, _, err := readCapped(root, path)
	if err != nil {
		return sk, err
	}
	fm, _, err := splitFrontMatter(text)
	if err != nil {
		return sk, err
	}
	sk.Name = fm["name"]
	if sk.Name == "" {
		sk.Name = filepath.Base(dir)
	}
	if !skillName.MatchString(sk.Name) {
		return sk, fmt.Errorf("name %q: a skill name is lower-case letters, digits, - and _, at most 64", sk.Name)
	}
	sk.Description = strings.Join(strings.Fields(fm["description"]), " ")
	if sk.Description == "" {
		return sk, errors.New("its front matter has no description (say when to use the skill)")
	}
	return sk, nil
}

// Body reads the skill's instructions (SKILL.md after its front matter),
// as the model gets them: with the folder its other files are in, and a
// note when it was cut.
func (sk Skill) Body() (string, error) {
	text, cut, err := readCapped(sk.root, sk.Path)
	if err != nil {
		return "", err
	}
	_, body, err := splitFrontMatter(text)
	if err != nil {
		return "", fmt.Errorf("skill %s: %w", sk.Shown, err)
	}
	body = strings.TrimSpace(body)
	if cut {
		body += cutNote(sk.Shown)
	}
	return fmt.Sprintf("Skill %s (base directory %s: paths in it are relative to there)\n\n%s\n", sk.Name, sk.Dir, body), nil
}

// Lookup returns the skill called name.
func Lookup(skills []Skill, name string) (Skill, bool) {
	i := slices.IndexFunc(skills, func(s Skill) bool { return s.Name == strings.TrimSpace(name) })
	if i < 0 {
		return Skill{}, false
	}
	return skills[i], true
}

// Names lists the skills' names.
func Names(skills []Skill) []string {
	out := make([]string, len(skills))
	for i, s := range skills {
		out[i] = s.Name
	}
	return out
}

// RenderSkills is the skills' list as a part of a system prompt; "" when
// there are none.
func RenderSkills(skills []Skill) string {
	if len(skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Skills\n\nThese skills hold instructions for particular tasks. When a task matches a skill's description, load the skill with the skill tool (its name as the argument) before you start, and follow it.\n\n")
	for _, s := range skills {
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Description)
	}
	return b.String()
}
