package hooks

import (
	"strconv"

	"github.com/weavehq/weave/plugins"
)

// ClaudeTaskCompleted runs when a plan task is ticked (plan.task.done):
// Weave's plan tasks are its task list. task_id is "<plan>#<number>",
// task_subject the task's title.
const ClaudeTaskCompleted = "TaskCompleted"

var taskCompleted = claudeBinding{
	weave: plugins.EventPlanTaskDone,
	input: func(in *claudeInput, ev plugins.Event) {
		if ev.Task != nil {
			in.TaskID = ev.Plan + "#" + strconv.Itoa(ev.Task.Number)
			in.TaskSubject = ev.Task.Title
		}
		in.TaskDescription = "plan " + ev.Plan
	},
}
