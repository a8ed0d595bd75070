# Poppydesk. The two commands a new user needs:
#   make demo   set everything up, then open the window with the built-in reference Company
#   make test   set everything up, then run every test (what CI runs)
SHELL := /bin/bash
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
TAGS := webkit2_41
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: demo test bench bootstrap build package frontend run clean

bootstrap:
	@scripts/bootstrap.sh

frontend: bootstrap
	cd frontend && npm run build

# The release binary: build/bin/poppydesk (wails build = frontend build + bindings + go build
# -tags desktop,production,webkit2_41).
build: bootstrap
	wails build -tags $(TAGS) -ldflags "-X main.version=$(VERSION)" -m -nosyncgomod

# The Debian package: build/poppydesk_VERSION_ARCH.deb (scripts/package: nfpm as a library; the
# binary, desktop entry, AppStream metainfo, hicolor icons and man page). Install it with
#   sudo apt-get install ./build/poppydesk_*.deb
package: build
	go run ./scripts/package -version "$(VERSION)"

demo: build
	scripts/demo.sh

run: build
	build/bin/poppydesk

test:
	scripts/test.sh

# Every package's benchmarks in a short run; the ratios against their baselines as one table
# (scripts/bench.sh; BENCHTIME=1000x for steadier numbers).
bench:
	scripts/bench.sh

clean:
	rm -rf build/bin build/poppydesk_*.deb frontend/dist out
