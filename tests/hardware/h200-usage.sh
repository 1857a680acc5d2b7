#!/bin/bash
# Read-only check of the utilization seam on a real NVIDIA H200 (MIG off, and it stays off):
# the card-level GPM sample pair and the energy counter, against what nvidia-smi reports, and the
# card's utilization file of an accelfs mounted --read-only. Nothing here changes a mode, makes an
# instance or resets anything: GPM samples and the energy counter are reads.
#
#   BUNDLE=dir-with-accelfs-hw-usage-probe-and-lib/  OUT=results/  tests/hardware/h200-usage.sh
#
# Prints MATCH or MISMATCH for each comparison; the exit status is the number of mismatches.
set -u
BUNDLE=${BUNDLE:-.device-bundle}
OUT=${OUT:-/tmp/h200-usage}
MNT=/tmp/accelfs-h200-usage
STATE=/tmp/accelfs-h200-usage-state
mkdir -p "$OUT" "$MNT"
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

. "$(dirname "$0")/common.sh"
probe() { sed -n "s/^$1: //p" "$OUT/hw-usage-probe.txt" | head -1; }
util() { sed -n "s/^$1: //p" "$OUT/gpu0-utilization.txt" | head -1; }

before=$(mode)
{
	echo "== environment"
	nvidia-smi --version
	echo "MIG mode before: $before"
} >"$OUT/env.txt" 2>&1

# The probe's energy window (2 s) and nvidia-smi's power over the same seconds.
( sleep 1; nvidia-smi -q -d POWER -i 0 ) >"$OUT/nvidia-smi-power.txt" 2>&1 &
smi_pid=$!
"$BUNDLE/hw-usage-probe" gpu >"$OUT/hw-usage-probe.txt" 2>&1
probe_rc=$?
wait "$smi_pid"
nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,memory.reserved --format=csv,noheader,nounits -i 0 \
	>"$OUT/nvidia-smi-query.txt" 2>&1

"$BUNDLE/accelfs" --read-only --state-dir="$STATE" "$MNT" >"$OUT/accelfs-start.txt" 2>&1
cat "$MNT/gpu0/utilization" >"$OUT/gpu0-utilization.txt" 2>&1
sleep 2
cat "$MNT/gpu0/utilization" >"$OUT/gpu0-utilization-2.txt" 2>&1
fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT"

{
	echo "== the probe (hw-usage-probe: GPM pair 1 s apart, energy 2 s apart, memory)"
	check "probe exit status" "0" "$probe_rc"
	check "GPM support" "SUCCESS isSupportedDevice=1" "$(probe 'gpm support')"
	check "GPM card sample pair" "SUCCESS" "$(probe 'gpm card window' | cut -d' ' -f1)"
	for id in 2 3 10; do
		check "GPM metric $id answered" "SUCCESS" "$(probe "metric $id" | cut -d' ' -f1)"
	done
	check "GpmMigSampleGet with MIG off (what the simulator reproduces)" "INVALID_ARGUMENT" \
		"$(probe 'gpm mig sample gi 0')"
	check "energy counter" "SUCCESS" "$(probe energy | cut -d' ' -f1)"

	echo "== against nvidia-smi"
	# driver 580's nvidia-smi takes no power.draw query with -lms/-c: its own average over its window
	smi_w=$(sed -n 's/^ *Average Power Draw *: \([0-9.]*\) W$/\1/p' "$OUT/nvidia-smi-power.txt" | head -1)
	ours_w=$(probe energy | sed -n 's/.*= \([0-9.]*\) W$/\1/p')
	near "mean power over the energy window (W)" "$smi_w" "$ours_w" 15
	IFS=', ' read -r smi_util smi_used smi_total smi_reserved <"$OUT/nvidia-smi-query.txt"
	# NVML's first memory query counts the driver's reservation as used; nvidia-smi shows it apart
	# (driver 580: memory.used 0 MiB, memory.reserved 615 MiB on an idle H200).
	smi_used=$((smi_used + smi_reserved))
	ours_total=$(probe memory | sed -n 's/.*total=\([0-9]*\).*/\1/p')
	near "memory total (MiB)" "$smi_total" "$((ours_total / 1048576))" 1
	ours_used=$(probe memory | sed -n 's/.*used=\([0-9]*\).*/\1/p')
	near "memory used, reserved included (MiB)" "$smi_used" "$((ours_used / 1048576))" 64
	sm=$(probe 'metric 2' | cut -d' ' -f2)
	near "SM activity (percent; nvidia-smi's utilization.gpu, idle)" "$smi_util" "$sm" 5

	echo "== accelfs --read-only: gpu0/utilization"
	check "the file has a window" "yes" "$(util window_ms | grep -qE '^[0-9]+$' && echo yes || echo no)"
	check "SM activity is a number" "yes" "$(util sm_activity_percent | grep -qE '^[0-9]+\.[0-9]$' && echo yes || echo no)"
	near "memory total (MiB)" "$smi_total" "$(( $(util memory_total_bytes) / 1048576 ))" 1
	check "energy is the card's counter" "yes" "$(util energy_joules | grep -qE '^[0-9]+\.[0-9]{3}$' && echo yes || echo no)"
	e1=$(sed -n 's/^energy_joules: //p' "$OUT/gpu0-utilization-2.txt")
	check "the counter moved between two reads 2 s apart" "yes" \
		"$(awk -v a="$(util energy_joules)" -v b="$e1" 'BEGIN { print (b > a) ? "yes" : "no" }')"

	after=$(mode)
	check "MIG mode unchanged" "$before" "$after"
} 2>&1 | tee "$OUT/summary.txt"
exit "$(mismatches)"
