# Poppydesk. The two commands a new user needs:
#   make demo   set everything up, then open the window with the built-in reference Company
#   make test   set everything up, then run every test (what CI runs)
SHELL := /bin/bash
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
TAGS := webkit2_41
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: demo test bootstrap build frontend run clean

bootstrap:
	@scripts/bootstrap.sh

frontend: bootstrap
	cd frontend && npm run build

# The release binary: build/bin/poppydesk (wails build = frontend build + bindings + go build
# -tags desktop,production,webkit2_41).
build: bootstrap
	wails build -tags $(TAGS) -ldflags "-X main.version=$(VERSION)" -m -nosyncgomod

demo: build
	scripts/demo.sh

run: build
	build/bin/poppydesk

test:
	scripts/test.sh

clean:
	rm -rf build/bin frontend/dist out
