package pluginhost

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/internal/wire"
)

// Handshake is the go-plugin handshake the host starts its plugins with; a
// plugin's plugins.Serve answers the same one.
var Handshake = wire.Handshake(plugins.ProtocolVersion)

// EnvHostPID is the environment variable the host sets to its pid for every
// plugin process; plugins.Serve exits at once when its parent is no longer
// that process, rather than run orphaned.
const EnvHostPID = wire.EnvHostPID

// DialOptions are the gRPC options a host dials its plugins with (go-plugin's
// ClientConfig.GRPCDialOptions).
func DialOptions() []grpc.DialOption { return wire.DialOptions() }

// grpcPlugin is the go-plugin Plugin for one plugin: on the host's side it
// connects a *Conn named name; served in process (plugintest), it serves cfg
// as plugins.Serve does in a plugin binary.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	name string
	cfg  plugins.ServeConfig
}

// PluginSet is the go-plugin plugin set for one plugin: the host passes
// PluginSet(name, plugins.ServeConfig{}) in its ClientConfig; a test that
// serves a plugin in process (plugintest) passes the plugin's ServeConfig.
// Most code needs neither: the host uses its supervisor, tests use
// plugintest.
func PluginSet(name string, cfg plugins.ServeConfig) goplugin.PluginSet {
	return goplugin.PluginSet{wire.PluginName: &grpcPlugin{name: name, cfg: cfg}}
}

// Dispense returns the host's connection to a started plugin.
func Dispense(cp goplugin.ClientProtocol) (*Conn, error) {
	raw, err := cp.Dispense(wire.PluginName)
	if err != nil {
		return nil, fmt.Errorf("dispense plugin: %w", err)
	}
	c, ok := raw.(*Conn)
	if !ok {
		return nil, fmt.Errorf("dispense plugin: got %T, want *pluginhost.Conn (was the client built with pluginhost.PluginSet?)", raw)
	}
	return c, nil
}

func (p *grpcPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	return shared.RegisterServers(p.cfg, broker, s)
}

func (p *grpcPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return newConn(p.name, broker, cc), nil
}

// Interface guards.
var _ goplugin.GRPCPlugin = (*grpcPlugin)(nil)
