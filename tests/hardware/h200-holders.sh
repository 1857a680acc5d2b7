#!/bin/bash
# Read-only check of who holds a real NVIDIA H200, as accelfs counts holders (MIG off, and it
# stays off). Nothing here changes a mode, makes an instance or resets anything: two sleeping
# processes open device nodes and ask nothing of them, and accelfs runs --read-only.
#
#   BUNDLE=dir-with-accelfs-and-lib/  OUT=results/  tests/hardware/h200-holders.sh
#
# What it shows (docs/tree.md, `holders`): a process holding only the shared /dev/nvidiactl (as
# nvidia-persistenced, nv-hostengine and the device plugin do) is a `control node=` line and no
# `pid=` line, so it would not block a mode change; a process holding /dev/nvidia0 is a `pid=`
# line (the card's own /dev/nvidia<minor>). It also records every holder of an NVIDIA node on the machine, from /proc, beside what
# gpu0/holders says. Prints MATCH or MISMATCH; the exit status is the number of mismatches.
set -u
BUNDLE=${BUNDLE:-.device-bundle}
OUT=${OUT:-/tmp/h200-holders}
MNT=/tmp/accelfs-h200-holders
STATE=/tmp/accelfs-h200-holders-state
mkdir -p "$OUT" "$MNT"
# A run cut short (a timeout) leaves its read-only daemon mounted: start from none.
umount "$MNT" 2>/dev/null
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

. "$(dirname "$0")/common.sh"
# Every process with a descriptor on an NVIDIA node, from /proc: "pid comm node".
proc_holders() {
	for fd in /proc/[0-9]*/fd/*; do
		t=$(readlink "$fd" 2>/dev/null) || continue
		case "$t" in /dev/nvidia*) p=${fd#/proc/}; p=${p%%/*}; echo "$p $(cat "/proc/$p/comm" 2>/dev/null) $t" ;; esac
	done | sort -u
}
# A process that opens NODE and sleeps, asking the driver nothing; its pid. Its output goes
# elsewhere: a background process keeping the $(...)'s pipe open would hold the caller for good.
hold() {
	python3 -c 'import os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); time.sleep(600)' "$1" >/dev/null 2>&1 &
	echo $!
}

before=$(mode)
# The card's own node: /dev/nvidia<minor> (a container may hold a GPU whose minor is not 0).
dev=/dev/nvidia$(nvidia-smi -q -i 0 | awk -F: '/Minor Number/ { gsub(/ /, "", $2); print $2; exit }')
{
	echo "the card's node: $dev"
	echo "== before: every holder of an NVIDIA node (pid comm node), from /proc"
	proc_holders
	echo "== daemons that usually hold the control node"
	for d in nvidia-persistenced nv-hostengine nvidia-device-plugin dcgm-exporter; do
		echo "$d: $(pgrep -f "$d" | tr '\n' ' ')"
	done
} >"$OUT/node-holders.txt" 2>&1

{
	echo "== accelfs --read-only: gpu0/holders"
	rm -rf "$STATE"
	if "$BUNDLE/accelfs" --read-only --state-dir="$STATE" --cdi-dir="$STATE/cdi" "$MNT"; then
		cp "$MNT/gpu0/holders" "$OUT/holders-idle.txt"
		check "pid= lines while nothing but the machine's daemons run" \
			"$(awk -v dev="$dev" '$3 == dev { print $1 }' "$OUT/node-holders.txt" | sort -u | wc -l)" \
			"$(grep -c '^pid=' "$OUT/holders-idle.txt")"
		ctl=$(hold /dev/nvidiactl)
		gpu=$(hold "$dev")
		sleep 1
		cp "$MNT/gpu0/holders" "$OUT/holders-two.txt"
		proc_holders >"$OUT/node-holders-two.txt"
		check "a holder of /dev/nvidiactl alone: a control node line" "1" \
			"$(grep -c "^control node=/dev/nvidiactl pid=$ctl " "$OUT/holders-two.txt")"
		check "a holder of /dev/nvidiactl alone: no pid= line (blocks nothing)" "0" \
			"$(grep -c "^pid=$ctl " "$OUT/holders-two.txt")"
		check "a holder of $dev: a pid= line" "1" "$(grep -c "^pid=$gpu " "$OUT/holders-two.txt")"
		kill "$ctl" "$gpu"
		wait "$ctl" "$gpu" 2>/dev/null
		check "both gone: neither is named" "0" "$(grep -c -E "pid=($ctl|$gpu) " "$MNT/gpu0/holders")"
		check "gpu0/mig/mode" "disabled" "$(cat "$MNT/gpu0/mig/mode")"
		umount "$MNT"
	else
		echo "MISMATCH accelfs did not mount (see accelfs.log)"
	fi
	cp "$STATE/accelfs.log" "$OUT/" 2>/dev/null
	check "MIG mode unchanged" "$before" "$(mode)"
} 2>&1 | tee "$OUT/summary.txt"
exit "$(mismatches)"
