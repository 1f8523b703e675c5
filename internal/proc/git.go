package proc

import (
	"context"
	"os/exec"
)

// GitOutput runs git with args in dir, with the Git environment (no GIT_*
// variables, so that a caller's GIT_DIR, as set inside git hooks, does not
// point git at another repository), and returns its stdout.
func GitOutput(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = Env(Git, EnvOptions{})
	cmd.SysProcAttr = ChildAttr()
	return cmd.Output()
}
