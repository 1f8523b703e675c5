package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/weavehq/weave/plugins/internal/wire"
)

// ServeConfig says what a plugin binary serves: exactly one of Hook or Agent.
type ServeConfig struct {
	Hook  Hook
	Agent Agent
}

func (c ServeConfig) validate() error {
	switch {
	case c.Hook != nil && c.Agent != nil:
		return errors.New("plugin serves both a Hook and an Agent: set exactly one in plugins.ServeConfig")
	case c.Hook == nil && c.Agent == nil:
		return errors.New("plugin serves nothing: set Hook or Agent in plugins.ServeConfig")
	}
	return nil
}

func (c ServeConfig) kind() Kind {
	if c.Agent != nil {
		return KindAgent
	}
	return KindHook
}

// manifest asks the implementation for its Info. An empty Kind is filled in
// from what is served; a Kind that contradicts it is an error.
func (c ServeConfig) manifest(ctx context.Context) (Manifest, error) {
	if err := c.validate(); err != nil {
		return Manifest{}, err
	}
	var info Info
	var err error
	if c.Agent != nil {
		info, err = c.Agent.Info(ctx)
	} else {
		info, err = c.Hook.Info(ctx)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("info: %w", err)
	}
	if info.Kind == "" {
		info.Kind = c.kind()
	}
	if info.Kind != c.kind() {
		return Manifest{}, fmt.Errorf("info says kind %q but the plugin serves a %s", info.Kind, c.kind())
	}
	return Manifest{Info: info, ProtocolVersion: ProtocolVersion}, nil
}

// Serve serves a plugin and exits the process when the host is done with it.
// Call it from main:
//
//	func main() { plugins.Serve(plugins.ServeConfig{Hook: myHook{}}) }
//
// Serve first sends all logging (the slog default logger and the standard
// log package) to stderr as JSON that the host shows under the plugin's name;
// stdout belongs to the protocol, so a plugin must not write to it.
//
// Run with the single argument "describe", the binary prints its Manifest
// as JSON and exits 0, without a host.
func Serve(cfg ServeConfig) {
	os.Exit(serve(cfg, os.Args[1:], os.Stdout, os.Stderr))
}

// ServeHook serves h; see Serve.
func ServeHook(h Hook) { Serve(ServeConfig{Hook: h}) }

// ServeAgent serves a; see Serve.
func ServeAgent(a Agent) { Serve(ServeConfig{Agent: a}) }

// serve runs a plugin with the arguments after the program name and returns
// the exit code.
func serve(cfg ServeConfig, args []string, stdout, stderr io.Writer) int {
	logger := setUpLogging(stderr)
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "weave plugin: %v\n", err)
		return 2
	}
	switch {
	case len(args) == 1 && args[0] == "describe":
		return describe(cfg, stdout, stderr)
	case len(args) > 0:
		fmt.Fprintf(stderr, "weave plugin: unknown arguments %q: the only argument a plugin takes is \"describe\"\n", args)
		return 2
	}
	if os.Getenv(wire.MagicCookieKey) != wire.MagicCookieValue {
		fmt.Fprintf(stderr, "This is a Weave plugin: weave starts it when it needs it.\n"+
			"Put it in .weave/plugins/ or list it under plugins: in .weave/config.yaml,\n"+
			"or run it with the argument \"describe\" to see its manifest.\n")
		return 1
	}
	if orphaned() {
		fmt.Fprintf(stderr, "weave plugin: the host that started this plugin is gone; exiting\n")
		return 1
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: wire.Handshake(ProtocolVersion),
		Plugins:         goplugin.PluginSet{wire.PluginName: servedPlugin{cfg: cfg}},
		GRPCServer:      wire.NewServer,
		Logger:          logger,
	})
	return 0
}

func describe(cfg ServeConfig, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := cfg.manifest(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "weave plugin: describe: %v\n", err)
		return 1
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "weave plugin: describe: %v\n", err)
		return 1
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
		return 1
	}
	return 0
}

// orphaned reports whether the host that started this process has already
// died: the parent-death signal the host asks for is only armed once the
// child runs, so a host killed in between would leave the plugin behind.
func orphaned() bool {
	want, err := strconv.Atoi(os.Getenv(wire.EnvHostPID))
	if err != nil || want <= 0 {
		return false
	}
	return os.Getppid() != want
}

// hclogTimeFormat is the timestamp format the host's log reader expects.
const hclogTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// setUpLogging points slog's default logger and the log package at w as
// hclog-style JSON lines, and returns the hclog logger go-plugin uses.
func setUpLogging(w io.Writer) hclog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format(hclogTimeFormat))
			case slog.LevelKey:
				return slog.String("@level", hclogLevel(a.Value.Any()))
			case slog.MessageKey:
				return slog.Attr{Key: "@message", Value: a.Value}
			}
			return a
		},
	})
	slog.SetDefault(slog.New(h))
	log.SetFlags(0)
	log.SetOutput(slog.NewLogLogger(h, slog.LevelInfo).Writer())
	return hclog.New(&hclog.LoggerOptions{
		Output:     w,
		Level:      hclog.Debug,
		JSONFormat: true,
	})
}

func hclogLevel(v any) string {
	l, ok := v.(slog.Level)
	if !ok {
		return "info"
	}
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	default:
		return "error"
	}
}
