package plugins

import (
	"errors"

	goplugin "github.com/hashicorp/go-plugin"
)

//go:generate protoc -I internal/proto --go_out=internal/proto --go_opt=paths=source_relative --go-grpc_out=internal/proto --go-grpc_opt=paths=source_relative weave/v1/weave.proto

// ProtocolVersion is the plugin protocol this package speaks. It changes only
// with an incompatible change to internal/proto/weave/v1/weave.proto (see the
// compatibility policy at the top of that file).
const ProtocolVersion = 1

// The handshake's magic cookie. It only tells a plugin binary that it was
// started by a Weave host (a plugin run by hand explains itself and exits);
// it is not a security measure.
const (
	MagicCookieKey   = "WEAVE_PLUGIN"
	MagicCookieValue = "5f1f0c6e-weave-plugin"
)

// pluginName is the single name a plugin binary is dispensed under; its kind
// is learned from Describe.
const pluginName = "weave"

// Handshake is the go-plugin handshake both sides use.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// Environment variables the host sets for every plugin process.
const (
	// EnvPluginName is the name the host knows the plugin by.
	EnvPluginName = "WEAVE_PLUGIN_NAME"
	// EnvHostPID is the host's pid; a plugin whose parent is no longer the
	// host exits at once rather than run orphaned.
	EnvHostPID = "WEAVE_HOST_PID"
)

// ErrNoModel is what the host's Model service answers until a model provider
// is configured.
var ErrNoModel = errors.New("no model configured: set model.provider in .weave/config.yaml")

// ErrPluginUnavailable is wrapped by every error that means a plugin process
// died or cannot be reached (as opposed to a plugin that answered with an
// error). A supervisor restarts the plugin on the next call.
var ErrPluginUnavailable = errors.New("plugin unavailable")
