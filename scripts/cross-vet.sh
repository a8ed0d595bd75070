#!/usr/bin/env bash
# Builds and vets every package, tests included, for the other desktop platforms, from Linux:
#
#   scripts/cross-vet.sh                     # windows/amd64 darwin/amd64 darwin/arm64
#   scripts/cross-vet.sh windows/amd64       # only these targets
#
# For each target: `go build ./...` and `go vet ./...` with CGO_ENABLED=0. That is every package
# but the Wails window, which is compiled only with the build tag desktop (the release build). For
# Windows the window is vetted too (-tags desktop,production: Wails needs no cgo there, and
# scripts/windows-build.sh builds it); on macOS it needs cgo and Apple's SDK, so it is neither
# built nor vetted here. The Go build cache makes a second run cheap; the first compiles the
# standard library and every dependency once per target.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(windows/amd64 darwin/amd64 darwin/arm64)
fail=0
for t in "${targets[@]}"; do
  t0=$(date +%s)
  export GOOS=${t%/*} GOARCH=${t#*/} CGO_ENABLED=0
  rc=0
  go build ./... || rc=1
  go vet ./... || rc=1
  if [ "$GOOS" = windows ]; then
    if [ -f frontend/dist/index.html ]; then
      go vet -tags desktop,production . ./app/cli || rc=1
    else
      echo "cross-vet: the window (build tag desktop) is not vetted for Windows: frontend/dist is missing (cd frontend && npm run build)"
      rc=1
    fi
  fi
  if [ "$rc" = 0 ]; then echo "cross-vet: $t: build and vet pass ($(( $(date +%s) - t0 )) s)"; else echo "cross-vet: $t: FAILED"; fail=1; fi
done
exit $fail
