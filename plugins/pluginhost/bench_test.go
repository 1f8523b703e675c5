package pluginhost

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weavehq/weave/plugins"
	pb "github.com/weavehq/weave/plugins/internal/proto/weave/v1"
)

// benchEvent is the event the round-trip benchmarks send (the same in
// host/supervisor's BenchmarkHookRoundTrip).
func benchEvent() plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "bench-session", Agent: "tapestry", Cwd: "/work/project",
		Tool: plugins.ToolBash, Args: map[string]any{"command": "go test ./...", "timeout": 120},
		Time: time.Unix(1700000000, 0).UTC()}
}

type floorHook struct{ pb.UnimplementedHookServer }

func (floorHook) Handle(context.Context, *pb.HookHandleRequest) (*pb.Decision, error) {
	return &pb.Decision{Action: string(plugins.Allow)}, nil
}

// BenchmarkBareGRPCUnix is the floor for a hook round trip: the same
// Hook.Handle message on bare gRPC over a Unix socket, with no go-plugin, no
// conversion and no supervisor.
func BenchmarkBareGRPCUnix(b *testing.B) {
	sock := filepath.Join(b.TempDir(), "floor.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterHookServer(srv, floorHook{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	client := pb.NewHookClient(cc)
	pev, err := shared.EventToProto(benchEvent())
	if err != nil {
		b.Fatal(err)
	}
	req := &pb.HookHandleRequest{Event: pev}
	ctx := context.Background()
	if _, err := client.Handle(ctx, req); err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := client.Handle(ctx, req); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	reportP50(b, durs)
}

// reportP50 reports the median of durs as p50-ns.
func reportP50(b *testing.B, durs []time.Duration) {
	b.Helper()
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkHookRoundTripInProcess is Hook.Handle through go-plugin's gRPC
// client and server and package plugins' conversions, with both ends in this
// process: the cost of the contract without the process boundary.
func BenchmarkHookRoundTripInProcess(b *testing.B) {
	client, _ := goplugin.TestPluginGRPCConn(b, false, PluginSet("bench", plugins.ServeConfig{Hook: testHook{info: plugins.Info{Name: "bench", Events: []string{plugins.EventToolExecuteBefore}}}}))
	defer client.Close()
	conn, err := Dispense(client)
	if err != nil {
		b.Fatal(err)
	}
	hook := conn.Hook()
	ctx := context.Background()
	ev := benchEvent()
	if _, err := hook.Handle(ctx, ev); err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := hook.Handle(ctx, ev); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	reportP50(b, durs)
}

const floorSockEnv = "WEAVE_BENCH_FLOOR_SOCK"

// TestFloorServerProcess is the server of BenchmarkBareGRPCUnixSubprocess
// when run with WEAVE_BENCH_FLOOR_SOCK set.
func TestFloorServerProcess(t *testing.T) {
	sock := os.Getenv(floorSockEnv)
	if sock == "" {
		t.Skip("server process for BenchmarkBareGRPCUnixSubprocess")
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterHookServer(srv, floorHook{})
	_ = srv.Serve(ln)
}

// BenchmarkBareGRPCUnixSubprocess is BenchmarkBareGRPCUnix with the server in
// another process: the floor including the process boundary every plugin
// call crosses.
func BenchmarkBareGRPCUnixSubprocess(b *testing.B) {
	sock := filepath.Join(b.TempDir(), "floor.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloorServerProcess$")
	cmd.Env = append(os.Environ(), floorSockEnv+"="+sock)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	client := pb.NewHookClient(cc)
	pev, err := shared.EventToProto(benchEvent())
	if err != nil {
		b.Fatal(err)
	}
	req := &pb.HookHandleRequest{Event: pev}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Wait for the server to listen.
	if _, err := client.Handle(ctx, req, grpc.WaitForReady(true)); err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := client.Handle(ctx, req); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	reportP50(b, durs)
}
