#!/bin/bash
# SPDX-License-Identifier: MIT
#
# accel-smi over both simulators: the nvidia-smi layout line for line
# against a real H200's output (data/), the ppu-smi flows of the T-Head
# runbook (carve, the GI-in-use refusal, holders blocking a mode change,
# the comma-list quirk), and the sim-only commands.
#
# Needs ACCELFS_SMI (the tool) and ACCELFS_TEST_DATA; meson sets both.
set -u

SMI=${ACCELFS_SMI:?set ACCELFS_SMI to the accel-smi binary}
DATA=${ACCELFS_TEST_DATA:?set ACCELFS_TEST_DATA to tests/sim/data}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accel-smi-test.XXXXXX")
# --sim=DIR wants an existing directory (a typo must not conjure up an empty node).
mkdir "$tmp/state"
holder=
pass=0
fail=0

cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

ppu() { "$SMI" --sim="$tmp/state" -f ppu "$@"; }
gpu() { "$SMI" --sim="$tmp/state" -f gpu "$@"; }

ok() {
	pass=$((pass + 1))
}
bad() {
	echo "FAIL: $*"
	fail=$((fail + 1))
}
# expect NAME COMMAND...: the command succeeds
expect() {
	local name=$1
	shift
	if "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else bad "$name (exit $?): $(cat "$tmp/out" "$tmp/err")"; fi
}
# refuse NAME COMMAND...: the command fails
refuse() {
	local name=$1
	shift
	if "$@" >"$tmp/out" 2>"$tmp/err"; then bad "$name: succeeded: $(cat "$tmp/out")"; else ok; fi
}
# has NAME FILE TEXT: FILE contains TEXT
has() {
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: no \"$3\" in: $(cat "$2")"; fi
}
hasnt() {
	if grep -qF -- "$3" "$2"; then bad "$1: unexpected \"$3\" in: $(cat "$2")"; else ok; fi
}
same() {
	if diff -u "$2" "$3" >"$tmp/diff"; then ok; else bad "$1: $(cat "$tmp/diff")"; fi
}

# --- NVIDIA: the real H200's tables, line for line ---------------------------
expect "gpu -lgip" gpu mig -lgip
same "gpu -lgip matches nvidia-smi 580" "$DATA/h200-580-lgip.txt" "$tmp/out"
expect "gpu -lgipp" gpu mig -i 0 -lgipp
same "gpu -lgipp matches nvidia-smi 580" "$DATA/h200-580-lgipp.txt" "$tmp/out"
# The real table was read with the mode off: the H200 answers all the same.
expect "gpu -mig 0" gpu -i 0 -mig 0
has "gpu -mig 0 message" "$tmp/out" "Disabled MIG Mode for GPU 00000000:00:06.0"
expect "gpu -lgip, mode off" gpu mig -lgip
same "gpu -lgip with the mode off" "$DATA/h200-580-lgip.txt" "$tmp/out"
expect "gpu -lgi, mode off" gpu mig -lgi
has "gpu -lgi, mode off" "$tmp/out" "No MIG-enabled devices found."
expect "gpu -mig 1" gpu -i 0 -mig 1
expect "gpu -L" gpu -L
has "gpu -L" "$tmp/out" "GPU 0: NVIDIA H200 (UUID: GPU-"

# Carve 3g + 4g, subdivide the 3g, list.
expect "gpu -cgi 3g,4g" gpu mig -i 0 -cgi 3g.71gb:4,"MIG 4g.71gb" -C
has "gpu -cgi message" "$tmp/out" "Successfully created GPU instance ID  0 on GPU  0 using profile MIG 3g.71gb (ID  9)"
has "gpu -C message" "$tmp/out" "using profile MIG 3g.71gb (ID  2)"
expect "gpu -lgi" gpu mig -i 0 -lgi
has "gpu -lgi row" "$tmp/out" "|   0  MIG 3g.71gb            9        0          4:4     |"
has "gpu -lgi row 2" "$tmp/out" "|   0  MIG 4g.71gb            5        1          0:4     |"
refuse "gpu -cgi 7g on a full GPU" gpu mig -i 0 -cgi 0
has "gpu insufficient" "$tmp/err" "Insufficient Resources"
expect "gpu -lgipp after carving" gpu mig -i 0 -lgipp
same "gpu -lgipp ignores occupancy" "$DATA/h200-580-lgipp.txt" "$tmp/out"
expect "gpu -lcip" gpu mig -i 0 -gi 1 -lcip
has "gpu -lcip default" "$tmp/out" "MIG 4g.71gb          3*"
has "gpu -lcip share" "$tmp/out" "MIG 1c.4g.71gb       0      0/4"
expect "gpu -dci" gpu mig -i 0 -gi 1 -dci
expect "gpu -cci 1c,1c" gpu mig -i 0 -gi 1 -cci 0,1c.4g.71gb
expect "gpu -lci" gpu mig -i 0 -gi 1 -lci
has "gpu -lci row" "$tmp/out" "|   0      1       MIG 1c.4g.71gb       0         1          1:1     |"
expect "gpu -L with MIG devices" gpu -L
has "gpu -L MIG line" "$tmp/out" "  MIG 3g.71gb     Device  0: (UUID: MIG-"

