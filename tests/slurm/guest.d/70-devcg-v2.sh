# A Slurm task's confinement on a kernel with cgroup v2 alone (no v1 hierarchy
# is mounted in this guest), picked by cgroup=auto: devcg_task does what the
# SPANK plugin's task_init_privileged does (tests/slurm/test_devcg.py runs the
# same on the host's hybrid layout).  accelfs's tree is stood in for by the
# files devcg reads (each job's `devices`), the device nodes by mknod with the
# simulator's NVIDIA capability major (241), which no driver serves here: an
# allowed open answers ENXIO, a refused one EPERM.
. /tests/lib.sh
cg=/sys/fs/cgroup
mkdir -p $cg && mount -t cgroup2 cgroup2 $cg || { fail "mount cgroup2" "cannot mount"; exit 0; }
grep -q " $cg cgroup2 " /proc/mounts && ! grep -q " cgroup " /proc/mounts && pass "the guest has cgroup v2 alone"

mkdir -p /tmp/nodes /tmp/accel/mig/1g.18gb/slurm-7-0 /tmp/accel/mig/1g.18gb/slurm-8-0
mknod /tmp/nodes/cap3 c 241 3
mknod /tmp/nodes/cap12 c 241 12
echo "/dev/nvidia-caps/nvidia-cap3 c 241:3" >/tmp/accel/mig/1g.18gb/slurm-7-0/devices
echo "/dev/nvidia-caps/nvidia-cap12 c 241:12" >/tmp/accel/mig/1g.18gb/slurm-8-0/devices
printf 'Character devices:\n241 nvidia-caps\n\nBlock devices:\n' >/tmp/proc-devices

# task CGROUP JOB ARGS...: devcg_task moved into CGROUP first, as Slurm forks a task.
task() {
	_tc=$1; _tj=$2; shift 2
	mkdir -p "$_tc"
	sh -c 'echo $$ >"$0/cgroup.procs" && exec devcg_task "$@"' "$_tc" --job="$_tj" --task=0 \
		--mount=/tmp/accel --proc-devices=/tmp/proc-devices "$@" >/tmp/task.out 2>&1
}
expect() {	# expect NAME LINE: the task printed LINE
	if grep -qx "$2" /tmp/task.out; then pass "$1"; else fail "$1" "$(tr '\n' ' ' </tmp/task.out)"; fi
}

task $cg/job_7/step_0/slurm 7 --partitions -- /tmp/nodes/cap12 /tmp/nodes/cap3 /dev/null
expect "auto picks v2; another job's node is refused" "/tmp/nodes/cap12 EPERM"
expect "the job's own node is allowed" "/tmp/nodes/cap3 ENXIO"
expect "other devices are allowed" "/dev/null ok"
expect "the task is in its own cgroup below the step" "cgroup: /job_7/step_0/user/task_0"

task $cg/job_9/step_0/slurm 9 --mount=/nonexistent -- /tmp/nodes/cap3 /dev/null
expect "a CPU-only task runs with accelfs away" "/dev/null ok"
expect "and is kept from every accelerator node" "/tmp/nodes/cap3 EPERM"

# Slurm's cgroup/v2 attaches its program to the job and the step with BPF_F_ALLOW_OVERRIDE.
mkdir -p $cg/job_10/step_0/slurm
task $cg/job_10/step_0/slurm 10 --others=$cg/job_10:1:3:override --others=$cg/job_10/step_0:1:3:override \
	-- /dev/null /dev/zero /tmp/nodes/cap3
expect "Slurm's program still refuses what it refuses" "/dev/zero EPERM"
expect "and allows what it allows" "/dev/null ok"
expect "ours still refuses" "/tmp/nodes/cap3 EPERM"
