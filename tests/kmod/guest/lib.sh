# Helpers for guest.d scripts; each script sources this file first.
#   pass NAME / fail NAME WHY      report one check
#   check NAME CMD...              PASS if CMD succeeds, else FAIL with its output
#   check_not NAME CMD...          PASS if CMD fails
#   t PROG ARGS...                 run a test program (crashes count as FAIL)
#   bs_load [PARAM=VALUE...]       insmod bar_swap.ko
#   bs_unload                      rmmod bar_swap
#   image_module NAME [PARAMS]     insmod a module of the booted kernel's image
#                                  (its dependencies first); see /lib/modules/image.list
#   ivshmem_devs                   bus ids of the ivshmem-plain dies (1af4:1110)
#   bar_of BUS N                   "start size" of BAR N of a PCI device, in decimal
KMOD=/lib/modules/bar_swap.ko
IVSHMEM_ID="1af4:1110"

# (sh has no locals: helper variables start with _ so scripts keep theirs)
pass() { echo "PASS: $*"; }
fail() { _fn=$1; shift; echo "FAIL: $_fn ($*)"; }

check() {
	_cn=$1; shift
	if "$@" >/tmp/check.out 2>&1; then pass "$_cn"
	else fail "$_cn" "rc=$?: $(tail -n 3 /tmp/check.out | tr '\n' ' ')"; fi
}

check_not() {
	_cn=$1; shift
	if "$@" >/tmp/check.out 2>&1; then fail "$_cn" "unexpectedly succeeded"
	else pass "$_cn"; fi
}

# Run a test program; its own PASS/FAIL lines count.  Exit 1 means "some
# check failed" (already reported), 2 a reported setup error; anything else
# (a crash) is reported here.
t() {
	"$@"; _rc=$?
	[ $_rc -le 2 ] || fail "$*" "exited $_rc"
	return 0
}

bs_load() { insmod "$KMOD" "$@"; }
bs_unload() { rmmod bar_swap; }

image_module() {
	grep -q "^$1 " /proc/modules && return 0
	_line=$(grep "^$1 " /lib/modules/image.list) || { echo "no module $1 in the image list"; return 1; }
	shift
	set -- $_line "$@"        # name path deps, then the parameters
	_path=$2 _deps=$3; shift 3
	for _d in $(echo "$_deps" | tr ',' ' '); do
		[ "$_d" = - ] || ( image_module "$_d" ) || return 1
	done
	insmod "/lib/modules/$_path" "$@"
}

ivshmem_devs() {
	for _dev in /sys/bus/pci/devices/*; do
		[ "$(cat $_dev/vendor):$(cat $_dev/device)" = "0x1af4:0x1110" ] && echo "${_dev##*/}"
	done
	return 0
}

bar_of() {
	set -- $(sed -n "$(($2 + 1))p" /sys/bus/pci/devices/$1/resource)
	echo "$(printf %d $1) $(( $(printf %d $2) - $(printf %d $1) + 1 ))"
}
