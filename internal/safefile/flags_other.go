//go:build !unix

package safefile

// Off unix there is no O_NONBLOCK or O_NOFOLLOW: open checks for a link
// with Lstat before it opens.
const (
	openFlags = 0
	noFollow  = 0
)

func isLoop(error) bool { return false }
