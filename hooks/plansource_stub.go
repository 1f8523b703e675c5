//go:build !weave_plans

package hooks

import (
	"context"
	"errors"
)

// NewPlansSource returns the PlanSource backed by the plans package. This
// build has no plans package wired in (build with -tags weave_plans once it
// exists), so every lookup fails with a clear error and the hooks that need
// plans fail by their policy.
func NewPlansSource() PlanSource { return unavailablePlans{} }

var errPlansUnavailable = errors.New("plan lookup is not available in this build (the plans package is not wired in)")

type unavailablePlans struct{}

func (unavailablePlans) Find(context.Context, string, string) (PlanInfo, error) {
	return PlanInfo{}, errPlansUnavailable
}

func (unavailablePlans) Discover(context.Context, string) ([]PlanInfo, error) {
	return nil, errPlansUnavailable
}

func (unavailablePlans) Plan(context.Context, string) (PlanInfo, error) {
	return PlanInfo{}, errPlansUnavailable
}

func (unavailablePlans) State(context.Context, string) (WorkState, error) {
	return WorkState{}, errPlansUnavailable
}
