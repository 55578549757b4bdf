module github.com/schedq/schedq

go 1.26
