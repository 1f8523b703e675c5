module github.com/weavehq/weave

go 1.26.8

require (
	github.com/gofrs/flock v0.13.1
	github.com/yuin/goldmark v1.8.7
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
