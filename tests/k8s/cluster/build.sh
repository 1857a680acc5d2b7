#!/bin/sh
# SPDX-License-Identifier: MIT
# build.sh OUTDIR: the programs of the Kubernetes tests 3 and 4 (docs/kubernetes.md), from the Go
# module proxy, pinned by the go.mod and go.sum of the three build modules here (no Kubernetes code
# is kept in this repository): kube-apiserver, kube-scheduler, kube-controller-manager, kubelet and
# kubectl (k8s.io/kubernetes v1.37.2, its staging modules replaced with v0.37.2 as its own go.mod
# replaces them with its staging/ tree), etcd (go.etcd.io/etcd/server/v3), containerd, its runc
# shim and ctr (github.com/containerd/containerd/v2), and the plugin, accelfs-dra (k8s/).  Static,
# no cgo.  GOMODCACHE and GOCACHE are Go's own (a fresh pair of directories is a cold build); each
# module's time is printed.  Run nice'd on a shared machine: the Kubernetes build is the long one.
set -eu
out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
go=$(command -v go 2>/dev/null || echo /usr/local/go/bin/go)
mkdir -p "$out"
out=$(cd "$out" && pwd)
export CGO_ENABLED=0
# The version the programs report (the Node's kubeletVersion, /version), as Kubernetes' own build stamps it.
kube_version="-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1"
kube_version="$kube_version -X k8s.io/component-base/version.gitMinor=37"
step() {
	name=$1 dir=$2 flags=$3
	shift 3
	t0=$(date +%s)
	(cd "$dir" && "$go" mod download && "$go" build -trimpath -ldflags="$flags" -o "$out/" "$@")
	echo "build.sh: $name: $(($(date +%s) - t0)) s"
}
t=$(date +%s)
step kubernetes "$here/kube" "$kube_version" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
step etcd "$here/etcd" "" go.etcd.io/etcd/server/v3
mv "$out/server" "$out/etcd" # the package go.etcd.io/etcd/server/v3 builds "server"
step containerd "$here/containerd" "" github.com/containerd/containerd/v2/cmd/containerd \
	github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr
step accelfs-dra "$here/../../../k8s" "" ./cmd/accelfs-dra
echo "build.sh: all: $(($(date +%s) - t)) s"
