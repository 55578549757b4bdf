# Shortcuts; each target is one go command that the README also shows.
.PHONY: test walkthrough bench compare fuzz

test:        ## the whole test suite, as CI runs it
	go test -race -count=1 github.com/schedq/schedq/...

walkthrough: ## the main job, for now
	go run ./examples/walkthrough

bench:       ## the library's benchmarks; compare runs with benchstat
	go test -run XXX -bench . -count 5 .

compare:     ## schedq against the upstream queue, workqueue and controller-runtime
	cd bench/compare && go run .

fuzz:        ## fuzz the queue against its model for five minutes
	go test -run XXX -fuzz FuzzQueue -fuzztime 5m .
