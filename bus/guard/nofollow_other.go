//go:build !unix

package guard

const noFollow = 0
