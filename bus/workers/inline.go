package workers

import (
	"bytes"
	"context"
)

// A task's result is small most of the time: a commit's bundle of a few
// kilobytes, a few lines of output. It then travels in the result message
// itself (Result.Inline), where the bundle store cost a worker two stores
// and the coordinator two reads and two removals, each several round
// trips to JetStream. A result larger than inlineMax, together, goes
// through the store as before. Either way the coordinator checks the
// bundle as it does any (fetchResult), and takes the result only from the
// worker holding the award, with its token.

// inlineMax bounds the bundle and the output a result carries itself;
// JSON makes a third more of them, well under NATS's usual 1 MiB message.
const inlineMax = 256 << 10

// resultBundle is the bundle of the task's commit over its base, returned
// to travel in the result when it is small enough (attach decides), else
// stored as result-<award> and nil.
func (a *Agent) resultBundle(ctx context.Context, as Assignment, commit string) ([]byte, error) {
	var buf bytes.Buffer
	if err := a.repo.Bundle(ctx, &buf, commit, as.Base); err != nil {
		return nil, err
	}
	if buf.Len() <= inlineMax {
		return buf.Bytes(), nil
	}
	return nil, a.store.Put(ctx, bundleName("result", as.Award), buf.Bytes())
}

// attach puts the task's bundle (nil when stored already, or when there is
// no commit) and its output in the result when both fit, else stores
// them.
func (a *Agent) attach(ctx context.Context, res *Result, bundle, log []byte) {
	if (res.Commit == "" || bundle != nil) && len(bundle)+len(log) <= inlineMax {
		res.Inline, res.Bundle, res.Log = true, bundle, log
		if res.Commit == "" {
			res.Bundle = nil
		}
		return
	}
	if res.Commit != "" && bundle != nil {
		_ = a.store.Put(ctx, bundleName("result", res.Award), bundle)
	}
	_ = a.store.Put(ctx, bundleName("log", res.Award), log)
}
