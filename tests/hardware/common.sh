# Sourced by the h200-*.sh scripts: how each of them compares and reports.
#
# Every comparison prints one line, MATCH or MISMATCH, into the script's
# summary.txt; the script's exit status is the number of MISMATCH lines there
# (mismatches), counted once at the end because the comparisons run in a
# pipeline to tee, where a counter would not outlive its subshell.

# check NAME EXPECTED ACTUAL: the two strings, equal.
check() {
	if [ "$2" = "$3" ]; then echo "MATCH    $1: $2"; else echo "MISMATCH $1: expected '$2', got '$3'"; fi
}

# near NAME EXPECTED ACTUAL TOLERANCE: two numbers, within an absolute tolerance.
near() {
	if awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; then
		echo "MATCH    $1: $3 (nvidia-smi $2, within $4)"
	else
		echo "MISMATCH $1: nvidia-smi '$2', ours '$3' (tolerance $4)"
	fi
}

# Card 0's MIG mode, current and pending: read before and after, the proof that
# nothing the script ran changed it.
mode() { nvidia-smi --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader -i 0; }

# The exit status: how many comparisons in $OUT/summary.txt did not match.
mismatches() { grep -c '^MISMATCH' "$OUT/summary.txt"; }
