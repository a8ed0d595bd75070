#!/usr/bin/env bash
# Type-checks and vets every package, tests included, for the other desktop platforms, from Linux,
# and compiles them for darwin/arm64:
#
#   scripts/cross-vet.sh                     # windows/amd64 darwin/amd64 darwin/arm64
#   scripts/cross-vet.sh windows/amd64       # only these targets
#
# For each target, go run ./scripts/typecheck loads every package of the module with CGO_ENABLED=0
# from source, reports every type error (what `go build` would refuse in Go code: a name missing on
# one platform, a build-tag mistake) and runs go vet's analyzers. That is every package but the
# Wails window, which is compiled only with the build tag desktop (the release build). For
# Windows the window is checked too (-tags desktop,production: Wails needs no cgo there); on macOS
# it needs cgo and Apple's SDK, so it is not checked here.
#
# For darwin/arm64 it then compiles and links every package but the window (go build ./..., its
# programs linked and discarded), so what only a compiler's back end or linker finds there is
# caught too; CROSS_COMPILE="darwin/arm64 darwin/amd64" (or "") says which targets are compiled.
# darwin/amd64 is only type-checked: with a cold Go cache, compiling the standard library and
# every dependency costs about 350 s of CPU per target (docs/PLATFORM.md), which two targets would
# add to CI's 30 minutes on 2 cores as about 6 minutes; amd64 shares its back end with Linux and
# Windows, which are compiled, while arm64 is the one architecture nothing else here compiles. The Windows programs are
# compiled and linked by scripts/windows-build.sh, and the test binaries of the packages run under
# Wine by scripts/winetest.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(windows/amd64 darwin/amd64 darwin/arm64)
compile=${CROSS_COMPILE-darwin/arm64}
tool=$(mktemp -d)/typecheck
trap 'rm -rf "$(dirname "$tool")"' EXIT
go build -o "$tool" ./scripts/typecheck
fail=0
for t in "${targets[@]}"; do
  t0=$(date +%s)
  export GOOS=${t%/*} GOARCH=${t#*/} CGO_ENABLED=0
  rc=0
  "$tool" ./... || rc=1
  if [ "$GOOS" = windows ]; then
    if [ -f frontend/dist/index.html ]; then
      TYPECHECK_TAGS=desktop,production "$tool" . ./app/cli || rc=1
    else
      echo "cross-vet: the window (build tag desktop) is not checked for Windows: frontend/dist is missing (cd frontend && npm run build)"
      rc=1
    fi
  fi
  what="type-check and vet"
  if [[ " $compile " == *" $t "* ]]; then
    what="type-check, vet and build"
    go build ./... || rc=1
  fi
  unset GOOS GOARCH CGO_ENABLED
  if [ "$rc" = 0 ]; then echo "cross-vet: $t: $what pass ($(( $(date +%s) - t0 )) s)"; else echo "cross-vet: $t: $what FAILED"; fail=1; fi
done
exit $fail
