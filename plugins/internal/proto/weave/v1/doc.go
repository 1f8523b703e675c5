// Package weavev1 is the generated Go code of the Weave plugin protocol,
// version 1 (weave.proto, whose header states the compatibility policy). It
// is internal: package plugins converts between these messages and the plain
// Go types plugin authors see, in one place. Regenerate it with
// `go generate ./plugins`; never edit the .pb.go files by hand.
package weavev1
