package config

import (
	"slices"
	"strings"
)

// Source is where one value came from.
type Source struct {
	Layer  Layer
	Origin string // the file, the WEAVE_* variable or the flag's key; "" for defaults
}

// Sources records which layer set each key. Keys are dotted paths; entries
// of lists are indexed: plugins[0], hooks.PreToolUse[1].
type Sources struct {
	byKey map[string]Source
	files []string
}

func (s *Sources) set(key string, l Layer, origin string) {
	s.byKey[key] = Source{Layer: l, Origin: origin}
}

// Of returns the layer and origin (file path, env var name or flag key) of
// key's effective value. A key inside a recorded entry (for example
// hooks.PreToolUse[0].hooks[0].command) reports its entry's source; a
// section (for example agents.loom) reports its highest-layer value.
// Anything not set by a layer is LayerDefault with origin "".
func (s *Sources) Of(key string) (Layer, string) {
	if s == nil {
		return LayerDefault, ""
	}
	// The key itself and everything under it: the highest layer wins.
	best, found := s.byKey[key]
	var under []string
	for k := range s.byKey {
		if strings.HasPrefix(k, key+".") || strings.HasPrefix(k, key+"[") {
			under = append(under, k)
		}
	}
	slices.Sort(under)
	for _, k := range under {
		if src := s.byKey[k]; !found || src.Layer.rank() > best.Layer.rank() {
			best, found = src, true
		}
	}
	if found {
		return best.Layer, best.Origin
	}
	// A key inside a recorded entry takes the entry's source.
	for k := parentKey(key); k != ""; k = parentKey(k) {
		if src, ok := s.byKey[k]; ok {
			return src.Layer, src.Origin
		}
	}
	return LayerDefault, ""
}

// Files returns the config files that were read, lowest layer first.
func (s *Sources) Files() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.files)
}

// parentKey strips the last ".name" or "[i]" from a key.
func parentKey(k string) string {
	i := strings.LastIndexAny(k, ".[")
	if i < 0 {
		return ""
	}
	return k[:i]
}

// describeSource is a source in words: "default", "env WEAVE_LOG_LEVEL".
func describeSource(l Layer, origin string) string {
	if l == LayerDefault || origin == "" {
		return string(l)
	}
	return string(l) + ": " + origin
}
