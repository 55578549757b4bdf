package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSchedulerRefusesEndlessInputFiles: a file the scheduler reads at
// its start (its kubeconfig, --config, the HTTPS port's certificates,
// keys, CAs and kubeconfigs) that is not a regular file (/dev/zero, which
// client-go and crypto/tls would read for ever; a named pipe, whose open
// blocks until a writer comes) or is larger than 4 MiB is refused before
// anything is read or contacted, naming the flag and the file. Until
// 2026-11-30 the command hung.
func TestSchedulerRefusesEndlessInputFiles(t *testing.T) {
	notInCluster(t)
	server, hits := apiServer(t)
	kc := kubeconfigFor(t, server)
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 4<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	for _, f := range []string{"schedq.crt", "schedq.key"} {
		if err := os.Symlink("/dev/zero", filepath.Join(certDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	const device = ": not a regular file but a device"
	tooBig := ": larger than the limit of 4194304 bytes (4 MiB) for an input file"
	for _, tc := range []struct {
		name string
		env  string // $KUBECONFIG, with no --kubeconfig
		args []string
		want string
	}{
		{name: "kubeconfig device", args: []string{"--kubeconfig", "/dev/zero"}, want: "--kubeconfig /dev/zero" + device},
		{name: "kubeconfig too large", args: []string{"--kubeconfig", big}, want: "--kubeconfig " + big + tooBig},
		{name: "kubeconfig named pipe", args: []string{"--kubeconfig", fifo}, want: "--kubeconfig " + fifo + ": not a regular file but a named pipe"},
		{name: "$KUBECONFIG device", env: "/dev/zero", want: "$KUBECONFIG /dev/zero" + device},
		{name: "config device", args: []string{"--config", "/dev/zero"}, want: "--config /dev/zero" + device},
		{name: "config named pipe", args: []string{"--config", fifo}, want: "--config " + fifo + ": not a regular file but a named pipe"},
		{name: "client CA", args: []string{"--client-ca-file", "/dev/zero"}, want: "--client-ca-file /dev/zero" + device},
		{name: "request header CA", args: []string{"--requestheader-client-ca-file", big}, want: "--requestheader-client-ca-file " + big + tooBig},
		{name: "authentication kubeconfig", args: []string{"--authentication-kubeconfig", "/dev/zero"}, want: "--authentication-kubeconfig /dev/zero" + device},
		{name: "authorization kubeconfig", args: []string{"--authorization-kubeconfig", "/dev/zero"}, want: "--authorization-kubeconfig /dev/zero" + device},
		{name: "certificate and key", args: []string{"--tls-cert-file", "/dev/zero", "--tls-private-key-file", "/dev/zero"},
			want: "--tls-cert-file /dev/zero" + device + "\n--tls-private-key-file /dev/zero" + device},
		{name: "SNI certificate and key", args: []string{"--tls-sni-cert-key", "/dev/zero,/dev/zero"}, want: "--tls-sni-cert-key /dev/zero,/dev/zero: /dev/zero" + device},
		{name: "cert-dir pair", args: []string{"--cert-dir", certDir}, want: "--cert-dir " + certDir + ": " + filepath.Join(certDir, "schedq.crt") + device},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			args := []string{"scheduler", "--leader-elect=false", "--address="}
			if tc.env == "" && !strings.HasPrefix(tc.name, "kubeconfig") {
				args = append(args, "--kubeconfig", kc)
			}
			_, err := execute(append(args, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the API server got %d requests before the flags were checked", n)
			}
		})
	}
}
