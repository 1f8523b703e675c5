//go:build !unix

package jsonrpc

const noFollow = 0
