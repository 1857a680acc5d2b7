# Nothing above may have left a trace of a kernel bug.
. /tests/lib.sh
dmesg | grep -i bar_swap | tail -n 40
check "kernel log free of BUG/WARNING/Oops/lockups" sh -c \
	'! dmesg | grep -E "BUG:|WARNING:|Oops|general protection|Call Trace|blocked for more than|soft lockup"'
