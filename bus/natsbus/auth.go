package natsbus

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// Auth is how a Bus proves who it is to the NATS server and secures its
// connection. At most one credential kind is set. Secrets are held only in
// memory: the caller reads them from files or the environment, and a Bus
// never shows them (Redact).
type Auth struct {
	// CredsFile is a credentials file (user JWT and nkey seed).
	CredsFile string
	// NKeyFile holds an nkey seed (SU...); the server knows its public key.
	NKeyFile string
	// User and Password are a user's name and password.
	User, Password string
	// Token is an authentication token.
	Token string
	// CAFile, when set, is the PEM bundle that signs the server's
	// certificate; CertFile and KeyFile are a client certificate for a
	// server that verifies clients. Any of them turns TLS on. ServerName is
	// the name the server's certificate must carry when it is not the
	// URL's host.
	CAFile, CertFile, KeyFile, ServerName string
}

// kinds names the credential kinds set, for the one-kind check.
func (a Auth) kinds() []string {
	var out []string
	if a.CredsFile != "" {
		out = append(out, "a creds file")
	}
	if a.NKeyFile != "" {
		out = append(out, "an nkey seed file")
	}
	if a.User != "" || a.Password != "" {
		out = append(out, "a user and password")
	}
	if a.Token != "" {
		out = append(out, "a token")
	}
	return out
}

// options turns a into connect options. Files are read here, so a missing
// or unreadable one is reported before anything dials.
func (a Auth) options() ([]nats.Option, error) {
	if k := a.kinds(); len(k) > 1 {
		return nil, fmt.Errorf("NATS credentials: %s are set; give one kind only", strings.Join(k, " and "))
	}
	var out []nats.Option
	switch {
	case a.CredsFile != "":
		if err := readable(a.CredsFile, "creds file"); err != nil {
			return nil, err
		}
		out = append(out, nats.UserCredentials(a.CredsFile))
	case a.NKeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NKeyFile)
		if err != nil {
			// The error may quote the file; the file holds a seed, not
			// its text, but say only where it is.
			return nil, fmt.Errorf("NATS nkey seed file %s: not a readable seed (want a line starting SU)", a.NKeyFile)
		}
		out = append(out, opt)
	case a.User != "" || a.Password != "":
		if a.User == "" || a.Password == "" {
			return nil, errors.New("NATS user and password: both are needed (bus.nats.user, and bus.nats.password_file or bus.nats.password_env)")
		}
		out = append(out, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		out = append(out, nats.Token(a.Token))
	}
	if a.CAFile == "" && a.CertFile == "" && a.KeyFile == "" && a.ServerName == "" {
		return out, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: a.ServerName}
	if a.CAFile != "" {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, fmt.Errorf("NATS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("NATS CA file %s holds no PEM certificate", a.CAFile)
		}
		cfg.RootCAs = pool
	}
	if a.CertFile != "" || a.KeyFile != "" {
		if a.CertFile == "" || a.KeyFile == "" {
			return nil, errors.New("NATS client certificate: both the certificate and its key are needed (bus.nats.cert_file, bus.nats.key_file)")
		}
		cert, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("NATS client certificate %s: %w", a.CertFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return append(out, nats.Secure(cfg)), nil
}

func readable(path, what string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("NATS %s: %w", what, err)
	}
	return f.Close()
}
