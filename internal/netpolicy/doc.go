// Package netpolicy decides which addresses a connection the model asked
// for (the webfetch tool) may reach. The policy, in one place:
//
//   - Refused by default: addresses that reach this machine or the network
//     it sits in rather than the public internet. These are unspecified
//     (0.0.0.0/8, ::), loopback (127.0.0.0/8, ::1), private (10.0.0.0/8,
//     172.16.0.0/12, 192.168.0.0/16, fc00::/7), link-local
//     (169.254.0.0/16, fe80::/10), the cloud metadata services
//     (169.254.169.254, fd00:ec2::254, 100.100.100.200), shared CGNAT space
//     (100.64.0.0/10), multicast (224.0.0.0/4, ff00::/8) and the
//     reserved and special ranges (192.0.0.0/24, 198.18.0.0/15,
//     240.0.0.0/4 with the broadcast address, the documentation nets,
//     discard and site-local IPv6). An IPv6 address that carries an IPv4
//     one (::ffff:a.b.c.d, 64:ff9b::a.b.c.d, 2002::/16 6to4) is judged by
//     the IPv4 address it carries.
//   - The check is made on the address actually connected to, after DNS
//     resolution, for the first request and for every redirect: a name
//     that resolves (or re-resolves, DNS rebinding) to a refused address
//     is refused, and a redirect to one is refused.
//   - tools.webfetch.deny narrows: a host name or an address in a CIDR it
//     lists is refused even when public. A denied name is refused before
//     it is resolved.
//   - tools.webfetch.allow widens: an address in a CIDR it lists, or any
//     address of a host name it lists (exactly that name, or its
//     subdomains for "*.name"), may be reached though refused by default.
//     Deny wins over allow.
//   - A refusal names the rule that refused, so that the model (and the
//     person reading the transcript) knows what to change: "127.0.0.1 is
//     a loopback address (tools.webfetch.allow widens this)".
//
// The package makes no connection; host/tools dials through Policy.Check.
// The bus's listener policy (bus/guard) keeps its own loopback test: the
// bus imports nothing of the project, and what it asks (is a listen
// address loopback) is the standard library's IsLoopback.
package netpolicy
