# Poppydesk. The two commands a new user needs:
#   make demo   set everything up, then open the window with the built-in reference Company
#   make test   set everything up, then run every test (what CI runs)
SHELL := /bin/bash
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
TAGS := webkit2_41
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# DEFAULT_OPERATOR is the operator "Get started" enrolls with on the first run (docs/OPERATOR.md
# "A default operator"); empty: the build names none.
DEFAULT_OPERATOR ?=
LDFLAGS := -X main.version=$(VERSION) -X main.defaultOperator=$(DEFAULT_OPERATOR)

.PHONY: demo test bench bootstrap build package frontend run clean

BIN := build/bin/poppydesk
# The program MCP clients start (cmd/poppydesk-mcp), beside the binary: without cgo, so that it
# loads no shared library (the binary loads GTK and WebKit), and starts in milliseconds.
RELAY_BUILD = CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o build/bin/poppydesk-mcp ./cmd/poppydesk-mcp
# What the binary is built from: the Go sources (tests excluded), the frontend's sources and the
# build configuration. The generated bindings (frontend/wailsjs) and frontend/dist are outputs.
GO_SOURCES := $(shell find app agentcore browser vault cmd -name '*.go' ! -name '*_test.go' ! -path '*/testdata/*' 2>/dev/null) $(wildcard *.go) go.mod go.sum
FRONTEND_SOURCES := $(shell find frontend/src -type f ! -name '*.test.ts' 2>/dev/null) frontend/index.html frontend/package.json \
	$(wildcard frontend/package-lock.json frontend/vite.config.* frontend/tsconfig*.json)
BUILD_ASSETS := wails.json $(shell find build -maxdepth 2 -type f ! -path 'build/bin/*' ! -name '*.deb' 2>/dev/null)

bootstrap:
	@scripts/bootstrap.sh

frontend: bootstrap
	cd frontend && npm run build

# The release binary: build/bin/poppydesk (wails build = frontend build + bindings + go build
# -tags desktop,production,webkit2_41), and build/bin/poppydesk-mcp beside it.
build: bootstrap
	wails build -tags $(TAGS) -ldflags "$(LDFLAGS)" -m -nosyncgomod
	$(RELAY_BUILD)

# The binary again only when one of its sources changed (make demo uses it).
$(BIN): $(GO_SOURCES) $(FRONTEND_SOURCES) $(BUILD_ASSETS) | bootstrap
	wails build -tags $(TAGS) -ldflags "$(LDFLAGS)" -m -nosyncgomod
	$(RELAY_BUILD)

# The Debian package: build/poppydesk_VERSION_ARCH.deb (scripts/package: nfpm as a library; the
# binary, desktop entry, AppStream metainfo, hicolor icons and man page). Install it with
#   sudo apt-get install ./build/poppydesk_*.deb
package: build
	go run ./scripts/package -version "$(VERSION)"

demo: $(BIN)
	scripts/demo.sh

run: build
	build/bin/poppydesk

test:
	scripts/test.sh

# Every package's benchmarks, 2 s each; the ratios against their baselines as one table, with the
# noisy rows marked (scripts/bench.sh; BENCHTIME=5s for steadier numbers). After the frontend
# (and so the bootstrap): the window's benchmarks need it built, the big APIs' their npm packages.
bench: frontend
	scripts/bench.sh

clean:
	rm -rf build/bin build/poppydesk_*.deb frontend/dist out
