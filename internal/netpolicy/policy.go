package netpolicy

import (
	"fmt"
	"net/netip"
	"strings"
)

// The configuration keys the policy's lists come from, named in refusals
// and in errors.
const (
	AllowKey = "tools.webfetch.allow"
	DenyKey  = "tools.webfetch.deny"
)

// class is one range refused by default.
type class struct {
	prefix netip.Prefix
	what   string // "a loopback address"
}

// refused are the ranges refused by default, most specific first: the
// first that holds an address names it.
var refused = func() []class {
	rows := []struct{ cidr, what string }{
		{"169.254.169.254/32", "a cloud metadata address"},
		{"fd00:ec2::254/128", "a cloud metadata address"},
		{"100.100.100.200/32", "a cloud metadata address"},
		{"255.255.255.255/32", "the broadcast address"},
		{"0.0.0.0/8", "an unspecified address"},
		{"::/128", "an unspecified address"},
		{"127.0.0.0/8", "a loopback address"},
		{"::1/128", "a loopback address"},
		{"10.0.0.0/8", "a private address"},
		{"172.16.0.0/12", "a private address"},
		{"192.168.0.0/16", "a private address"},
		{"fc00::/7", "a private address"},
		{"169.254.0.0/16", "a link-local address"},
		{"fe80::/10", "a link-local address"},
		{"100.64.0.0/10", "a shared (CGNAT) address"},
		{"224.0.0.0/4", "a multicast address"},
		{"ff00::/8", "a multicast address"},
		{"192.0.0.0/24", "a reserved address"},
		{"198.18.0.0/15", "a reserved address"},
		{"240.0.0.0/4", "a reserved address"},
		{"192.0.2.0/24", "a documentation address"},
		{"198.51.100.0/24", "a documentation address"},
		{"203.0.113.0/24", "a documentation address"},
		{"2001:db8::/32", "a documentation address"},
		{"100::/64", "a reserved address"},  // discard
		{"fec0::/10", "a reserved address"}, // site-local, deprecated
		{"::/96", "a reserved address"},     // IPv4-compatible, deprecated
	}
	out := make([]class, len(rows))
	for i, r := range rows {
		out[i] = class{prefix: netip.MustParsePrefix(r.cidr), what: r.what}
	}
	return out
}()

// Prefixes of IPv6 addresses that carry an IPv4 address: NAT64 (the last
// 32 bits) and 6to4 (bits 16 to 48). IPv4-mapped addresses are unmapped.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Classify returns what makes ip refused by default ("a loopback
// address"), or "" for a public address. An IPv6 address that carries an
// IPv4 one is judged by the IPv4 address.
func Classify(ip netip.Addr) string {
	for _, a := range judged(ip) {
		for _, c := range refused {
			if c.prefix.Contains(a) {
				return c.what
			}
		}
	}
	return ""
}