# --- T-Head: the runbook's flows -------------------------------------------------
expect "ppu -L" ppu -L
has "ppu -L" "$tmp/out" "PPU 15: PPU-ZW810E (UUID: GPU-"
expect "ppu -q" ppu -q -i 3
has "ppu -q current" "$tmp/out" "        Current                             : Enabled"
has "ppu -q pending" "$tmp/out" "        Pending                             : Enabled"
has "ppu -q minor" "$tmp/out" "    Minor Number                            : 4"
expect "ppu -lgip" ppu mig -i 3 -lgip
has "ppu -lgip 4g" "$tmp/out" "| 3    MIG 4g48gb              5        2/2      48.00   No   32      2     2     |"
has "ppu -lgip 8g" "$tmp/out" "| 3    MIG 8g96gb              3        1/1      96.00   No   64      4     4     |"
expect "ppu -lgipp" ppu mig -i 3 -lgipp
cp "$tmp/out" "$tmp/lgipp.before"
has "ppu -lgipp" "$tmp/out" "PPU 3 profile ID 5 placements: {0,4}:4"
expect "ppu -cgi 5 -C" ppu mig -i 3 -cgi 5 -C
has "ppu -cgi message" "$tmp/out" "Successfully created GPU instance ID 0 on PPU 3 using profile MIG 4g48gb (Profile ID 5)"
has "ppu -C message" "$tmp/out" "Successfully created compute instance ID 0 on PPU 3 GPU instance ID 0 using profile MIG 32u.4g48gb (Profile ID 2)"
expect "ppu -cgi 4g48gb by name" ppu mig -i 3 -cgi 4g48gb
expect "ppu -lgip carved" ppu mig -i 3 -lgip
has "ppu free 0/2" "$tmp/out" "MIG 4g48gb              5        0/2"
has "ppu 8g 0/1" "$tmp/out" "MIG 8g96gb              3        0/1"
expect "ppu -lgipp carved" ppu mig -i 3 -lgipp
same "ppu -lgipp ignores occupancy" "$tmp/lgipp.before" "$tmp/out"
expect "ppu -lgi" ppu mig -i 3 -lgi
has "ppu -lgi" "$tmp/out" "| 3    MIG 4g48gb              5        0         0:4     |"
has "ppu -lgi 2" "$tmp/out" "| 3    MIG 4g48gb              5        1         4:4     |"
expect "ppu -lci" ppu mig -i 3 -lci
has "ppu -lci" "$tmp/out" "| 3       0      MIG 32u.4g48gb          2        0         0:4     |"
expect "ppu -lcip --ids" ppu mig -i 3 -gi 0 -lcip --ids
has "ppu --ids whole" "$tmp/out" "2:4"
# The GI refuses to go while its CI lives; the manufacturer's spelling.
refuse "ppu -dgi with a CI" ppu mig -i 3 -gi 0 -dgi
has "ppu destory" "$tmp/err" "GPU instance 0 is in use, please destory related compute instances then try again"
expect "ppu sim kmsg" ppu sim kmsg
has "kmsg destory" "$tmp/out" "[alixpu] GPU instance 0 is in use, please destory"
# Busy: the CI cannot go either.
expect "ppu sim busy 1" ppu sim busy -i 3 -gi 0 -ci 0 1
refuse "ppu -dci busy" ppu mig -i 3 -gi 0 -ci 0 -dci
expect "ppu sim busy 0" ppu sim busy -i 3 -gi 0 -ci 0 0
expect "ppu -dci" ppu mig -i 3 -gi 0 -ci 0 -dci
has "ppu -dci message" "$tmp/out" "Successfully destroyed compute instance ID 0 from PPU 3 GPU instance 0"
# -dgi without -gi destroys every GI, with a warning.
expect "ppu -dgi all" ppu mig -i 3 -dgi
has "ppu -dgi warns" "$tmp/err" "destroys every GPU instance"
has "ppu -dgi both" "$tmp/out" "Successfully destroyed GPU instance ID 1 from PPU 3"
expect "ppu -lgi empty" ppu mig -i 3 -lgi
has "ppu -lgi empty" "$tmp/out" "No GPU instances found."
# A placement by start.
expect "ppu -cgi 5:4" ppu mig -i 4 -cgi 5:4
expect "ppu -lgi 5:4" ppu mig -i 4 -lgi
has "ppu -lgi placement 4:4" "$tmp/out" "0         4:4"
refuse "ppu -cgi 5:2 illegal" ppu mig -i 4 -cgi 5:2
has "ppu illegal placement" "$tmp/err" "Invalid Argument"

