package envelope

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestStamperIDs(t *testing.T) {
	var s stamper
	seen := make(map[string]bool)
	// Past several batches of random bytes.
	for range 200 {
		id := s.id()
		u, err := uuid.Parse(id)
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		if u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("id %q: version %d variant %v, want a random RFC 4122 UUID in canonical form", id, u.Version(), u.Variant())
		}
		if seen[id] {
			t.Fatalf("id %q handed out twice", id)
		}
		seen[id] = true
	}
}

func TestStamperTimes(t *testing.T) {
	var s stamper
	base := time.Date(2026, 11, 25, 5, 32, 10, 123_000_000, time.UTC)
	for _, d := range []time.Duration{0, 999_999, 1_000_000, 1_000_001, -1, time.Second, -time.Hour, 0,
		-time.Duration(base.UnixNano()) - 1, 200 * 365 * 24 * time.Hour} {
		tm := base.Add(d)
		if got, want := s.ts(tm), FormatTime(tm); got != want {
			t.Errorf("ts(%v) = %q, want %q", tm, got, want)
		}
		local := tm.In(time.FixedZone("x", 5*3600+1800))
		if got, want := s.ts(local), FormatTime(local); got != want {
			t.Errorf("ts(%v) = %q, want %q", local, got, want)
		}
	}
}
