module github.com/weavehq/weave

go 1.26.8