# -mig is top-level, one PPU per call; a list reads like missing hardware.
refuse "ppu mig -mig" ppu mig -i 2 -mig 1
refuse "ppu -i 1,2 -mig 1" ppu -i 1,2 -mig 1
has "ppu list quirk" "$tmp/err" "No devices were found"
# Mode refused while a GI exists.
refuse "ppu -mig 0 with a GI" ppu -i 4 -mig 0
has "ppu -mig 0 GI" "$tmp/err" "MIG resources are in use, please destroy related GPU instances and try again"
has "ppu -mig 0 GI 2" "$tmp/err" "Failed to Disable MIG mode for PPU 00000000:30:00.0: An operation cannot be performed because the PPU is currently in use."
expect "ppu -dgi 4" ppu mig -i 4 -gi 0 -dgi

# A holder of the control nodes blocks a mode change on another PPU.
# The binary itself in the background, so that $! is the holder (not a subshell).
"$SMI" --sim="$tmp/state" -f ppu sim hold -i 7 --control >"$tmp/hold" 2>&1 &
holder=$!
for _ in $(seq 50); do grep -q "^pid" "$tmp/hold" && break; sleep 0.1; done
has "ppu sim hold" "$tmp/hold" "holds 3 nodes"
refuse "ppu -mig 0 held" ppu -i 2 -mig 0
has "ppu held message" "$tmp/err" "MIG resources are in use, please destroy related GPU instances and try again"
has "ppu held message 2" "$tmp/err" "Failed to Disable MIG mode for PPU"
expect "ppu sim kmsg held" ppu sim kmsg
has "kmsg active" "$tmp/out" "[alixpu] PPU002 contains 2 active process, please try reset later ..."
has "kmsg holder" "$tmp/out" "[alixpu] Process[accel-smi], pid:$holder, uki_version:"
has "kmsg failed" "$tmp/out" "[alixpu] PPU002 set MIG mode failed"
kill "$holder"
wait "$holder" 2>/dev/null
holder=
expect "ppu -mig 0 free" ppu -i 2 -mig 0
has "ppu -mig 0 message" "$tmp/out" "Disable MIG mode for PPU 00000000:20:00.0."
has "ppu all done" "$tmp/out" "All done."
expect "ppu -q off" ppu -q -i 2
has "ppu -q off current" "$tmp/out" "        Current                             : Disabled"
has "ppu -q off pending" "$tmp/out" "        Pending                             : Disabled"
expect "ppu -lgip off" ppu mig -i 2 -lgip
has "ppu no profiles with the mode off" "$tmp/out" "No MIG-enabled devices found."
expect "ppu -mig 1" ppu -i 2 -mig 1

