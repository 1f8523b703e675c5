// Package agents holds Weave's agent roles and the ways they do work: the
// runbook executor, which runs a plan task's shell blocks without a model,
// and the agent loop, which thinks with a model provider.
package agents
