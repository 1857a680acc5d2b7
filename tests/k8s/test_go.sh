#!/bin/sh
# gofmt -l, go vet ./... and go test -race ./... in the Go module given (k8s/), with the Go toolchain
# found on PATH or where the machine image installs it (/usr/local/go/bin, not always on PATH).
set -eu
dir=${1:?usage: test_go.sh MODULE_DIR}
go=$(command -v go 2>/dev/null || true)
[ -n "$go" ] || go=/usr/local/go/bin/go
if [ ! -x "$go" ]; then
	echo "test_go.sh: no Go toolchain (go on PATH or /usr/local/go/bin/go); k8s/go.mod needs Go $(sed -n 's/^go //p' "$dir/go.mod") or newer" >&2
	exit 1
fi
# Go keeps its module and build caches under $HOME; a CI environment may not set it.
if [ -z "${HOME:-}" ]; then
	HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
	export HOME
fi
cd "$dir"
# The modules come from the module proxy on a fresh machine; go.sum pins every one.
"$go" mod download
unformatted=$("$("$go" env GOROOT)/bin/gofmt" -l .)
if [ -n "$unformatted" ]; then
	echo "test_go.sh: not as gofmt writes them (gofmt -w):" $unformatted >&2
	exit 1
fi
"$go" vet ./...
# -p 1: the machine's cores are shared; the simulated-node tests mount one daemon each.  -race: the
# plugin prepares claims in parallel (per-claim locks, the health stream, the watch and the
# reconcile beside the gRPC calls); the race detector needs cgo, which a C compiler on PATH gives.
CGO_ENABLED=1 "$go" test -race -p 1 -count=1 ./...
