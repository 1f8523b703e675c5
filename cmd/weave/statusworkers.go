package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/weavehq/weave/host/run"
)

// writeWorkers prints, under the active plan of a run with workers, its
// integration branch and the tasks its workers are on.
func writeWorkers(w io.Writer, p run.PlanStatus) {
	if in := p.Integration; in != nil && in.Branch != "" {
		from := ""
		if in.From != "" {
			from = " (from " + in.From + ")"
		}
		fmt.Fprintf(w, "    lands on: %s%s\n", in.Branch, from)
	}
	for _, r := range p.Running {
		fmt.Fprintf(w, "    %s\n", r.Text())
	}
}

// runningSummary is the running tasks in one line, for the piped
// status's detail column: "running: 3 (worker 1), 4 (worker 2)".
func runningSummary(rs []run.RunningTask) string {
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.Itoa(r.Task) + " (worker " + r.Worker + ")"
	}
	return "running: " + strings.Join(parts, ", ")
}
