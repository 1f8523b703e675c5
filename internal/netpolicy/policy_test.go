package netpolicy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestDefaultRefusals(t *testing.T) {
	tests := []struct {
		ip   string
		want string // "" for public
	}{
		{"127.0.0.1", "a loopback address"},
		{"127.8.9.10", "a loopback address"},
		{"::1", "a loopback address"},
		{"::ffff:127.0.0.1", "a loopback address"},
		{"64:ff9b::7f00:1", "a loopback address"},
		{"2002:7f00:1::1", "a loopback address"},
		{"0.0.0.0", "an unspecified address"},
		{"::", "an unspecified address"},
		{"10.1.2.3", "a private address"},
		{"172.16.0.1", "a private address"},
		{"172.31.255.255", "a private address"},
		{"192.168.1.1", "a private address"},
		{"fd12:3456::1", "a private address"},
		{"169.254.169.254", "a cloud metadata address"},
		{"::ffff:169.254.169.254", "a cloud metadata address"},
		{"fd00:ec2::254", "a cloud metadata address"},
		{"169.254.1.1", "a link-local address"},
		{"fe80::1", "a link-local address"},
		{"fe80::1%eth0", "a link-local address"},
		{"100.64.0.1", "a shared (CGNAT) address"},
		{"224.0.0.1", "a multicast address"},
		{"ff02::1", "a multicast address"},
		{"255.255.255.255", "the broadcast address"},
		{"240.0.0.1", "a reserved address"},
		{"::127.0.0.1", "a reserved address"},
		{"93.184.216.34", ""},
		{"172.32.0.1", ""},
		{"2606:4700::1111", ""},
		{"8.8.8.8", ""},
	}
	for _, tt := range tests {
		if got := Classify(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("Classify(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

func TestPolicy(t *testing.T) {
	p, err := New([]string{"localhost", "10.9.0.0/16", "*.corp.example", "[fd00::7]"}, []string{"8.8.8.0/24", "evil.example", "10.9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, ip string
		want     string // "" allowed; else a part of the refusal
	}{
		{"127.0.0.1", "127.0.0.1", "127.0.0.1 is a loopback address (tools.webfetch.allow widens this)"},
		{"[::1]", "::1", "::1 is a loopback address (tools.webfetch.allow widens this)"},
		{"169.254.169.254", "169.254.169.254", "169.254.169.254 is a cloud metadata address (tools.webfetch.allow widens this)"},
		{"rebind.example", "127.0.0.1", "rebind.example resolves to 127.0.0.1, which is a loopback address"},
		{"localhost", "127.0.0.1", ""},
		{"LOCALHOST.", "::1", ""},
		{"10.9.1.1", "10.9.1.1", ""},
		{"db.corp.example", "10.1.1.1", ""},
		{"corp.example", "10.1.1.1", "is a private address"},
		{"fd00::7", "fd00::7", ""},
		{"10.9.9.9", "10.9.9.9", "10.9.9.9 is denied by tools.webfetch.deny (10.9.9.9)"},
		{"dns.example", "8.8.8.8", "dns.example resolves to 8.8.8.8, which is denied by tools.webfetch.deny (8.8.8.0/24)"},
		{"evil.example", "93.184.216.34", "evil.example is denied by tools.webfetch.deny (evil.example)"},
		{"example.com", "93.184.216.34", ""},
	}
	for _, tt := range tests {
		err := p.Check(tt.host, netip.MustParseAddr(tt.ip))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%s, %s) = %v, want allowed", tt.host, tt.ip, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%s, %s) = %v, want %q", tt.host, tt.ip, err, tt.want)
		}
		var r *Refusal
		if err != nil && !errors.As(err, &r) {
			t.Errorf("Check(%s, %s) = %T, want a *Refusal", tt.host, tt.ip, err)
		}
	}
	if err := p.CheckName("evil.example"); err == nil {
		t.Error("CheckName(evil.example) = nil, want the deny list's refusal before resolution")
	}
	var zero *Policy
	if err := zero.Check("127.0.0.1", netip.MustParseAddr("127.0.0.1")); err == nil {
		t.Error("the nil policy allowed loopback")
	}
}

func TestParseRules(t *testing.T) {
	for _, ok := range []string{"example.com", "*.example.com", "10.0.0.0/8", "fd00::/8", "127.0.0.1", "[::1]", "::1", "my_host"} {
		if _, err := ParseRule(ok); err != nil {
			t.Errorf("ParseRule(%q) = %v, want accepted", ok, err)
		}
	}
	for _, bad := range []string{"", "http://example.com", "example.com:80", "10.0.0.0/33", "*", "a b", "-x.com", "example..com"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted, want an error", bad)
		}
	}
	_, err := New([]string{"ok.example", "http://x"}, nil)
	if err == nil || !strings.Contains(err.Error(), `tools.webfetch.allow item 1: "http://x" is not a host name, an IP address or a CIDR`) {
		t.Errorf("New = %v, want the key, the item and the entry named", err)
	}
}
