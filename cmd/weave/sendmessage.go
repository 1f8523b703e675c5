package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/host/busface"
)

type sendMessageOptions struct {
	*globalOptions
	Streams        *Streams
	Bus            string
	Topic          string
	Payload        string
	Headers        []string
	IdempotencyKey string
}

func newCmdSendMessage(g *globalOptions, s *Streams) *cobra.Command {
	opts := &sendMessageOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "send-message --topic T --payload @FILE|-|JSON [--bus URL]",
		Short: "Send a message through a bus's subscribers and print their acks as JSON",
		Long: `Send one message to a running bus and walk its subscribers as a request:
each matching subscriber is called in turn (newest subscription first) until
one's propagation policy stops the walk. Prints the result as JSON: delivered,
processed, stop_propagation and each subscriber's ack.

The payload is a JSON object with a string field "type" (the bus protocol
requires it), given inline, as @FILE, or as - for standard input. The bus is
--bus URL, else bus.url, else WEAVE_BUS_URL: ws://HOST:PORT for a
` + "`weave bus serve`" + `, nats://HOST:PORT for a nats bus.

Exit codes: 0 when a subscriber processed the message (or an append-only
topic stored it, or it was a duplicate), 1 when nothing processed it or a
receiver answered with an error (an "error" in its result, as an agent's
{"output": "...", "error": "..."}), 2 usage.`,
		Example: `  weave send-message --bus ws://127.0.0.1:7777 --topic agent:thread \
      --payload '{"type":"agent.request","prompt":"where is the config loaded?"}'
  echo '{"type":"plaintext_message","text":"hi"}' | weave send-message --topic inbound:chat-1 --payload -`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			return sendMessageRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Bus, "bus", "", "bus URL (ws:// or nats://); default bus.url or "+busface.URLEnv)
	cmd.Flags().StringVar(&opts.Topic, "topic", "", "topic to send on (e.g. agent:thread)")
	cmd.Flags().StringVar(&opts.Payload, "payload", "", `payload: inline JSON, @FILE, or - for stdin; an object with a "type"`)
	cmd.Flags().StringArrayVar(&opts.Headers, "header", nil, "header KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&opts.IdempotencyKey, "idempotency-key", "", "deliver at most once per topic and key within bus.idempotency_window")
	return cmd
}

// sendOutput is what send-message prints.
type sendOutput struct {
	Topic           string    `json:"topic"`
	MessageID       string    `json:"message_id,omitempty"`
	Delivered       int       `json:"delivered"`
	Processed       bool      `json:"processed"`
	StopPropagation bool      `json:"stop_propagation"`
	Acks            []bus.Ack `json:"acks"`
	DeadLettered    bool      `json:"dead_lettered,omitempty"`
	Duplicate       bool      `json:"duplicate,omitempty"`
	Offset          uint64    `json:"offset,omitempty"`
}

func sendMessageRun(ctx context.Context, opts *sendMessageOptions) error {
	if opts.Topic == "" {
		return usageErrorf("send-message needs --topic T (e.g. --topic agent:thread)")
	}
	if err := bus.ValidateTopic(opts.Topic); err != nil {
		return usageErrorf("--topic: %v", err)
	}
	payload, err := readPayload(opts.Payload, opts.Streams.In)
	if err != nil {
		return err
	}
	headers := map[string]string{}
	for _, h := range opts.Headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return usageErrorf("--header %q is not KEY=VALUE", h)
		}
		headers[k] = v
	}
	b, closeBus, err := openBusFlag(ctx, opts.globalOptions, opts.Bus, "send to")
	if err != nil {
		return err
	}
	defer closeBus()
	m := bus.Message{Topic: opts.Topic, Payload: payload, IdempotencyKey: opts.IdempotencyKey}
	if len(headers) > 0 {
		m.Headers = headers
	}
	res, err := b.Request(ctx, m)
	if err != nil {
		return err
	}
	out := sendOutput{
		Topic: opts.Topic, MessageID: res.MessageID, Delivered: res.Delivered, Processed: res.Processed(),
		StopPropagation: res.Stopped, Acks: res.Acks, DeadLettered: res.DeadLettered, Duplicate: res.Duplicate, Offset: res.Offset,
	}
	if out.Acks == nil {
		out.Acks = []bus.Ack{}
	}
	if err := busJSON(opts.Streams.Out, out); err != nil {
		return err
	}
	if who, msg := answeredWithError(out.Acks); who != "" {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s answered with an error: %s", who, msg)}
	}
	switch {
	case out.Processed, out.Duplicate, out.Offset > 0:
		return nil
	case out.Delivered == 0:
		return &exitError{code: exitFailed, err: fmt.Errorf("nothing on the bus is subscribed to %s; the message was not processed", opts.Topic)}
	default:
		return &exitError{code: exitFailed, err: fmt.Errorf("no subscriber of %s processed the message (see the acks)", opts.Topic)}
	}
}

// readPayload reads --payload (inline, @FILE or -) and checks that it is a
// JSON object with a non-empty string "type".
func readPayload(arg string, stdin io.Reader) (json.RawMessage, error) {
	var data []byte
	src := "--payload"
	switch {
	case arg == "":
		return nil, usageErrorf(`send-message needs --payload: inline JSON, @FILE or - for stdin (e.g. --payload '{"type":"plaintext_message","text":"hi"}')`)
	case arg == "-":
		src = "the payload on stdin"
		if stdin == nil {
			return nil, usageErrorf("--payload -: no standard input")
		}
		var err error
		if data, err = io.ReadAll(stdin); err != nil {
			return nil, fmt.Errorf("read the payload from stdin: %w", err)
		}
	case strings.HasPrefix(arg, "@"):
		src = "the payload in " + arg[1:]
		var err error
		if data, err = os.ReadFile(arg[1:]); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, usageErrorf("--payload %s: no such file", arg)
			}
			return nil, fmt.Errorf("read the payload: %w", err)
		}
	default:
		data = []byte(arg)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || len(strings.TrimSpace(string(data))) == 0 {
			return nil, usageErrorf("%s is not valid JSON: %v", src, err)
		}
		return nil, usageErrorf(`%s must be a JSON object with a "type", e.g. {"type":"plaintext_message","text":"hi"}`, src)
	}
	if obj == nil {
		return nil, usageErrorf(`%s must be a JSON object with a "type", e.g. {"type":"plaintext_message","text":"hi"}`, src)
	}
	if t, ok := obj["type"].(string); !ok || strings.TrimSpace(t) == "" {
		return nil, usageErrorf(`%s has no "type": the bus requires a string field "type" (e.g. "plaintext_message")`, src)
	}
	return json.RawMessage(strings.TrimSpace(string(data))), nil
}

// answeredWithError finds the first receiver that answered with an error of
// its own: an "error" in its result. A handler that failed outright is not
// an answer; the bus retries it and the exit code says nothing processed.
func answeredWithError(acks []bus.Ack) (who, msg string) {
	for _, a := range acks {
		var r struct {
			Error any `json:"error"`
		}
		if len(a.Result) == 0 || json.Unmarshal(a.Result, &r) != nil {
			continue
		}
		switch e := r.Error.(type) {
		case string:
			if e != "" {
				return a.Subscriber, e
			}
		case map[string]any:
			if m, _ := e["message"].(string); m != "" {
				return a.Subscriber, m
			}
			return a.Subscriber, "(no message)"
		}
	}
	return "", ""
}
