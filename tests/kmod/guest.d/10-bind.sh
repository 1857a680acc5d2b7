# Binding by ids=, parking, and the whole battery on ivshmem-plain dies.
. /tests/lib.sh
devs=$(ivshmem_devs)
n=$(echo $devs | wc -w)
check "guest sees ivshmem-plain dies ($n)" test "$n" -ge 3
check "insmod bar_swap ids=$IVSHMEM_ID" bs_load ids=$IVSHMEM_ID
check "/dev/bar_swap is a character device" test -c /dev/bar_swap
check "all $n dies bound to bar_swap" test "$(ls -d /sys/bus/pci/drivers/bar_swap/0000:* | wc -l)" -eq "$n"
t bs_bind query "$n"
t bs_bind parked
t bs_test all "$n"
t bs_bind unbind
check "rmmod once the holders are gone" bs_unload
check "no device bound after rmmod" sh -c "! ls /sys/bus/pci/devices/*/driver -l 2>/dev/null | grep -q bar_swap"
