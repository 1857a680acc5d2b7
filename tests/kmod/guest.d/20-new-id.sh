# Dynamic ids through new_id (the pci-stub pattern).
. /tests/lib.sh
n=$(ivshmem_devs | wc -l)
check "insmod bar_swap with no ids" bs_load
t bs_bind query 0
check "new_id \"1af4 1110\"" sh -c 'echo "1af4 1110" > /sys/bus/pci/drivers/bar_swap/new_id'
t bs_bind query "$n"
t bs_bind parked
check "rmmod" bs_unload
