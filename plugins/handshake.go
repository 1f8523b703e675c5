package plugins

import "errors"

//go:generate protoc -I internal/proto --go_out=internal/proto --go_opt=paths=source_relative --go-grpc_out=internal/proto --go-grpc_opt=paths=source_relative weave/v1/weave.proto

// ProtocolVersion is the plugin protocol this package speaks. It changes only
// with an incompatible change to internal/proto/weave/v1/weave.proto (see the
// compatibility policy at the top of that file).
const ProtocolVersion = 1

// EnvPluginName is the environment variable in which the host gives every
// plugin process the name it knows the plugin by.
const EnvPluginName = "WEAVE_PLUGIN_NAME"

// ErrNoModel is what the host's Model service answers until a model provider
// is configured.
var ErrNoModel = errors.New("no model configured: set model.provider in .weave/config.yaml")

// ErrPluginUnavailable is wrapped by every error that means a plugin process
// died or cannot be reached (as opposed to a plugin that answered with an
// error). A supervisor restarts the plugin on the next call.
var ErrPluginUnavailable = errors.New("plugin unavailable")
