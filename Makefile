# Developer targets. `make ci` is what .ci/run runs and what README's test
# command is; the others are the pieces, runnable alone.

GO        ?= go
# The concurrent packages, raced in CI with -short: the race run is for
# the concurrent parts, and the long variants of tests run in test.
# cluster's in-process fleets (hosts, publishers, aggregators, replicas)
# race every role together; cluster/demo (a larger fleet of the same
# code), simhost's goroutine-driven tests (cluster's hosts run them) and
# linuxnode (a Linux host over node's and cluster's pieces) stay out: each
# compiled and run again under the detector cost more of CI's 15 minutes
# than it raced anything the others do not.
RACE_PKGS := ./node/ ./loadgen/... ./storage/ ./wire/ ./transport/ ./aggregator/ ./coordinator/ ./cluster/ ./linuxhost/
FUZZTIME  ?= 1s
# CI's fuzz pass stops starting packages after FUZZBUDGET, beginning at a
# package the commit picks, so that successive changes cover them all
# (make fuzz-short FUZZBUDGET=0: every package).
# A cold build of one package's instrumented test binary takes 40-90 s
# (its closure in this module is instrumented too), so a cold CI run
# fuzzes one or two packages.
FUZZBUDGET ?= 25s
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHSTAT   := $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
# make bench BENCH=Handler PKG=./node COUNT=6
BENCH ?= .
PKG   ?= ./...
COUNT ?= 6

.PHONY: release deb deb-test ci test test-long race fuzz-short fuzz-long lint tidy-check vulncheck docs-tool docs-check bench bench-vs speed-guard calc-accuracy flamegraph week

# A release build: dist/dcpi stamped with VERSION and the commit
# (dcpi --version), static, paths trimmed: make release VERSION=1.2.3.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X dcpi/internal/buildinfo.version=$(VERSION) -X dcpi/internal/buildinfo.commit=$(COMMIT)
release:
	mkdir -p dist
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/dcpi ./cmd/dcpi

# The Debian package dist/dcpi_<version>_<arch>.deb (packaging/: units,
# default configs, maintainer scripts), built by nfpm pinned here from
# the release binary; deb-test installs it on this machine (root; it
# skips otherwise), checks it and purges it (packaging/test-deb.sh, a
# minute past the build; not in ci, which would build a release binary).
NFPM       := $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
DEB_VERSION = $(shell v='$(VERSION)'; v=$${v#v}; case $$v in ([0-9]*) echo $$v;; (*) echo 0.0.0~$$v;; esac)
DEB_ARCH    = $(shell $(GO) env GOARCH)
deb: release
	cd packaging && VERSION='$(DEB_VERSION)' DEB_ARCH='$(DEB_ARCH)' $(NFPM) package --config nfpm.yaml --packager deb --target ../dist/dcpi_$(DEB_VERSION)_$(DEB_ARCH).deb

deb-test: deb
	./packaging/test-deb.sh dist/dcpi_$(DEB_VERSION)_$(DEB_ARCH).deb

# The docs' command tests (TestDocsCommands ...) run within test; ci adds
# only the docs tool, not a second run of them.
ci: test race fuzz-short lint tidy-check docs-tool

test:
	$(GO) vet ./...
	$(GO) test -timeout 14m ./...

# The tests' long variants too (internal/longtest): every workload on
# every model and CPU count, the fleet-sized value-sampling check. Before
# resolving an issue that touches what they cover; not in ci.
test-long:
	DCPI_LONG=1 $(GO) test -timeout 30m ./...

race:
	$(GO) test -race -short -timeout 14m $(RACE_PKGS)

# Fuzz targets for FUZZTIME each, over their committed corpora, package
# by package until FUZZBUDGET is spent (go test runs every corpus anyway).
fuzz-short:
	$(GO) run ./internal/tools/fuzzshort -fuzztime $(FUZZTIME) -budget $(FUZZBUDGET)

# The longer campaign of docs/fuzzing.md: FUZZLONG per target (2m: about an
# hour in all), one worker, at low priority so a shared machine's other work
# keeps its cores. Narrow it with FUZZ=<target regexp> and FUZZPKG=<package>:
# make fuzz-long FUZZ=FuzzBatch FUZZPKG=./wire FUZZLONG=10m
FUZZLONG ?= 2m
fuzz-long:
	nice -n 15 $(GO) run ./internal/tools/fuzzshort -fuzztime $(FUZZLONG) -parallel 1 -minimizetime 10s $(if $(FUZZ),-run '$(FUZZ)') $(FUZZPKG)

lint:
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(STATICCHECK) ./...

# go.mod and go.sum as go mod tidy leaves them: fails, printing the
# difference, when tidying would change either.
tidy-check:
	$(GO) mod tidy -diff

# govulncheck over the module, against a vulnerability database built
# from the Go vulnerability database's repository fetched through the
# module proxy (internal/tools/vulncheck.sh). Not in ci: it reports the
# standard library's vulnerabilities of the installed Go, fixed only by a
# newer toolchain.
vulncheck:
	./internal/tools/vulncheck.sh

docs-tool:
	$(GO) run ./internal/tools/docscheck

# Package docs and README's tables, then every documented dcpi command run
# or parsed against the binary, and every command's help complete.
docs-check: docs-tool
	$(GO) test -run 'TestDocsCommands|TestExtractCommands|TestEveryCommandIsDocumented' ./cmd/dcpi

# Benchmarks summarized by benchstat (mean ± spread over COUNT runs).
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) $(PKG) | tee bench.txt
	$(BENCHSTAT) bench.txt

# The same benchmarks on BASE (a commit) and on the work tree, run
# alternately in one session so both see the same machine, then compared:
# make bench-vs BASE=HEAD~1 BENCH=Handler PKG=./node
bench-vs:
	@test -n "$(BASE)" || (echo "make bench-vs needs BASE=<commit>"; exit 2)
	./internal/tools/benchvs.sh '$(BASE)' '$(BENCH)' '$(PKG)' '$(COUNT)'

# The simulator's regression guard (docs/hwsim.md, "Simulator speed"): the
# whole machine (functional, 21164, 21264 core, dcpi profile) on BASE and
# on the work tree, counted in host instructions by callgrind; fails if a
# case costs more than SPEED_THRESHOLD percent more. Run it before
# resolving an issue that touches hwsim or node (a few minutes; not in ci):
# make speed-guard BASE=main
SPEED_THRESHOLD ?= 2
speed-guard:
	@test -n "$(BASE)" || (echo "make speed-guard needs BASE=<commit>"; exit 2)
	./internal/tools/speedguard.sh '$(BASE)' '$(SPEED_THRESHOLD)'

# dcpicalc's accuracy figures: every workload profiled with ground truth on
# one host and on 8, dcpi calc --truth over each; rewrites the table in
# docs/dcpicalc.md ("Accuracy") and docs/calc-accuracy-fig8.svg (minutes).
week:
	$(GO) run ./internal/tools/weekrun

calc-accuracy:
	$(GO) run ./internal/tools/calcaccuracy

# The flame graph screenshot in docs/tools.md: the demo fleet's sampled call
# stacks through dcpi pprof and go tool pprof -http, photographed by headless
# Chromium (docs/flamegraph-demo.png; needs chromium).
flamegraph:
	./internal/tools/flamegraph.sh docs/flamegraph-demo.png
