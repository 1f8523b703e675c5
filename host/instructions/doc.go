// Package instructions reads what a project and its user tell the agents
// in files: instruction files (AGENTS.md, else CLAUDE.md), skills (folders
// with a SKILL.md) and command files (.md files that become slash
// commands), in the places Claude Code reads them, so that a project set up
// for Claude Code works as it is.
//
// Guarantees:
//   - A file of the project is read only when its real path (links
//     resolved) is inside the project, and only when it is a regular file;
//     opening never blocks on a named pipe. Files of the user's own
//     directories are read wherever their links lead, but regular files
//     only.
//   - Every file is read up to a cap (MaxBytes); an instruction file or a
//     skill cut there carries a note saying so, so the model knows it has
//     part of it.
//   - A skill or command whose front matter cannot be read is skipped with
//     a warning that names its file; the others load.
//   - The first of a name wins: project places before the user's, Weave's
//     own directory (.weave/) before Claude Code's (.claude/).
//
// Nothing here runs code or widens what an agent may do: a command's
// allowed-tools only narrows a turn (the host enforces it at the tool gate).
package instructions
