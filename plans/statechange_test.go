package plans

import (
	"errors"
	"testing"
	"time"
)

func TestStateChanges(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	task := Task{Number: 2, Title: "Build"}
	st := NewState("/p/.weave/plans/a.md", "a", "tapestry", "abc", now)
	st.Pause("interrupted")
	st.Resume("s2")
	if st.Paused || st.PausedReason != "" || len(st.SessionIDs) != 1 {
		t.Fatalf("after Resume: %+v, want unpaused with one session", st)
	}
	st.Begin(task, now)
	if st.InFlight == nil || st.InFlight.Label() != "2 (Build)" || st.Tasks["2"].Attempts != 1 {
		t.Fatalf("after Begin: in flight %+v, record %+v", st.InFlight, st.Tasks["2"])
	}
	st.Withdraw(task)
	st.Begin(task, now)
	st.Failed(task, errors.New("exit 1"))
	if r := st.Tasks["2"]; r.Attempts != 1 || r.LastError != "exit 1" {
		t.Errorf("after Withdraw, Begin, Failed: record %+v, want 1 attempt with its error", r)
	}
	st.Begin(task, now)
	st.Finish(task)
	if r := st.Tasks["2"]; !r.Done || r.LastError != "" || st.InFlight != nil {
		t.Errorf("after Finish: record %+v, in flight %+v; want done, nothing in flight", r, st.InFlight)
	}
	st.Fail("task 3 failed")
	if !st.Paused || st.LastError != "task 3 failed" || st.PausedReason != "task 3 failed" {
		t.Errorf("after Fail: %+v, want paused with the error kept", st)
	}
}
