package tools

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/netpolicy"
)

// webNet is how webfetch reaches the network, under the address policy
// of internal/netpolicy (its doc comment states it):
//
//   - Every connection, the first request's and each redirect's, is made
//     by dial below and nowhere else. It refuses a name
//     tools.webfetch.deny lists before resolving it, resolves the name
//     once, checks every address it got, and connects to an address that
//     passed, by that address: what was checked is what is reached, so a
//     name that resolves to a public address for one lookup and to
//     127.0.0.1 for the next (DNS rebinding) gains nothing, and a redirect
//     to a refused address is refused when it is dialled.
//   - webfetch connects directly: HTTP_PROXY and HTTPS_PROXY are not used,
//     since through a proxy the policy would see the proxy's address, not
//     the one fetched.
//   - A refusal is returned before any connection is attempted, and the
//     model reads it as "webfetch refused: " and the rule that refused.
type webNet struct {
	policy *netpolicy.Policy
	// lookup resolves a host name; dial connects to an address already
	// checked. Tests replace them to see what would be reached.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newWebNet(c config.WebFetchToolConfig) (webNet, error) {
	p, err := netpolicy.New(c.Allow, c.Deny)
	if err != nil {
		return webNet{}, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return webNet{
		policy: p,
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		dial: d.DialContext,
	}, nil
}

// transport is an HTTP transport whose every connection goes through
// w.connect; the caller closes its idle connections when done.
func (w webNet) transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = w.connect
	tr.DialTLSContext = nil // TLS runs over a connection connect made
	return tr
}

// connect resolves addr's host, keeps the addresses the policy allows and
// connects to the first that answers. With none allowed it returns the
// policy's *netpolicy.Refusal for the first address, having dialled
// nothing.
func (w webNet) connect(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := netip.ParseAddrPort("0.0.0.0:" + portText)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portText, err)
	}
	if err := w.policy.CheckName(host); err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = w.lookup(ctx, host); err != nil {
		return nil, err
	}
	var refusal, dialErr error
	for _, ip := range addrs {
		if err := w.policy.Check(host, ip); err != nil {
			if refusal == nil {
				refusal = err
			}
			continue
		}
		c, err := w.dial(ctx, network, netip.AddrPortFrom(ip.Unmap(), port.Port()).String())
		if err == nil {
			return c, nil
		}
		dialErr = err
	}
	switch {
	case dialErr != nil:
		return nil, dialErr
	case refusal != nil:
		return nil, refusal
	}
	return nil, fmt.Errorf("%s has no address", host)
}
