package busface

import (
	"fmt"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/config"
)

// TestNATSCredsFile: in operator mode (JWTs, as nsc sets up) weave joins
// with a creds file, and without it is refused.
func TestNATSCredsFile(t *testing.T) {
	must := func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	op, _ := nkeys.CreateOperator()
	opPub := must(op.PublicKey())
	opJWT := must(jwt.NewOperatorClaims(opPub).Encode(op))

	sys, _ := nkeys.CreateAccount()
	sysPub := must(sys.PublicKey())
	sysJWT := must(jwt.NewAccountClaims(sysPub).Encode(op))

	acct, _ := nkeys.CreateAccount()
	acctPub := must(acct.PublicKey())
	ac := jwt.NewAccountClaims(acctPub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	acctJWT := must(ac.Encode(op))

	user, _ := nkeys.CreateUser()
	uc := jwt.NewUserClaims(must(user.PublicKey()))
	uc.IssuerAccount = acctPub
	userJWT := must(uc.Encode(acct))
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		t.Fatal(err)
	}

	conf := fmt.Sprintf("operator: %s\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: %s\n  %s: %s\n}\n",
		opJWT, sysPub, sysPub, sysJWT, acctPub, acctJWT)
	url := bustest.StartNATSConfig(t, conf).URL()
	if err := openNATS(t, config.Default(), url); err == nil {
		t.Fatal("joined without credentials")
	}
	cfg := config.Default()
	cfg.Bus.NATS.CredsFile = writeFile(t, "weave.creds", string(creds))
	if err := openNATS(t, cfg, url); err != nil {
		t.Fatalf("with a creds file: %v", err)
	}
}
