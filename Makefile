# Shortcuts; each target is one go command that the README also shows.
.PHONY: test walkthrough simulate bench compare compare-e2e servers e2e fuzz

test:        ## the whole test suite, as CI runs it
	go test -race -count=1 -timeout 30m github.com/schedq/schedq/...

simulate:    ## the main job: the simulator on its default scenario
	go run ./kube/cmd/schedq simulate

walkthrough: ## the library's walkthrough: items moving between the sub-queues
	go run ./examples/walkthrough

servers:     ## build (or reuse) kube-apiserver, etcd and kube-scheduler
	hack/build-servers.sh

e2e: servers ## the end-to-end tests against a real API server
	SCHEDQ_BIN="$$(hack/build-servers.sh | tail -n 1)" SCHEDQ_E2E=required go test -race -count=1 -v ./hack/e2e/...

compare-e2e: servers ## schedq against kube-scheduler on the same API server
	SCHEDQ_BIN="$$(hack/build-servers.sh | tail -n 1)" go run ./hack/e2e/cmd/compare-e2e

bench:       ## the library's benchmarks; compare runs with benchstat
	go test -run XXX -bench . -count 5 .

compare:     ## schedq against the upstream queue, workqueue and controller-runtime
	cd bench/compare && go run .

fuzz:        ## fuzz the queue against its model for five minutes
	go test -run XXX -fuzz FuzzQueue -fuzztime 5m .
