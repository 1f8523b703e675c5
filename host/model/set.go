package model

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// Set is every model a config names: the model section and each entry of
// models, each opened once with its own provider, key and endpoint, so
// that one run may have agents on several vendors. Route finds the one a
// request's model names. A Set is safe for concurrent use; it never
// changes once opened.
type Set struct {
	// def is the model section, or the entry model.name names when
	// model.provider is none; nil with defErr when there is none.
	def     *member
	defErr  error
	entries map[string]*member
}

// member is one opened model.
type member struct {
	entry    string
	settings Settings
	provider Provider
	window   int
	err      error
}

// Route is where one request goes: a provider and the model name it is
// sent with.
type Route struct {
	// Entry names the entry of models, "" for the model section.
	Entry string
	// Label names the route in messages and events: the entry's name, or
	// the model's for the model section.
	Label string
	// Provider is the provider's name (a row of the provider table).
	Provider string
	// Model is the model name the request carries.
	Model string
	// Window is the model's context window, in tokens.
	Window int
	// Err says why the route cannot be used (its key variable is empty,
	// no model is configured); Complete is nil then.
	Err      error
	Complete Provider
}

// OpenSet opens the models cfg names; getenv reads their keys (nil: the
// process environment). A model that cannot be opened is kept with its
// error, which a request routed to it gets.
func OpenSet(cfg *config.Config, getenv func(string) string) *Set {
	s := &Set{entries: map[string]*member{}}
	for _, name := range slices.Sorted(maps.Keys(cfg.Models)) {
		c := cfg.Models[name]
		m := &member{entry: name, window: windowOf(c)}
		if m.settings, m.err = FromEntry(name, c, getenv); m.err == nil {
			m.provider, m.err = New(m.settings)
		} else {
			// Kept for messages about the entry.
			m.settings.Provider, m.settings.Name = c.Provider, cmp.Or(c.Name, c.Azure.Deployment)
		}
		s.entries[name] = m
	}
	switch e, named := s.entries[cfg.Model.Name]; {
	case (cfg.Model.Provider == "" || cfg.Model.Provider == "none") && named:
		s.def = e
	default:
		m := &member{window: windowOf(cfg.Model)}
		if m.settings, m.err = FromConfig(cfg.Model, getenv); m.err == nil {
			m.provider, m.err = New(m.settings)
		}
		if m.err != nil {
			s.defErr = m.err
			if errors.Is(m.err, plugins.ErrNoModel) && len(s.entries) > 0 {
				s.defErr = fmt.Errorf("%w; or set model.name to the entry of models the agents without a model of their own use (%s)",
					m.err, strings.Join(s.Entries(), ", "))
			}
		} else {
			s.def = m
		}
	}
	return s
}

// windowOf is c's context window, or its provider's.
func windowOf(c config.ModelConfig) int {
	if c.ContextWindow > 0 {
		return c.ContextWindow
	}
	return DefaultContextWindow(c.Provider)
}

// Route is where a request naming model goes: the entry of that name;
// else the default model (the model section) with model as its name, or
// with its own name when model is "".
func (s *Set) Route(model string) Route {
	if m, ok := s.entries[model]; ok {
		return m.route(m.settings.Name)
	}
	if s.def == nil {
		return Route{Label: model, Model: model, Err: s.defErr, Window: fallbackContextWindow}
	}
	if model == "" {
		model = s.def.settings.Name
	}
	return s.def.route(model)
}

// Entry is the route of the entry name, if there is one.
func (s *Set) Entry(name string) (Route, bool) {
	m, ok := s.entries[name]
	if !ok {
		return Route{}, false
	}
	return m.route(m.settings.Name), true
}

// Entries names the entries, sorted.
func (s *Set) Entries() []string { return slices.Sorted(maps.Keys(s.entries)) }

func (m *member) route(model string) Route {
	r := Route{Entry: m.entry, Label: m.entry, Provider: m.settings.Provider, Model: model, Window: m.window, Err: m.err, Complete: m.provider}
	if r.Label == "" {
		r.Label = model
	}
	if m.err != nil {
		r.Complete = nil
	}
	return r
}

// Wrap returns a copy of s whose providers are f's wrappings of its own
// (a benchmark timing the provider apart, a test standing in for one);
// models that could not be opened stay as they were.
func (s *Set) Wrap(f func(Provider) Provider) *Set {
	return s.WrapRoutes(func(_ Route, p Provider) Provider { return f(p) })
}

// WrapRoutes is Wrap with the route of each model (its vendor and model
// name) given to f: what a call costs depends on both.
func (s *Set) WrapRoutes(f func(Route, Provider) Provider) *Set {
	wrap := func(m *member) *member {
		if m == nil || m.err != nil {
			return m
		}
		cp := *m
		cp.provider = f(m.route(m.settings.Name), m.provider)
		return &cp
	}
	out := &Set{def: wrap(s.def), defErr: s.defErr, entries: map[string]*member{}}
	for name, m := range s.entries {
		out.entries[name] = wrap(m)
		if s.def == m {
			out.def = out.entries[name]
		}
	}
	return out
}
