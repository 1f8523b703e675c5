package proc

import "strings"

// RedactURL returns raw with the user info of each URL in it (a
// comma-separated list, as NATS takes, included) replaced by "***": a URL
// may carry a password or token (nats://user:pass@host, nats://token@host),
// and such a URL is shown, logged and put in errors only redacted.
func RedactURL(raw string) string {
	return eachURL(raw, "***@")
}

// StripURLCredentials returns raw with the user info of each URL in it
// removed, for a child that may dial the URL but must not authenticate with
// what weave was given.
func StripURLCredentials(raw string) string {
	return eachURL(raw, "")
}

// HasURLCredentials reports whether a URL in raw carries user info.
func HasURLCredentials(raw string) bool {
	return eachURL(raw, "") != raw
}

func eachURL(raw, with string) string {
	if !strings.Contains(raw, "@") || !strings.Contains(raw, "://") {
		return raw
	}
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		parts[i] = replaceUserInfo(p, with)
	}
	return strings.Join(parts, ",")
}

// replaceUserInfo replaces what stands between "scheme://" and the last
// "@" of the authority with with. It reads the string itself rather than
// url.Parse, which gives up on a password holding a stray character and
// would leave the URL unredacted.
func replaceUserInfo(s, with string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return s
	}
	return s[:i+3] + with + rest[at+1:]
}
