package plans

// Holder returns the PID of the live process that holds the project's lock,
// or 0 when none does. It reads the PID the holder recorded instead of trying
// the lock, so that a status query never makes a starting run fail.
func (s *Store) Holder() int {
	pid := readPID(s.lockPath())
	if pid <= 0 || !processAlive(pid) {
		return 0
	}
	return pid
}
