package gitwork

// MoverPID is the process id of r's long-lived update-ref process for
// landings (land) or branches pointed somewhere, 0 when none runs.
func MoverPID(r *Repo, land bool) int {
	msg := msgBranch
	if land {
		msg = msgLand
	}
	return r.movers.mover(r.Root, msg).pid()
}
