package workers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The event types a coordinator and its workers exchange beside the
// contract net's own (collab.cfp, collab.proposal, collab.award), each sent
// with Request to the other side's mailbox (agent.<id>.replies), so that the
// sender learns from the ack whether it was taken.
const (
	// TypeAssign carries an Assignment from the coordinator to the worker
	// it awarded the task to, once the lease is recorded.
	TypeAssign = "work.assign"
	// TypeHeartbeat renews a worker's lease on a task.
	TypeHeartbeat = "work.heartbeat"
	// TypeResult hands a task's commit back to the coordinator.
	TypeResult = "work.result"
	// TypeBase asks the coordinator for the whole history of an award's
	// base (a BaseRequest): the bundle of what the worker lacked did not
	// fetch, since it does not hold the basis its bid named.
	TypeBase = "work.base"
)

// Buckets and object stores in JetStream.
const (
	// LeaseBucket holds one lease per awarded task (key <run>.<task>).
	LeaseBucket = "WEAVE_LEASES"
	// WorkerBucket holds one entry per connected worker (key: its name).
	WorkerBucket = "WEAVE_WORKERS"
	// BundleStore holds the code bundles: base-<commit> (a run's
	// integration head, whole history), base-<commit>-<basis> (what the
	// head has that basis, a base the worker holds, lacks),
	// result-<award> (a task's commit) and log-<award> (its output).
	BundleStore = "WEAVE_BUNDLES"
)

// offerPrefix starts the thread id of every call for proposals for a task;
// workers listen on OfferPattern.
const offerPrefix = "offer-"

// OfferPattern matches the broadcast topics of the calls for proposals.
const OfferPattern = "thread." + offerPrefix + "*.broadcast"

// Needs is what a task asks of the worker that runs it: labels (gpu,
// os=linux) it must all offer, and the category and model it must be able
// to run ("" means any).
type Needs struct {
	Labels   []string `json:"labels,omitempty"`
	Category string   `json:"category,omitempty"`
	Model    string   `json:"model,omitempty"`
}

// Offer is a task offered to the workers of a run: what the call for
// proposals carries and, once awarded, what the worker needs to run it.
type Offer struct {
	// Run names the run (the plan's name); Task is the task's ordinal.
	Run   string `json:"run"`
	Task  int    `json:"task"`
	Title string `json:"title"`
	Needs Needs  `json:"needs"`
	// Plan is the plan's markdown, from which the worker reads the task.
	Plan string `json:"plan,omitempty"`
	// Session is the run's session; Base the integration commit the task
	// starts from (its bundle is base-<Base>); Branch the task's branch.
	Session string `json:"session,omitempty"`
	Base    string `json:"base"`
	Branch  string `json:"branch"`
	// Attempt counts the task's attempts; AttemptID goes into its commit's
	// Weave-Attempt trailer.
	Attempt   int    `json:"attempt"`
	AttemptID string `json:"attempt_id"`
	// Remote, when set, is the URL of the git remote that carries the
	// code instead of the bundle store (run.remote): the base is at
	// refs/weave/base/<Base> there, and the worker pushes its commit to
	// refs/weave/results/<award>. Only a worker told that remote
	// (AgentOptions.Remotes) bids.
	Remote string `json:"remote,omitempty"`
	// Budget, when set, is what the task may still spend on model calls
	// (the least of what is left of the run's, the plan's and the task's
	// budgets): the worker's run of the task holds every call to it, as a
	// local task is held to its budget, and a call that could cross it
	// stops the task (Result.Spend.Stop). Part of the digest the lease
	// keeps: a worker runs under the allowance the coordinator awarded.
	Budget *Allowance `json:"budget,omitempty"`
}

// Allowance is what a task may still spend on model calls, in US dollars
// (host/budget's Allowance on the wire).
type Allowance struct {
	USD float64 `json:"usd"`
	// Scope (run, plan or task), Limit and Spent name the budget that
	// leaves least, as the coordinator reckoned it; a refusal on the worker
	// names it.
	Scope string  `json:"scope"`
	Limit float64 `json:"limit"`
	Spent float64 `json:"spent"`
	// Unpriced counts the calls of unknown price behind Spent.
	Unpriced int `json:"unpriced,omitempty"`
}

// Spend is what a task's model calls cost on the worker, as the worker
// says: the coordinator charges it to its own ledger, never more than the
// offer's allowance.
type Spend struct {
	// USD is what the calls of known price cost; Calls counts the calls,
	// Unknown those whose price was unknown (in no figure: never zero).
	USD     float64 `json:"usd"`
	Calls   int     `json:"calls,omitempty"`
	Unknown int     `json:"unknown,omitempty"`
	// Stop, when set, is the model call the task's budget refused, which
	// ended the task: the coordinator pauses the run on it.
	Stop *BudgetStop `json:"stop,omitempty"`
}

// BudgetStop is a model call refused because it could cross the task's
// allowance, or because its model had no known price.
type BudgetStop struct {
	Model string `json:"model,omitempty"`
	// Need is the call's worst case in US dollars.
	Need    float64 `json:"need"`
	NoPrice bool    `json:"no_price,omitempty"`
}

// Key is the offer's lease key: <run>.<task>.
func (o Offer) Key() string { return keyToken(o.Run) + "." + strconv.Itoa(o.Task) }

