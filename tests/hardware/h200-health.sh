#!/bin/bash
# Read-only check of the health seam on a real NVIDIA H200 (MIG off, and it stays off).
# Nothing here triggers an error, changes a mode, makes an instance or resets anything:
# accel-smi health only asks (an event set made, registered, one 10 ms wait, freed; ECC mode
# and counters; the recovery-action field), and accelfs runs --read-only.
#
#   BUNDLE=dir-with-accelfs-accel-smi-and-lib/  OUT=results/  tests/hardware/h200-health.sh
#
# Prints MATCH or MISMATCH for each comparison; the exit status is the number of mismatches.
set -u
BUNDLE=${BUNDLE:-.device-bundle}
OUT=${OUT:-/tmp/h200-health}
MNT=/tmp/accelfs-h200-health
STATE=/tmp/accelfs-h200-health-state
mkdir -p "$OUT" "$MNT"
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SMI=("$BUNDLE/accel-smi" -f gpu)

. "$(dirname "$0")/common.sh"
ours() { sed -n "s/^GPU 0: $1: //p" "$OUT/accel-smi-health.txt" | head -1; }
# nvidia-smi -q -d ECC: the value of a line in the Volatile or Aggregate block.
theirs() { # block, label
	awk -v block="$1" -v label="$2" '
		/^ *Volatile *$/ { in_block = (block == "Volatile"); next }
		/^ *Aggregate *$/ { in_block = (block == "Aggregate"); next }
		in_block { split($0, kv, ":"); k = kv[1]; gsub(/^ +| +$/, "", k); v = kv[2]; gsub(/^ +| +$/, "", v);
		           if (k == label) { print v; exit } }' "$OUT/nvidia-smi-q-ecc.txt"
}

before=$(mode)
{
	echo "== environment"
	nvidia-smi --version
	echo "MIG mode before: $before"
} >"$OUT/env.txt" 2>&1
"${SMI[@]}" health -i 0 >"$OUT/accel-smi-health.txt" 2>&1
nvidia-smi -q -d ECC -i 0 >"$OUT/nvidia-smi-q-ecc.txt" 2>&1

{
	echo "== the event seam (accel-smi health)"
	check "supported event types" "0xff9f" "$(ours 'supported events')"
	check "event set" "created" "$(ours 'event set')"
	check "registered for what accelfs watches" "SUCCESS" "$(ours 'registered 0xc00b')"
	check "a 10 ms wait with nothing happening" "TIMEOUT" "$(ours 'wait 10 ms')"
	check "event set freed" "SUCCESS" "$(ours 'event set freed')"
	check "recovery action" "0 (value type 1)" "$(ours 'recovery action')"

	echo "== ECC against nvidia-smi -q -d ECC"
	check "ecc mode" "$(sed -n '/ECC Mode/,/Pending/s/^ *Current *: //p' "$OUT/nvidia-smi-q-ecc.txt" | tr A-Z a-z)" \
		"$(ours 'ecc mode' | cut -d' ' -f1)"
	for block in Volatile Aggregate; do
		b=$(echo "$block" | tr A-Z a-z)
		dc=$(theirs "$block" "DRAM Correctable"); du=$(theirs "$block" "DRAM Uncorrectable")
		sc=$(theirs "$block" "SRAM Correctable")
		su=$(( $(theirs "$block" "SRAM Uncorrectable Parity" || echo 0) + $(theirs "$block" "SRAM Uncorrectable SEC-DED" || echo 0) ))
		check "$b DRAM corrected" "$dc" "$(ours "ecc $b corrected dram")"
		check "$b DRAM uncorrected" "$du" "$(ours "ecc $b uncorrected dram")"
		check "$b SRAM corrected" "$sc" "$(ours "ecc $b corrected sram")"
		check "$b SRAM uncorrected (parity + SEC-DED)" "$su" "$(ours "ecc $b uncorrected sram")"
		check "$b corrected total" "$((dc + sc))" "$(ours "ecc $b corrected total")"
		check "$b uncorrected total" "$((du + su))" "$(ours "ecc $b uncorrected total")"
	done

	echo "== accelfs --read-only: health files, and the cost of waiting"
	rm -rf "$STATE"
	if "$BUNDLE/accelfs" --read-only --state-dir="$STATE" --cdi-dir="$STATE/cdi" "$MNT"; then
		cat "$MNT/gpu0/health" >"$OUT/gpu0-health.txt"
		check "gpu0/health" "ok" "$(head -1 "$OUT/gpu0-health.txt")"
		check "gpu0/health ecc line" "ecc: corrected=$(ours 'ecc volatile corrected total') uncorrected=$(ours 'ecc volatile uncorrected total') (volatile)" \
			"$(grep '^ecc:' "$OUT/gpu0-health.txt")"
		check "node.json: the card's health" '"state": "ok",' "$(grep -A1 '^      "health": {' "$MNT/node.json" | sed -n 2p | tr -d ' ' | sed 's/:/: /')"
		pid=$(cat "$STATE/accelfs.pid")
		ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
		# The reads above used the tree: the poller keeps its cadence 10 s after the last use
		# (ACCEL_POLL_LINGER_MS, core/engine/node.h), then rests with no deadline. Measured once it rests.
		sleep 15
		t0=$(ticks); sleep 30; t1=$(ticks)
		check "CPU ticks of the idle daemon in 30 s (poller at rest, event thread waiting in the driver)" "0" "$((t1 - t0))"
		for t in /proc/"$pid"/task/*; do echo "$(basename "$t") $(cat "$t/comm") $(awk '{ print $14 + $15 }' "$t/stat")"; done >"$OUT/threads.txt"
		# The first read after the rest is served at once, and the pass it starts reads the card again.
		check "gpu0/mig/mode after the rest" "disabled" "$(cat "$MNT/gpu0/mig/mode")"
		umount "$MNT"
	else
		echo "MISMATCH accelfs did not mount (see accelfs.log)"
	fi
	cp "$STATE/accelfs.log" "$OUT/" 2>/dev/null
	check "MIG mode unchanged" "$before" "$(mode)"
} 2>&1 | tee "$OUT/summary.txt"
exit "$(mismatches)"
