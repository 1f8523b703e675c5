package plans

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Verdict is what the start-work decision procedure concluded.
type Verdict string

// The verdicts of Resolve.
const (
	// Start: begin the named or sole incomplete plan.
	VerdictStart Verdict = "start"
	// Resume: continue the plan recorded in state.json.
	VerdictResume Verdict = "resume"
	// Complete: the named plan has no unchecked task.
	VerdictComplete Verdict = "complete"
	// NotFound: no plan matches the name; Plans lists the incomplete ones.
	VerdictNotFound Verdict = "not-found"
	// Choose: no name and no single candidate; Plans lists them all.
	VerdictChoose Verdict = "choose"
	// AllComplete: no name was given and every plan is complete.
	VerdictAllComplete Verdict = "all-complete"
	// None: there is no plan at all.
	VerdictNone Verdict = "none"
)

// Resolution is the outcome of Resolve.
type Resolution struct {
	Verdict Verdict
	// Plan is set for Start, Resume and Complete.
	Plan *Plan
	// Plans is set for NotFound (the incomplete plans) and Choose (all plans).
	Plans []*Plan
	// Name is the name that was asked for, if any.
	Name string
}

// Resolve runs the start-work decision procedure. With a name it picks that
// plan (see Find). Without one it resumes the plan recorded in st when that
// plan still exists and is incomplete, else starts the only incomplete plan,
// else asks the user to choose among the plans (or says they are all
// complete), else reports there are none.
// st may be nil. It gives up once ctx is done (see ParseContext).
func Resolve(ctx context.Context, project, name string, st *State) (Resolution, error) {
	if name != "" {
		p, err := FindContext(ctx, project, name)
		var nf *NotFoundError
		if errors.As(err, &nf) {
			all, derr := DiscoverContext(ctx, project)
			if derr != nil {
				return Resolution{}, derr
			}
			return Resolution{Verdict: VerdictNotFound, Name: name, Plans: incomplete(all)}, nil
		}
		if err != nil {
			return Resolution{}, err
		}
		if p.Progress().Complete() {
			return Resolution{Verdict: VerdictComplete, Plan: p, Name: name}, nil
		}
		if st.IsActive(p.Path) {
			return Resolution{Verdict: VerdictResume, Plan: p, Name: name}, nil
		}
		return Resolution{Verdict: VerdictStart, Plan: p, Name: name}, nil
	}

	if st != nil && st.ActivePlan != "" {
		if p, err := LoadContext(ctx, st.ActivePlan); err == nil && inPlansDir(project, p.Path) && !p.Progress().Complete() {
			return Resolution{Verdict: VerdictResume, Plan: p}, nil
		}
	}
	all, err := DiscoverContext(ctx, project)
	if err != nil {
		return Resolution{}, err
	}
	if len(all) == 0 {
		return Resolution{Verdict: VerdictNone}, nil
	}
	switch open := incomplete(all); len(open) {
	case 0:
		return Resolution{Verdict: VerdictAllComplete, Plans: all}, nil
	case 1:
		return Resolution{Verdict: VerdictStart, Plan: open[0]}, nil
	}
	return Resolution{Verdict: VerdictChoose, Plans: all}, nil
}

// Message says what a resolution that starts nothing means, and what to do.
func (r Resolution) Message() string {
	var b strings.Builder
	switch r.Verdict {
	case VerdictComplete:
		pr := r.Plan.Progress()
		fmt.Fprintf(&b, "plan %q is already complete (%d/%d tasks)", r.Plan.Name, pr.Completed, pr.Total)
	case VerdictNotFound:
		fmt.Fprintf(&b, "no plan named %q in .weave/plans", r.Name)
		if len(r.Plans) == 0 {
			b.WriteString(" (no incomplete plans)")
		} else {
			b.WriteString("; incomplete plans:")
			writePlanList(&b, r.Plans)
		}
	case VerdictChoose:
		b.WriteString("more than one plan could run; name one with `weave start-work NAME`:")
		writePlanList(&b, r.Plans)
	case VerdictAllComplete:
		b.WriteString("every plan is complete; write a new plan in .weave/plans:")
		writePlanList(&b, r.Plans)
	case VerdictNone:
		b.WriteString("no plans in .weave/plans; write one there (or run `weave init` for a sample)")
	}
	return b.String()
}

func writePlanList(b *strings.Builder, ps []*Plan) {
	for _, p := range ps {
		pr := p.Progress()
		fmt.Fprintf(b, "\n  %-30s %d/%d", p.Name, pr.Completed, pr.Total)
		switch {
		case p.Invalid != "":
			b.WriteString("  invalid: " + p.Invalid)
		case pr.Complete():
			b.WriteString("  complete")
		}
	}
}

// incomplete returns the plans that could still run: not complete, and not
// past the bounds.
func incomplete(ps []*Plan) []*Plan {
	var out []*Plan
	for _, p := range ps {
		if !p.Progress().Complete() && p.Invalid == "" {
			out = append(out, p)
		}
	}
	return out
}

// IsActive reports whether the plan file at path is the state's active
// plan; st may be nil.
func (st *State) IsActive(path string) bool {
	return st != nil && samePath(st.ActivePlan, path)
}

func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ai, err1 := os.Stat(a)
	bi, err2 := os.Stat(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return os.SameFile(ai, bi)
}

// inPlansDir keeps a state.json that was edited by hand from pointing the
// runner at a file outside the project's plans.
func inPlansDir(project, path string) bool {
	dir, err := filepath.Abs(PlansDir(project))
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	return filepath.Dir(abs) == dir
}
