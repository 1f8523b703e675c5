// Package host is the Weave process: one Host, opened once by Open and
// closed once by Close, owns the running parts and hands them to the
// commands. Its rooms, each a package:
//
//	host             Host (config, log, bus, supervisor, hooks, gate, tools,
//	  │              the model door), built-ins, review
//	  ├── busface    the host on the bus: opening it (URL, token, options),
//	  │              bus peers as hooks, delegation and agents served over
//	  │              the bus, loop status
//	  ├── chat       the model door every model call passes: chat.message,
//	  │              the conversations, compaction, model events, the
//	  │              .weave/sessions/<id>.jsonl transcripts and reading them
//	  ├── run        the start-work run: plan resolution, tasks, ticks,
//	  │              state.json, idle nudges, run events and loop events
//	  ├── tools      the one door every tool call passes: the capability
//	  │              gate, the tool hooks, the tools, delegation
//	  ├── supervisor plugin processes: start, restart with backoff, warm
//	  │              start, shutdown; imports nothing of weave but plugins
//	  └── model      model providers (one file each) on the official SDKs;
//	                 modeltest is a fake model server for tests
//
// Imports point down: run uses tools, chat uses run and tools, host uses
// them all; only cmd/weave imports host (and host/chat and host/busface,
// for the sessions, the events and the bus). busface imports neither host
// nor chat. Every child process (plugins, command hooks, blocks,
// bash calls, git) gets its environment, process group and kill sequence
// from internal/proc; every path under .weave/ and the user's directories
// comes from internal/layout.
package host
