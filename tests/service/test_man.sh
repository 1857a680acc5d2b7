#!/bin/sh
# Every page of the manual renders under `man -l` without one warning, and
# says what the program says: each option of `accelfs --help`, `accel-smi
# --help` and `barswap --help`, and each environment variable accelfs reads,
# is in its page; accelfs(5) names every file of the tree.
# accelfs-dra(8) renders here too; its program is Go, built outside meson, so
# test_manual.py holds its page to the source (flags, defaults, metrics, taints).
set -eu
fail() { echo "test_man: $*" >&2; exit 1; }

pages="accelfs.8 accelfs.5 accel-smi.1 barswap.1 accel-wait.1 accelfs-hook.8 accelfs-dra.8"
[ -z "${ACCELFS_SLURM_SYNC:-}" ] || pages="$pages accelfs-slurm-sync.8"
# The built pages, and the checked-in ones as `man -l man/*` in a checkout shows them.
for f in $(for page in $pages; do echo "$MAN_DIR/$page" "$MAN_SRC/$page"; done); do
	page=$f
	[ -f "$f" ] || fail "$f was not built"
	# --warnings: groff's warnings (undefined macros, bad escapes, lines too long for
	# the width) reach stderr; -E UTF-8 and a fixed width make the run the same everywhere.
	err=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l "$f" 2>&1 >/dev/null) ||
		fail "man -l $page failed: $err"
	[ -z "$err" ] || fail "man -l $page warns:
$err"
	text=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -E UTF-8 -l "$f" 2>/dev/null)
	for section in NAME SYNOPSIS DESCRIPTION; do
		printf '%s\n' "$text" | grep -q "^$section" || fail "$page has no $section section"
	done
	case "$text" in *@*@*) printf '%s\n' "$text" | grep -n '@[A-Z]*@' >&2 && fail "$page keeps a placeholder" ;; esac
done

# The options a program prints in --help, each as the page must show it ("--state-dir").
options() {
	"$@" --help | grep -oE '(^|[ ,[|])--?[A-Za-z][A-Za-z-]*' | sed 's/^[ ,[|]*//' | sort -u
}
page_text() {
	LC_ALL=C.UTF-8 MANWIDTH=200 man -E UTF-8 -l "$MAN_DIR/$1" 2>/dev/null
}
check_options() {
	page=$1
	shift
	text=$(page_text "$page")
	for opt in $(options "$@"); do
		printf '%s\n' "$text" | grep -qe "$opt" || fail "$page does not document $opt (from $* --help)"
	done
}
check_options accelfs.8 "$ACCELFS"
check_options accel-smi.1 "$ACCEL_SMI"
check_options barswap.1 "$BARSWAP"
check_options accel-wait.1 "$ACCEL_WAIT"
check_options accelfs-hook.8 "$ACCELFS_HOOK"
[ -z "${ACCELFS_SLURM_SYNC:-}" ] || check_options accelfs-slurm-sync.8 "$ACCELFS_SLURM_SYNC"
# The version the build rewrites into each page is the project's, and no other string is left unset.
for page in $pages; do
	version=$("$ACCELFS" --version | sed 's/^accelfs \([^ ]*\).*/\1/')
	grep -q "^\.ds Vn $version\$" "$MAN_DIR/$page" || fail "$page does not carry the version of accelfs --version"
done

text=$(page_text accelfs.8)
for var in $("$ACCELFS" --help | sed -n '/^Environment:/,/^$/p' | grep -oE '^  [A-Z_]+' ); do
	printf '%s\n' "$text" | grep -q "^       $var" || fail "accelfs.8 does not describe $var (ENVIRONMENT)"
done
for section in OPTIONS "EXIT STATUS" LOGGING SIGNALS ENVIRONMENT FILES "SEE ALSO"; do
	printf '%s\n' "$text" | grep -q "^$section" || fail "accelfs.8 has no $section section"
done

text=$(page_text accelfs.5)
for file in metrics node.json info holders mode instances map available last_error status devices cdi.json \
	slot enabled vram; do
	printf '%s\n' "$text" | grep -qw -- "$file" || fail "accelfs.5 does not name $file"
done
for errno in EPERM EACCES ENOSPC EEXIST EINVAL ENAMETOOLONG ENOENT EBUSY EIO EROFS ENODEV EAGAIN EINTR; do
	printf '%s\n' "$text" | grep -qw "$errno" || fail "accelfs.5 does not say when $errno is answered"
done
echo "test_man: $(echo $pages | wc -w) pages render without warnings, built and checked in, and document every option"
