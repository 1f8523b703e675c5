package wire

import goplugin "github.com/hashicorp/go-plugin"

// The handshake's magic cookie. It only tells a plugin binary that it was
// started by a Weave host (a plugin run by hand explains itself and exits);
// it is not a security measure.
const (
	MagicCookieKey   = "WEAVE_PLUGIN"
	MagicCookieValue = "5f1f0c6e-weave-plugin"
)

// PluginName is the single name a plugin binary is dispensed under; its kind
// is learned from Describe.
const PluginName = "weave"

// EnvHostPID is the host's pid, which the host sets for every plugin process;
// a plugin whose parent is no longer the host exits at once rather than run
// orphaned.
const EnvHostPID = "WEAVE_HOST_PID"

// Handshake is the go-plugin handshake both sides use for protocol version
// (package plugins' ProtocolVersion).
func Handshake(version uint) goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  version,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}
