package model

import (
	"net"
	"net/url"

	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// newAzure is the OpenAI wire as Azure OpenAI serves it, through the
// official SDK's azure options: the key in an api-key header (never
// Authorization), the path /openai/deployments/<deployment>/chat/completions
// and ?api-version= on every request. The deployment is the model the
// request names, model.azure.deployment or else model.name.
func newAzure(s Settings) Provider {
	endpoint := s.Azure.Endpoint
	if endpoint == "" {
		endpoint = s.BaseURL
	}
	opts := []option.RequestOption{azure.WithEndpoint(endpoint, s.Azure.APIVersion), azure.WithAPIKey(s.APIKey)}
	if plainLoopback(endpoint) {
		// The SDK sends a key over plain HTTP only to this machine (a
		// local gateway, a test server), and only when told so.
		opts = append(opts, azure.WithUnsafeAllowHTTP())
	}
	p := openAIWire(s, opts...)
	p.deployment = s.Azure.Deployment
	p.unlisted = true
	return p
}

// plainLoopback reports whether endpoint is http:// to a loopback address.
func plainLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}
