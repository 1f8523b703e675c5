package supervisor

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/weavehq/weave/plugins"
)

// benchEvent matches pluginhost's BenchmarkBareGRPCUnix, the floor.
func benchEvent() plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "bench-session", Agent: "tapestry", Cwd: "/work/project",
		Tool: plugins.ToolBash, Args: map[string]any{"command": "go test ./...", "timeout": 120},
		Time: time.Unix(1700000000, 0).UTC()}
}

func reportP50(b *testing.B, durs []time.Duration) {
	b.Helper()
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "p50-ns")
}

func benchSupervisor(b *testing.B) *Supervisor {
	b.Helper()
	s, err := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, supEntry("bench", "hook"))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPluginColdStart measures a plugin's start, from nothing running
// to the answer of its first Info call; its shutdown is not timed.
func BenchmarkPluginColdStart(b *testing.B) {
	ctx := context.Background()
	durs := make([]time.Duration, 0, b.N)
	for b.Loop() {
		s := benchSupervisor(b)
		start := time.Now()
		if _, err := s.Hook("bench").Info(ctx); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		// Shutting down is not part of starting: keep it off the clock.
		b.StopTimer()
		if err := s.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportP50(b, durs)
}

// BenchmarkHookRoundTrip measures Hook.Handle on a started plugin through the
// supervisor: conversion, go-plugin's gRPC over a Unix socket, and back.
func BenchmarkHookRoundTrip(b *testing.B) {
	ctx := context.Background()
	s := benchSupervisor(b)
	defer s.Close(ctx)
	hook := s.Hook("bench")
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
