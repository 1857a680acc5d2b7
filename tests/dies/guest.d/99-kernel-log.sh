# Nothing above may have left a trace of a kernel bug (as tests/kmod/guest.d/90-kernel-log.sh).
. /tests/lib.sh
check "kernel log free of BUG/WARNING/Oops/lockups after the dies suite" sh -c \
	'! dmesg | grep -E "BUG:|WARNING:|Oops|general protection|Call Trace|blocked for more than|soft lockup"'
