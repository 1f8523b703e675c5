package gitwork

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A landed commit is written here, byte for byte as git commit-tree
// writes it (tree, parents, the task's author line as it is, the
// repository's committer with the time now, the message), when nothing in
// the repository's config asks for more than that. What git itself would
// decide (the committer's name and email) is asked of git once per Repo.

// landSetup is what writing a landed commit without git needs to know of
// the repository, asked once per Repo.
type landSetup struct {
	// plain says the config asks for nothing the writer does not do:
	// no signing, no other encoding, no shared permissions, SHA-1 names,
	// no forced fsync.
	plain bool
	// committer is "name <email>" as git would write it.
	committer string
}

// landSetup is r's, asked of git the first time.
func (r *Repo) landSetup(ctx context.Context) landSetup {
	r.mu.Lock()
	if r.landing != nil {
		s := *r.landing
		r.mu.Unlock()
		return s
	}
	r.mu.Unlock()
	s, ok := r.askLandSetup(ctx)
	if !ok {
		return landSetup{} // asked again next time (a context cut short)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.landing = &s
	return s
}

// askLandSetup reads the config and the committer git would use; ok is
// false when git could not be asked.
func (r *Repo) askLandSetup(ctx context.Context) (landSetup, bool) {
	// The config is read once per Repo for this and for unpacking
	// (unpackloose.go).
	if !r.unpackPlain(ctx) {
		return landSetup{}, ctx.Err() == nil
	}
	// As commit-tree is run (commitTreeAs): with the fallback identity
	// when the user set none.
	args := []string{"var", "GIT_COMMITTER_IDENT"}
	if !r.hasIdentity(ctx) {
		args = append(append([]string{}, fallbackIdentity...), args...)
	}
	id, err := run(ctx, r.Root, nil, args...)
	if err != nil {
		return landSetup{}, ctx.Err() == nil
	}
	id = strings.TrimSuffix(id, "\n")
	gt := strings.LastIndexByte(id, '>')
	if gt < 0 {
		return landSetup{}, true
	}
	who := id[:gt+1]
	if _, ok := identDate(who + " 0 +0000"); !ok {
		return landSetup{}, true
	}
	return landSetup{plain: true, committer: who}, true
}

// plainConfig reports whether the config (git config --list -z) asks for
// nothing a commit written here would miss.
func plainConfig(list string) bool {
	for _, kv := range strings.Split(list, "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		switch strings.ToLower(k) {
		case "commit.gpgsign":
			switch strings.ToLower(v) {
			case "false", "no", "off", "0":
			default:
				return false
			}
		case "i18n.commitencoding", "core.sharedrepository", "extensions.compatobjectformat",
			"core.fsync", "core.fsyncobjectfiles":
			return false
		case "extensions.objectformat":
			if strings.ToLower(v) != "sha1" {
				return false
			}
		}
	}
	return true
}

// commitObject is the commit of tree with parents, author (an author
// line's value, kept as it is) and msg, committed now by the repository's
// committer; ok is false when git must write it (git commit-tree would
// write something else, or the config asks for more).
func (r *Repo) commitObject(ctx context.Context, author, tree, msg string, parents ...string) (storedObject, bool) {
	s := r.landSetup(ctx)
	if !s.plain {
		return storedObject{}, false
	}
	if _, ok := identDate(author); !ok {
		return storedObject{}, false
	}
	var b strings.Builder
	b.WriteString("tree " + tree + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p + "\n")
	}
	b.WriteString("author " + author + "\n")
	b.WriteString("committer " + s.committer + " " + gitDate(time.Now()) + "\n\n")
	b.WriteString(msg)
	body := b.String()
	// git refuses a NUL in the message, and rewrites what is not UTF-8.
	if strings.IndexByte(msg, 0) >= 0 || !gitUTF8(body) {
		return storedObject{}, false
	}
	return newStored("commit", []byte(body)), true
}

// gitDate is t as git writes it in a commit: seconds, then the local
// zone's offset as +hhmm.
func gitDate(t time.Time) string {
	_, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	m := off / 60
	return fmt.Sprintf("%d %c%02d%02d", t.Unix(), sign, m/60, m%60)
}

// identDate checks that ident ("name <email> seconds zone") is what git
// writes when given its name, email and date apart (authorEnv): nothing
// git would strip from the name or email, a date git reads back alike.
// It returns the date.
func identDate(ident string) (string, bool) {
	lt := strings.LastIndexByte(ident, '<')
	gt := strings.LastIndexByte(ident, '>')
	if lt < 1 || gt < lt || ident[lt-1] != ' ' || !strings.HasPrefix(ident[gt:], "> ") {
		return "", false
	}
	name, email, date := ident[:lt-1], ident[lt+1:gt], ident[gt+2:]
	if !cleanIdentPart(name) || !cleanIdentPart(email) {
		return "", false
	}
	secs, zone, ok := strings.Cut(date, " ")
	if !ok || secs == "" || len(secs) > 12 || secs[0] == '0' && secs != "0" || len(zone) != 5 ||
		zone[0] != '+' && zone[0] != '-' || zone == "-0000" {
		return "", false
	}
	for _, c := range secs + zone[1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	if mm, _ := strconv.Atoi(zone[3:]); mm >= 60 {
		return "", false
	}
	return date, true
}

// cleanIdentPart reports whether a name or email is one git keeps as it
// is: not empty, no delimiter in it, nothing git strips at either end.
func cleanIdentPart(s string) bool {
	if s == "" || strings.ContainsAny(s, "<>\n") {
		return false
	}
	crud := func(c byte) bool { return c <= ' ' || strings.IndexByte(".,:;<>\"\\'", c) >= 0 }
	return !crud(s[0]) && !crud(s[len(s)-1])
}

// gitUTF8 reports whether git reads s as UTF-8 it keeps: valid, and no
// noncharacter (which git's check refuses where Go's accepts).
func gitUTF8(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if c&0xfffe == 0xfffe || c >= 0xfdd0 && c <= 0xfdef {
			return false
		}
	}
	return true
}
