package bus

import (
	"testing"
	"time"
)

func TestPolicyStops(t *testing.T) {
	tests := []struct {
		policy Policy
		ack    Ack
		want   bool
	}{
		{StopOnProcessed, Ack{Processed: true}, true},
		{StopOnProcessed, Ack{StopPropagation: true}, true},
		{StopOnProcessed, Ack{}, false},
		{"", Ack{Processed: true}, true},
		{StopOnStop, Ack{Processed: true}, false},
		{StopOnStop, Ack{StopPropagation: true}, true},
		{ContinueAll, Ack{Processed: true, StopPropagation: true}, false},
	}
	for _, tt := range tests {
		if got := tt.policy.Stops(tt.ack); got != tt.want {
			t.Errorf("Policy(%q).Stops(%+v) = %v, want %v", tt.policy, tt.ack, got, tt.want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"", "stopPropagationOnProcessed", "stopPropagationOnStop", "continueAll"} {
		if p, err := ParsePolicy(s); err != nil || string(p) != s {
			t.Errorf("ParsePolicy(%q) = %q, %v, want %q, nil", s, p, err, s)
		}
	}
	for _, s := range []string{"continueall", "stop", " continueAll"} {
		if _, err := ParsePolicy(s); err == nil {
			t.Errorf("ParsePolicy(%q) = nil error, want an error", s)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	const fallback, max = time.Second, time.Minute
	tests := []struct {
		ack  Ack
		want time.Duration
	}{
		{Ack{Error: "x"}, fallback},
		{Ack{ShouldRetry: true}, 0},
		{Ack{ShouldRetry: true, RetrySeconds: -3}, 0},
		{Ack{ShouldRetry: true, RetrySeconds: 5}, 5 * time.Second},
		{Ack{ShouldRetry: true, RetrySeconds: 0.25}, 250 * time.Millisecond},
		{Ack{ShouldRetry: true, RetrySeconds: 1e12}, max},
	}
	for _, tt := range tests {
		if got := retryDelay(tt.ack, fallback, max); got != tt.want {
			t.Errorf("retryDelay(%+v) = %v, want %v", tt.ack, got, tt.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"defaults", DefaultOptions(), true},
		{"bad policy", Options{DefaultPolicy: "sometimes"}, false},
		{"bad retained", Options{Retained: []string{"loop:[x"}}, false},
		{"bad append-only", Options{AppendOnly: []string{""}}, false},
	}
	for _, tt := range tests {
		err := tt.opts.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if _, err := NewMemory(tt.opts); (err == nil) != tt.ok {
			t.Errorf("%s: NewMemory() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
