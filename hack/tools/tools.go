//go:build tools

// Package tools pins the server binaries that the end-to-end tests run
// (kube-apiserver, kube-scheduler, etcd). It is never compiled; the blank
// imports only keep the requirements in go.mod through `go mod tidy`.
// hack/build-servers.sh builds the binaries from this module.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
