// Package host is the Weave process: one Host, opened once by Open and
// closed once by Close, owns the running parts and hands them to the
// commands. Its rooms, each a package:
//
//	host             Host (config, log, bus, supervisor, hooks, gate, tools),
//	  │              bus wiring (bus peers as hooks and agents), built-ins
//	  ├── run        the start-work run: plan resolution, tasks, ticks,
//	  │              state.json, idle nudges, run events and loop events
//	  ├── tools      the one door every tool call passes: the capability
//	  │              gate, the tool hooks, the tools, delegation
//	  ├── supervisor plugin processes: start, restart with backoff, warm
//	  │              start, shutdown; imports nothing of weave but plugins
//	  └── model      model providers (one file each) on the official SDKs;
//	                 modeltest is a fake model server for tests
//
// The host's model service (modelservice.go) answers plugins.Host.Complete
// with the configured provider: it streams model events to observers and
// the bus, fires chat.message, and writes .weave/sessions/<id>.jsonl.
//
// Imports point down: run uses tools, host uses all three; only cmd/weave
// imports host. Every child process (plugins, command hooks, blocks, bash
// calls, git) gets its environment, process group and kill sequence from
// internal/proc; every path under .weave/ and the user's directories comes
// from internal/layout.
package host
