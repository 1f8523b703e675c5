package model

import (
	"github.com/openai/openai-go/v3/option"
)

// geminiBaseURL is Google's OpenAI-compatible endpoint for the Gemini API.
//
// Gemini is spoken through it, with the OpenAI SDK weave already carries,
// rather than through Google's own Go SDK (google.golang.org/genai): the
// endpoint takes Chat Completions with tools, streams and usage, its
// reasoning_effort and thinking budget included, so Gemini needs no new
// dependency and no third conversion of the conversation, and every fix
// made for the OpenAI wire (tool-call deltas, finish reasons, streams cut
// short) holds for it too.
const geminiBaseURL = "https://generativelanguage.googleapis.com/v1beta/openai/"

// newGemini is the OpenAI wire pointed at Gemini, the key sent as a bearer
// token as that endpoint wants it.
func newGemini(s Settings) Provider {
	base := s.BaseURL
	if base == "" {
		base = geminiBaseURL
	}
	opts := []option.RequestOption{option.WithBaseURL(base)}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	p := openAIWire(s, opts...)
	// Its endpoint knows max_tokens, as other compatible servers do.
	p.compatible = true
	p.thinking = s.ThinkingBudget
	return p
}
