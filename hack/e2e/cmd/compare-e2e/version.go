package main

import (
	"os/exec"
	"strings"
)

// binaryLabel names a Kubernetes binary with the version it reports
// ("kube-scheduler v1.37.2"), so the table says which release ran rather
// than the one the code was written for. It falls back to the bare name if
// --version fails or prints something unexpected. It runs the binary once.
func binaryLabel(name, path string) string {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return name
	}
	f := strings.Fields(string(out)) // "Kubernetes v1.37.2"
	if len(f) < 2 || !strings.HasPrefix(f[len(f)-1], "v") {
		return name
	}
	return name + " " + f[len(f)-1]
}
