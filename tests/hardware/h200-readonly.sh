#!/bin/bash
# Read-only validation of the NVML path on a real NVIDIA H200 whose MIG mode is
# off and must stay off.  Nothing here enables MIG, creates or destroys an
# instance, or resets the GPU: accelfs runs --read-only, accel-smi only lists.
#
#   BUNDLE=dir-with-accelfs-accel-smi-and-lib/  OUT=results/  tests/hardware/h200-readonly.sh
#
# It records nvidia-smi's view and ours side by side and prints MATCH or
# MISMATCH for each comparison; the exit status is the number of mismatches.
set -u
BUNDLE=${BUNDLE:-.device-bundle}
OUT=${OUT:-/tmp/h200-readonly}
RAW=${RAW:-/tmp/h200-readonly-raw} # ours, beside nvidia-smi's, and the diffs
MNT=/tmp/accelfs-h200
STATE=/tmp/accelfs-h200-state
mkdir -p "$OUT" "$RAW" "$MNT"
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SMI=("$BUNDLE/accel-smi" -f gpu)
. "$(dirname "$0")/common.sh"

{
	echo "== environment"
	grep PRETTY_NAME /etc/os-release
	ldd --version | head -1
	nvidia-smi --version
	ls -l /dev/fuse
	echo "MIG mode before: $(mode)"
} >"$OUT/env.txt" 2>&1
before=$(mode)

nvidia-smi mig -lgip >"$OUT/nvidia-smi-lgip.txt" 2>&1
nvidia-smi mig -lgipp >"$OUT/nvidia-smi-lgipp.txt" 2>&1
"${SMI[@]}" mig -lgip >"$RAW/accel-smi-lgip.txt" 2>&1
"${SMI[@]}" mig -lgipp >"$RAW/accel-smi-lgipp.txt" 2>&1
nvidia-smi -q -i 0 >"$OUT/nvidia-smi-q.txt" 2>&1
"${SMI[@]}" -q -i 0 >"$RAW/accel-smi-q.txt" 2>&1

{
	echo "== profile listings, line for line"
	if diff -u "$OUT/nvidia-smi-lgip.txt" "$RAW/accel-smi-lgip.txt" >"$RAW/diff-lgip.txt"; then
		echo "MATCH    -lgip: $(wc -l <"$OUT/nvidia-smi-lgip.txt") lines"
	else
		echo "MISMATCH -lgip: $(cat "$RAW/diff-lgip.txt")"
	fi
	if diff -u "$OUT/nvidia-smi-lgipp.txt" "$RAW/accel-smi-lgipp.txt" >"$RAW/diff-lgipp.txt"; then
		echo "MATCH    -lgipp: $(wc -l <"$OUT/nvidia-smi-lgipp.txt") lines"
	else
		echo "MISMATCH -lgipp: $(cat "$RAW/diff-lgipp.txt")"
	fi

	echo "== the running-process query (DeviceGetComputeRunningProcesses_v3), asked only"
	python3 "$(dirname "$0")/running-processes.py" >"$OUT/running-processes.txt" 2>&1
	check "the card's processes (ctypes)" "gpu0: card: count=0 infos=NULL -> ret=0 count=0" \
		"$(grep -m1 '^gpu0: card: count=0' "$OUT/running-processes.txt")"
	if [ -x "$BUNDLE/hw-running-processes" ]; then
		"$BUNDLE/hw-running-processes" gpu >"$OUT/hw-running-processes.txt" 2>&1
		echo "hw-running-processes exit $?" >>"$OUT/hw-running-processes.txt"
		check "the query resolved at load" "nvmlDeviceGetComputeRunningProcesses_v3: resolved" \
			"$(grep -m1 'GetComputeRunningProcesses_v3' "$OUT/hw-running-processes.txt")"
		check "gpu0's processes (nothing runs; MIG off: no MIG device)" "gpu0: card: SUCCESS count=0" \
			"$(grep -m1 '^gpu0: card:' "$OUT/hw-running-processes.txt")"
		check "nvidia-smi's compute apps" "" "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader -i 0)"
	else
		echo "MISMATCH no hw-running-processes in $BUNDLE"
	fi

	echo "== accelfs --read-only, without --sim"
	rm -rf "$STATE"
	if "$BUNDLE/accelfs" --read-only --state-dir="$STATE" --cdi-dir="$STATE/cdi" "$MNT"; then
		find "$MNT" -maxdepth 3 | sort >"$OUT/tree.txt"
		cat "$MNT/gpu0/info" >"$OUT/gpu0-info.txt"

		q() { sed -n "s/^ *$1 *: //p" "$OUT/nvidia-smi-q.txt" | head -1; }
		i() { sed -n "s/^$1: //p" "$OUT/gpu0-info.txt" | head -1; }
		check "gpu0 present" "yes" "$([ -d "$MNT/gpu0" ] && echo yes || echo no)"
		check "mig/mode" "disabled" "$(cat "$MNT/gpu0/mig/mode")"
		# mig/ holds its files (instances, map, mode, layout, layout_status, cordon, last_error, and
		# whatever rows are added later) and, with MIG on, one directory per profile: a profile's
		# name has a dot (1g.18gb), no file's has.
		ls "$MNT/gpu0/mig" >"$OUT/gpu0-mig.txt"
		check "no profile directory while MIG is off" "0" "$(grep -c '\.' "$OUT/gpu0-mig.txt")"
		check "mig/ lists its files" "yes" "$(grep -qx instances "$OUT/gpu0-mig.txt" && grep -qx mode "$OUT/gpu0-mig.txt" && echo yes || echo no)"
		check "product" "$(q 'Product Name')" "$(i product)"
		check "uuid" "$(q 'GPU UUID')" "$(i uuid)"
		check "bus id" "$(q 'Bus Id')" "$(i bus_id)"
		check "minor" "$(q 'Minor Number')" "$(i minor)"
		check "mig mode (nvidia-smi -q)" "Disabled" "$(sed -n '/MIG Mode/,/Pending/s/^ *Current *: //p' "$OUT/nvidia-smi-q.txt")"
		check "driver library" "libnvidia-ml.so.1" "$(basename "$(i driver_library)")"
		umount "$MNT"
	else
		echo "MISMATCH accelfs did not mount (see accelfs.log)"
	fi
	cp "$STATE/accelfs.log" "$OUT/" 2>/dev/null
	check "MIG mode unchanged" "$before" "$(mode)"
} 2>&1 | tee "$OUT/summary.txt"
exit "$(mismatches)"
