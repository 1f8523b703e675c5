package chat

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/internal/price"
	"github.com/weavehq/weave/plugins"
)

// Cost is money spent on model calls, summed. It is unknown as soon as one
// call's price was unknown: such a cost is shown as "?" and written as
// null, never as zero.
type Cost struct {
	USD     float64
	Unknown bool
}

// Add adds c2 to c.
func (c *Cost) Add(c2 Cost) {
	c.USD += c2.USD
	c.Unknown = c.Unknown || c2.Unknown
}

// String is the cost as people read it: "$0.0123", or "?".
func (c Cost) String() string { return price.Format(c.USD, !c.Unknown) }

// ptr is the dollars, or nil when unknown.
func (c Cost) ptr() *float64 {
	if c.Unknown {
		return nil
	}
	return &c.USD
}

// MarshalJSON writes the dollars, or null when unknown.
func (c Cost) MarshalJSON() ([]byte, error) {
	if c.Unknown {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, c.USD, 'f', -1, 64), nil
}

// UnmarshalJSON reads dollars or null.
func (c *Cost) UnmarshalJSON(b []byte) error {
	var v *float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Cost{Unknown: v == nil}
	if v != nil {
		c.USD = *v
	}
	return nil
}

// lineCost is what a usage line of the transcript says its call cost.
func lineCost(line SessionLine) Cost {
	if line.CostUSD == nil {
		u := line.Usage
		return Cost{Unknown: u != nil && *u != (plugins.Usage{})}
	}
	return Cost{USD: *line.CostUSD}
}

// budgetMaxTokens bounds an answer under a budget when neither the
// request nor model.max_tokens does, so that its worst case is known.
const budgetMaxTokens = model.DefaultAnthropicMaxTokens

// PriceTable is the price table config gives: the defaults with its
// prices: laid over them.
func PriceTable(cfg *config.Config) price.Table {
	over := make(map[string]price.Price, len(cfg.Prices))
	for name, p := range cfg.Prices {
		over[name] = price.Price{Input: orUnknown(p.Input), Output: orUnknown(p.Output), CacheRead: orUnknown(p.CacheRead), CacheWrite: orUnknown(p.CacheWrite)}
	}
	return price.NewTable(over)
}

func orUnknown(v *float64) float64 {
	if v == nil {
		return price.Unknown
	}
	return *v
}

// pricing is what the door needs to price its calls.
type pricing struct {
	table price.Table
	// model is model.name, for a request that names none.
	model string
	// inputHoldsCache: the provider counts cache reads in its input
	// tokens (the OpenAI wire).
	inputHoldsCache bool
	// maxTokens is model.max_tokens; 0: none set.
	maxTokens int
}

func newPricing(cfg *config.Config) pricing {
	return pricing{table: PriceTable(cfg), model: cfg.Model.Name, inputHoldsCache: cfg.Model.Provider != "anthropic", maxTokens: cfg.Model.MaxTokens}
}

// forRoute is p for the calls that go to r: its model and how its vendor
// counts cached tokens.
func (p pricing) forRoute(r model.Route) pricing {
	if r.Model != "" {
		p.model = r.Model
	}
	if r.Provider != "" {
		p.inputHoldsCache = r.Provider != "anthropic"
	}
	return p
}

// priceFor is how the calls naming name (a model entry, a model, or ""
// for the default) are priced.
func (d *Door) priceFor(name string) pricing {
	r := d.set.Route(name)
	if r.Err != nil {
		return d.price
	}
	return d.price.forRoute(r)
}

// cost is what an answer cost; unknown when its model has no price.
func (p pricing) cost(asked string, resp plugins.ChatResponse) Cost {
	pr, ok := p.table.Lookup(resp.Model)
	if !ok {
		pr, ok = p.table.Lookup(p.name(asked))
	}
	if !ok {
		// asked may name a model entry; p knows the model it routes to.
		pr, ok = p.table.Lookup(p.model)
	}
	if !ok {
		return Cost{Unknown: true}
	}
	usd, known := pr.Cost(resp.Usage, p.inputHoldsCache)
	return Cost{USD: usd, Unknown: !known}
}

func (p pricing) name(asked string) string {
	if asked != "" {
		return asked
	}
	return p.model
}

// worst is the most req can cost: its input (estimated from its bytes,
// three to a token, fewer than any tokenizer's average) and its whole
// max_tokens.
func (p pricing) worst(req plugins.ChatRequest) (float64, bool) {
	pr, ok := p.table.Lookup(p.name(req.Model))
	if !ok {
		return 0, false
	}
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Tool) + len(tc.Args)
		}
	}
	if b, err := json.Marshal(req.Tools); err == nil {
		n += len(b)
	}
	return pr.Worst(int64(n/3+1), int64(req.MaxTokens))
}

// budgeted is a provider whose calls are checked against the ledger's
// budgets before they are made and charged to it after.
type budgeted struct {
	p      model.Provider
	ledger *budget.Ledger
	price  pricing
}

func (b budgeted) Complete(ctx context.Context, req plugins.ChatRequest, onDelta func(model.Delta)) (plugins.ChatResponse, error) {
	// The task a call is for comes with ctx when tasks run at once
	// (budget.Ledger.Scope); a lone run's is the one it entered.
	end := func(usd float64, known, charged bool) {
		if charged {
			b.ledger.ChargeFor(ctx, usd, known)
		}
	}
	if b.ledger.ActiveFor(ctx) {
		if req.MaxTokens <= 0 {
			req.MaxTokens = b.price.maxTokens
		}
		if req.MaxTokens <= 0 {
			req.MaxTokens = budgetMaxTokens
		}
		worst, known := b.price.worst(req)
		// The call's worst case is held against the budgets while it is
		// under way, so that calls made at once cannot cross one together.
		var err error
		if end, err = b.ledger.Begin(ctx, b.price.name(req.Model), worst, known); err != nil {
			return plugins.ChatResponse{}, err
		}
		// A task handed out by a coordinator elsewhere holds the worst case
		// in the coordinator's ledger too, where the run's and the plan's
		// budgets are shared with every other call under way; a refusal
		// there, or no answer, and the call is not made.
		settle, err := b.ledger.HoldFor(ctx, b.price.name(req.Model), worst)
		if err != nil {
			end(0, true, false)
			return plugins.ChatResponse{}, err
		}
		local := end
		end = func(usd float64, known, charged bool) {
			settle(usd, known, charged)
			local(usd, known, charged)
		}
	}
	resp, err := b.p.Complete(ctx, req, onDelta)
	if err != nil {
		end(0, true, false)
		return resp, err
	}
	c := b.price.cost(req.Model, resp)
	end(c.USD, !c.Unknown, true)
	return resp, nil
}

// withBudget has p's calls kept within the ledger's budgets; nil ledger or
// provider: p as it is.
func withBudget(p model.Provider, ledger *budget.Ledger, pr pricing) model.Provider {
	if p == nil || ledger == nil {
		return p
	}
	return budgeted{p: p, ledger: ledger, price: pr}
}
