#!/bin/bash
# The bash completions of accel-smi, barswap and accel-wait (tools/completions/) offer what the
# programs take: every option their --help prints, barswap's commands and the dies its slot has,
# accel-smi's mig and sim subcommands.  Each completion function is run as bash runs it, with
# COMP_WORDS and COMP_CWORD set; no helper of the bash-completion package is needed.
set -eu
fail() { echo "test_completion: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PATH="$(dirname "$BARSWAP"):$PATH" # the completion asks barswap for the dies

# offered TOOL WORD...: what completing the last WORD of the line offers, one per line.
offered() {
	local tool=$1
	shift
	(
		source "$COMPLETIONS/$tool"
		fn=$(complete -p "$tool" | sed 's/.* -F \([^ ]*\) .*/\1/')
		COMP_WORDS=("$tool" "$@")
		COMP_CWORD=$#
		COMPREPLY=()
		"$fn" 2>/dev/null || true
		printf '%s\n' "${COMPREPLY[@]}" | sed 's/=$//'
	)
}
expect() { # WHAT WANTED... -- TOOL WORD...
	local what=$1 wanted=() w
	shift
	while [ "$1" != -- ]; do wanted+=("$1"); shift; done
	shift
	got=$(offered "$@")
	for w in "${wanted[@]}"; do
		printf '%s\n' "$got" | grep -qxe "$w" || fail "$what: completing '$*' does not offer $w (offers: $(echo $got))"
	done
}
# The options of a --help text's first column ("  -h, --help", "  --sim=STATE_DIR"), not those its
# sentences name.
first_column() {
	sed -n 's/^ *\(--*[A-Za-z][^ ]*\(, --*[A-Za-z][^ ]*\)*\).*/\1/p' | grep -oE -- '--?[A-Za-z][A-Za-z-]*' | sort -u
}
options() { "$@" --help | first_column; }

expect "barswap's options" $(options "$BARSWAP") -- barswap -
expect "barswap's commands" $("$BARSWAP" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p') disable enable -- barswap ""
expect "a policy" pinned resident -- barswap --sim="$tmp" policy 3 ""
"$BARSWAP" --sim="$tmp/slot" --sim-create query >/dev/null
expect "the slot's dies" 0 7 15 -- barswap --sim="$tmp/slot" info ""
[ -z "$(offered barswap --sim="$tmp/slot" info 3 "")" ] || fail "barswap info DIE takes nothing more, yet more is offered"

# accel-smi's --help lists its commands' flags too: the top level offers the options and commands.
expect "accel-smi's options" $("$ACCEL_SMI" --help | sed '/^commands/q' | first_column) -L -q -i -mig --json \
	-- accel-smi -
expect "accel-smi's commands" mig sim -- accel-smi ""
expect "a family" ppu gpu -- accel-smi -f ""
expect "mig's flags" $("$ACCEL_SMI" --help | grep '^  mig ' | grep -oE ' --?[A-Za-z]+' | sort -u) -- accel-smi mig -i 3 -
expect "sim's commands" $("$ACCEL_SMI" --help | sed -n 's/^  sim \([a-z-]*\).*/\1/p' | sort -u) -- accel-smi --sim sim ""

expect "accel-wait's options" $(options "$ACCEL_WAIT") -- accel-wait -
echo "test_completion: accel-smi, barswap and accel-wait complete what they take"