# Faults: the armed call fails once, the next succeeds; -C's CI step fails.
expect "ppu sim fault" ppu sim fault GpuInstanceCreateComputeInstance --ret INSUFFICIENT_RESOURCES
refuse "ppu -cgi -C faulted" ppu mig -i 5 -cgi 3 -C
has "ppu fault message" "$tmp/err" "Insufficient Resources"
expect "ppu sim faults" ppu sim faults
has "ppu fault fired" "$tmp/out" "hgmlGpuInstanceCreateComputeInstance returns INSUFFICIENT_RESOURCES: skip 0, times 0, fired 1 (spent)"
expect "ppu -cci after the fault" ppu mig -i 5 -gi 0 -cci
expect "ppu sim clear-faults" ppu sim clear-faults
expect "ppu sim faults empty" ppu sim faults
has "ppu faults cleared" "$tmp/out" "No faults armed."
refuse "ppu sim fault unknown" ppu sim fault NoSuchCall
# '*': the k-th driver call from now fails, whichever it is.  accel-smi's own
# Init_v2 is spared; -lgi makes two calls before its list (DeviceGetCount_v2,
# DeviceGetHandleByIndex_v2), so skip 1 fails the handle lookup.
expect "ppu sim fault *" ppu sim fault '*' GPU_IS_LOST --skip 1 --times 1
has "ppu sim fault * message" "$tmp/out" "Armed: any driver call returns GPU_IS_LOST after 1 call, 1 time"
refuse "ppu -lgi faulted by *" ppu mig -i 5 -lgi
has "ppu * fault message" "$tmp/err" "PPU is lost"
expect "ppu sim faults *" ppu sim faults
has "ppu * fired" "$tmp/out" "any driver call returns GPU_IS_LOST: skip 0, times 0, fired 1 (spent)"
expect "ppu -lgi after *" ppu mig -i 5 -lgi
expect "ppu sim fault * --ret" ppu sim fault '*' --ret IN_USE --times 2
refuse "ppu sim fault two codes" ppu sim fault '*' IN_USE --ret UNKNOWN
expect "ppu sim clear-faults *" ppu sim clear-faults

# sim calls: what the driver received per function, from every process,
# each command's own Init_v2 and Shutdown included (a command's Shutdown
# comes after it printed; the reset's own Shutdown is counted after the reset).
expect "ppu sim calls --reset" ppu sim calls --reset
expect "ppu sim calls" ppu sim calls
printf 'Init_v2 1\nShutdown 1\n' >"$tmp/want"
same "ppu sim calls after a reset" "$tmp/want" "$tmp/out"
expect "ppu sim busy, counted" ppu sim busy -i 5 -gi 0 -ci 0 0
expect "ppu sim fault * for counting" ppu sim fault '*' UNKNOWN --skip 1
refuse "ppu -q faulted, counted" ppu -q -i 5
expect "ppu sim calls after busy and -q" ppu sim calls
printf 'DeviceGetCount_v2 1\nDeviceGetHandleByIndex_v2 2\nInit_v2 5\nShutdown 5\n' >"$tmp/want"
same "ppu sim calls counts exactly" "$tmp/want" "$tmp/out"
refuse "ppu sim calls bad option" ppu sim calls --zero
expect "ppu sim help" ppu sim help
has "sim help names calls" "$tmp/out" "calls [--reset]"
has "sim help names the wildcard" "$tmp/out" "fault FUNCTION|'*'"
expect "ppu sim clear-faults after counting" ppu sim clear-faults

# A card off the bus.
expect "ppu sim remove" ppu sim remove -i 6
refuse "ppu lost card" ppu mig -i 6 -lgip
has "ppu lost" "$tmp/err" "PPU is lost"
expect "ppu sim add" ppu sim add -i 6

# The sim commands refuse a real driver (or no driver at all).
refuse "sim without --sim" env PPU_HOME="$tmp/nowhere" "$SMI" -f ppu sim faults
expect "sim paths" ppu sim paths
has "sim paths dev" "$tmp/out" "$tmp/state/sim/thead/dev"

# A state directory that does not exist is refused (status 2) and left uncreated, unless
# --sim-create asks for a fresh one.
"$SMI" --sim="$tmp/missing" -f ppu -L >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ]; then ok; else bad "missing state dir: not status 2"; fi
has "missing state dir message" "$tmp/err" "does not exist"
has "missing state dir names --sim-create" "$tmp/err" "--sim-create"
if [ -e "$tmp/missing" ]; then bad "missing state dir was created"; else ok; fi
expect "--sim-create makes it" "$SMI" --sim="$tmp/missing/deeper" --sim-create -f ppu -L
if [ -d "$tmp/missing/deeper/sim" ]; then ok; else bad "--sim-create made no state directory"; fi
"$SMI" --sim-create -f ppu -L >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ]; then ok; else bad "--sim-create without --sim: not status 2"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