// Digest names the offer's content (sha256 of its JSON), which a lease
// records so that a worker can tell that the assignment it holds is the
// one awarded.
func (o Offer) Digest() string {
	data, _ := json.Marshal(o) // plain fields: never fails
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Assignment is an awarded offer: the offer, the award's id (one per
// award: a task offered again gets a new one) and who awarded it.
type Assignment struct {
	Offer
	Award       string        `json:"award"`
	Coordinator string        `json:"coordinator"`
	Lease       time.Duration `json:"lease"`
	// Token is the award's secret: sent only in the assignment (a request
	// to the worker's own process, never on a broadcast), it must come
	// with every heartbeat and result. The lease keeps its hash.
	Token string `json:"token"`
	// Basis says which bundle of the base the worker fetches: "" the
	// whole history (base-<Base>); Base itself, none (the worker's bid
	// said it holds it); another commit, a base the bid said the worker
	// holds, only what Base has beyond it (base-<Base>-<Basis>).
	Basis string `json:"basis,omitempty"`
	// Bundle, when set, is the bundle of Base over Basis itself, small
	// enough to travel here rather than in the bundle store (basis.go).
	Bundle []byte `json:"bundle,omitempty"`
}

// BaseRequest asks for the whole history of an award's base (TypeBase),
// with the award's token.
type BaseRequest struct {
	Key    string `json:"key"`
	Award  string `json:"award"`
	Worker string `json:"worker"`
	Token  string `json:"token"`
}

// TokenHash is what a lease keeps of an award's token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte("weave-award-token\x00" + token))
	return hex.EncodeToString(sum[:])
}

// Bid is what a worker says of itself in a proposal; the proposal's score
// is its fit.
type Bid struct {
	Worker string `json:"worker"`
	// Decline, when set, says why the worker cannot take the task: it
	// answers every call, so that the call closes once every live worker
	// has (its proposal's score is -1 and it is never awarded).
	Decline string   `json:"decline,omitempty"`
	Labels  []string `json:"labels,omitempty"`
	Slots   int      `json:"slots"`
	Busy    int      `json:"busy"`
	// Bases are bases of earlier tasks the worker holds, newest first: the
	// coordinator sends it only what the task's base has beyond one of
	// them. A claim, never trusted: a bundle whose basis the worker lacks
	// does not fetch, and the worker asks for the whole history.
	Bases []string `json:"bases,omitempty"`
}

// Heartbeat renews the lease of award.
type Heartbeat struct {
	Key    string `json:"key"`
	Award  string `json:"award"`
	Worker string `json:"worker"`
	Token  string `json:"token"`
}

// Result is a worker's answer to an assignment: the commit (its bundle in
// the store as result-<award>) or why there is none.
type Result struct {
	Key    string `json:"key"`
	Award  string `json:"award"`
	Worker string `json:"worker"`
	Token  string `json:"token,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Error says why the task has no commit ("" when it has one).
	Error string `json:"error,omitempty"`
	// Spend is what the task's model calls cost, as the worker's Exec
	// reported it (ReportSpend); nil when it reported nothing.
	Spend *Spend `json:"spend,omitempty"`
	// Steps is how long each step of the task took, for the figures: the
	// worker's own (BaseIn, Run, BundleBack) as it says, the
	// coordinator's filled in by Offer.
	Steps Steps `json:"steps"`
	// Inline says the commit's bundle (when there is a commit) and the
	// task's output travel here, in Bundle and Log, rather than in the
	// bundle store: they were small (inline.go).
	Inline bool   `json:"inline,omitempty"`
	Bundle []byte `json:"bundle,omitempty"`
	Log    []byte `json:"log,omitempty"`
}

// Steps is the time each step of a task offered to a worker took.
type Steps struct {
	// BundleOut: the wait for the base bundle to be stored once the call
	// for proposals ended (it is stored while the call runs; nothing when
	// stored already).
	BundleOut time.Duration `json:"bundle_out,omitempty"`
	// Award: the call for proposals opened to the assignment taken
	// (BundleOut included).
	Award time.Duration `json:"award,omitempty"`
	// BaseIn: the worker fetched the base (nothing when it had it).
	BaseIn time.Duration `json:"base_in,omitempty"`
	// Run: the worker ran the task (its Exec).
	Run time.Duration `json:"run,omitempty"`
	// BundleBack: the worker stored the result bundle.
	BundleBack time.Duration `json:"bundle_back,omitempty"`
	// Fetch: the coordinator fetched the result bundle and checked it.
	Fetch time.Duration `json:"fetch,omitempty"`
}

// Overhead is the coordinator's share of a task: everything but the
// worker's run.
func (s Steps) Overhead() time.Duration { return s.Award + s.Fetch }

// String lists the steps in milliseconds.
func (s Steps) String() string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	return "bundle out " + ms(s.BundleOut) + " ms, offer to award " + ms(s.Award) + " ms, base in " + ms(s.BaseIn) +
		" ms, run " + ms(s.Run) + " ms, bundle back " + ms(s.BundleBack) + " ms, fetch " + ms(s.Fetch) + " ms"
}

func bundleName(kind, id string) string { return kind + "-" + id }

// baseBundleName names the bundle of base over basis: "" is the whole
// history.
func baseBundleName(base, basis string) string {
	if basis == "" {
		return bundleName("base", base)
	}
	return bundleName("base", base) + "-" + basis
}

// keyToken makes s usable inside a KV key and a topic: letters, digits,
// '-' and '_' stay, anything else becomes '_'.
func keyToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

func decode[T any](what string, raw json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}
