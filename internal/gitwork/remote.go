package gitwork

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// A git remote can carry a run's code instead of bundles (run.remote): the
// coordinator pushes the integration head to a ref there, a worker fetches
// it and pushes its task's commit back to a ref of its own. These calls
// name one commit by one ref, and never let a remote's URL pick a
// transport that runs a command (ext::, fd::).

// remoteArgs are git's options for talking to a remote: only the
// transports that move data.
var remoteArgs = []string{"-c", "protocol.allow=never", "-c", "protocol.file.allow=always", "-c", "protocol.git.allow=always",
	"-c", "protocol.ssh.allow=always", "-c", "protocol.http.allow=always", "-c", "protocol.https.allow=always"}

// PushRef points ref at commit on remote (a remote's name or URL),
// replacing what it pointed at.
func (r *Repo) PushRef(ctx context.Context, remote, commit, ref string) error {
	if err := checkRemoteRef(remote, ref); err != nil {
		return err
	}
	args := append(append([]string{}, remoteArgs...), "push", "-q", "--no-verify", "--", remote, "+"+commit+":"+ref)
	if _, err := run(ctx, r.Root, nil, args...); err != nil {
		return fmt.Errorf("push %s to %s on %s: %w", short(commit), ref, RedactURL(remote), err)
	}
	return nil
}

// FetchRef fetches ref of remote into local (both full ref names) and
// returns the commit it names.
func (r *Repo) FetchRef(ctx context.Context, remote, ref, local string) (string, error) {
	if err := checkRemoteRef(remote, ref); err != nil {
		return "", err
	}
	if !strings.HasPrefix(local, "refs/") {
		return "", fmt.Errorf("fetch %s into %q: not a full ref name (refs/...)", ref, local)
	}
	// No maintenance or gc after the fetch: they would prune worktrees
	// and repack the person's repository while the run works in it.
	args := append(append([]string{}, remoteArgs...), "-c", "maintenance.auto=false", "-c", "gc.auto=0",
		"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--", remote, "+"+ref+":"+local)
	// git fetch checks what it got against every ref, the HEAD of each
	// worktree included, and fails on a worktree being added beside it
	// ("bad object worktrees/<id>/HEAD"): it runs while this process adds
	// none (an add waits for the fetch; each slot adds once), and again,
	// up to three times in all, when a worktree added by another process
	// (a person's git) was caught half written.
	var err error
	for attempt := 1; ; attempt++ {
		r.adminMu.Lock()
		_, err = run(ctx, r.Root, nil, args...)
		r.adminMu.Unlock()
		if err == nil || attempt == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "worktrees/") {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("fetch %s from %s: %w", ref, RedactURL(remote), err)
	}
	return r.RevParse(ctx, local)
}

// DeleteRemoteRef removes ref from remote; a ref already gone is no error.
func (r *Repo) DeleteRemoteRef(ctx context.Context, remote, ref string) error {
	if err := checkRemoteRef(remote, ref); err != nil {
		return err
	}
	args := append(append([]string{}, remoteArgs...), "push", "-q", "--no-verify", "--", remote, ":"+ref)
	if _, err := run(ctx, r.Root, nil, args...); err != nil && !strings.Contains(err.Error(), "unable to delete") {
		return fmt.Errorf("delete %s on %s: %w", ref, RedactURL(remote), err)
	}
	return nil
}

// RemoteURL is the URL of the remote named name.
func (r *Repo) RemoteURL(ctx context.Context, name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "-") {
		return "", fmt.Errorf("no remote named %q", name)
	}
	out, err := run(ctx, r.Root, nil, "remote", "get-url", "--", name)
	if err != nil {
		return "", fmt.Errorf("the repository has no remote %q (see `git remote -v`)", name)
	}
	return strings.TrimSpace(out), nil
}

// RedactURL hides the password of a URL's user, for messages.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		return u.String()
	}
	return s
}

func checkRemoteRef(remote, ref string) error {
	if remote == "" || strings.HasPrefix(remote, "-") {
		return fmt.Errorf("remote %q: not a remote's name or URL", remote)
	}
	if !strings.HasPrefix(ref, "refs/") || strings.ContainsAny(ref, ": \t\n") {
		return fmt.Errorf("remote ref %q: not a full ref name (refs/...)", ref)
	}
	return nil
}
