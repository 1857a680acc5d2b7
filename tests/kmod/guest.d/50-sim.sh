# sim_dies=: RAM-backed dies, no hardware; the same battery.
. /tests/lib.sh
check "insmod bar_swap sim_dies=4 sim_size=16M" bs_load sim_dies=4 sim_size=16M
t bs_bind query 4
t bs_test all 4 16777216
check "rmmod" bs_unload
check "insmod bar_swap sim_dies=3 disable=sim:1" bs_load sim_dies=3 sim_size=1M disable=sim:1
t bs_bind enabled 1 0
t bs_bind enabled 2 1
check "rmmod" bs_unload
check_not "sim_size that is not whole pages is refused" bs_load sim_dies=1 sim_size=1000