// judged are the addresses ip stands for: itself without its zone, and
// the IPv4 address it carries, if any.
func judged(ip netip.Addr) []netip.Addr {
	ip = ip.WithZone("").Unmap()
	out := []netip.Addr{ip}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			out = append(out, netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixTo4.Contains(ip):
			out = append(out, netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	return out
}

// Rule is one entry of an allow or deny list: a host name (exactly that
// name, or with "*." its subdomains), an IP address or a CIDR.
type Rule struct {
	text     string
	prefix   netip.Prefix // valid for an address or a CIDR
	name     string       // lower case, no trailing dot, without "*."
	wildcard bool
}

// String is the entry as written.
func (r Rule) String() string { return r.text }

// ParseRule reads one list entry. The error says what is accepted.
func ParseRule(s string) (Rule, error) {
	text := strings.TrimSpace(s)
	v := strings.ToLower(text)
	bad := fmt.Errorf("%q is not a host name, an IP address or a CIDR; write example.com, *.example.com, 10.1.2.3, fd00::1 or 10.0.0.0/8", s)
	if v == "" {
		return Rule{}, fmt.Errorf("an empty entry; write a host name, an IP address or a CIDR")
	}
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return Rule{}, bad
		}
		return Rule{text: text, prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")); err == nil {
		a = a.WithZone("")
		return Rule{text: text, prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	r := Rule{text: text}
	if rest, ok := strings.CutPrefix(v, "*."); ok {
		r.wildcard, v = true, rest
	}
	v = strings.TrimSuffix(v, ".")
	if !hostName(v) {
		return Rule{}, bad
	}
	r.name = v
	return r, nil
}

// hostName reports whether s is a DNS name: dot-separated labels of
// letters, digits, hyphens and underscores, none empty or over 63 bytes.
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// ParseRules reads a list; the error names the key and the entry.
func ParseRules(key string, list []string) ([]Rule, error) {
	out := make([]Rule, 0, len(list))
	for i, s := range list {
		r, err := ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("%s item %d: %w", key, i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// matchesName reports whether host (a name, lower case) is r's name or,
// for a wildcard, one of its subdomains.
func (r Rule) matchesName(host string) bool {
	if r.name == "" {
		return false
	}
	if r.wildcard {
		return strings.HasSuffix(host, "."+r.name)
	}
	return host == r.name
}

// matchesAddr reports whether ip, or the IPv4 address it carries, is in
// r's CIDR.
func (r Rule) matchesAddr(ip netip.Addr) bool {
	if !r.prefix.IsValid() {
		return false
	}
	for _, a := range judged(ip) {
		if r.prefix.Contains(a) {
			return true
		}
	}
	return false
}

// Policy is the default refusals narrowed by a deny list and widened by an
// allow list. The zero Policy is the default. It is safe for concurrent
// use.
type Policy struct {
	allow, deny []Rule
}

// New returns the policy of the two lists (tools.webfetch.allow and
// tools.webfetch.deny); an entry that is not a host name, an address or a
// CIDR is an error naming it.
func New(allow, deny []string) (*Policy, error) {
	a, err := ParseRules(AllowKey, allow)
	if err != nil {
		return nil, err
	}
	d, err := ParseRules(DenyKey, deny)
	if err != nil {
		return nil, err
	}
	return &Policy{allow: a, deny: d}, nil
}

// Refusal is an address or name the policy refuses; its text names the
// rule.
type Refusal struct {
	Host string     // as in the URL
	Addr netip.Addr // the address that would have been reached; invalid for a name denied before resolution
	Why  string     // "is a loopback address (tools.webfetch.allow widens this)"
}

func (r *Refusal) Error() string {
	switch {
	case !r.Addr.IsValid():
		return r.Host + " " + r.Why
	case isLiteral(r.Host):
		return r.Addr.String() + " " + r.Why
	}
	return r.Host + " resolves to " + r.Addr.String() + ", which " + r.Why
}

func isLiteral(host string) bool {
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil
}

func normName(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
}

// CheckName refuses a host name the deny list names, before it is
// resolved; nil otherwise.
func (p *Policy) CheckName(host string) error {
	if p == nil || isLiteral(host) {
		return nil
	}
	n := normName(host)
	for _, r := range p.deny {
		if r.matchesName(n) {
			return &Refusal{Host: host, Why: fmt.Sprintf("is denied by %s (%s)", DenyKey, r)}
		}
	}
	return nil
}

// Check decides whether ip, the address host (a name or an address
// literal, as in the URL) resolved to, may be connected to: deny first,
// then allow, then the default refusals. It returns a *Refusal or nil.
func (p *Policy) Check(host string, ip netip.Addr) error {
	if err := p.CheckName(host); err != nil {
		return err
	}
	n := normName(host)
	if p != nil {
		for _, r := range p.deny {
			if r.matchesAddr(ip) {
				return &Refusal{Host: host, Addr: ip, Why: fmt.Sprintf("is denied by %s (%s)", DenyKey, r)}
			}
		}
		for _, r := range p.allow {
			if r.matchesAddr(ip) || (!isLiteral(host) && r.matchesName(n)) {
				return nil
			}
		}
	}
	if what := Classify(ip); what != "" {
		return &Refusal{Host: host, Addr: ip, Why: fmt.Sprintf("is %s (%s widens this)", what, AllowKey)}
	}
	return nil
}
