#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The running-process query on a real NVML, asked only (no MIG change, no instance, no reset): as core
asks it (a count of 0 and no buffer), then with room for 4, on every card and MIG device.  Python ctypes,
so that it runs on a machine where nothing of ours is installed; hw-running-processes asks the same
through accelfs's own loader."""
import ctypes as C
L=C.CDLL("libnvidia-ml.so.1")
print("init", L.nvmlInit_v2())
f=L.nvmlDeviceGetComputeRunningProcesses_v3
print("symbol nvmlDeviceGetComputeRunningProcesses_v3 resolved")
n=C.c_uint(); L.nvmlDeviceGetCount_v2(C.byref(n)); print("devices", n.value)
class P(C.Structure): _fields_=[("pid",C.c_uint),("used",C.c_ulonglong),("gi",C.c_uint),("ci",C.c_uint)]
for i in range(n.value):
    h=C.c_void_p(); L.nvmlDeviceGetHandleByIndex_v2(i,C.byref(h))
    cur=C.c_uint(); pen=C.c_uint(); L.nvmlDeviceGetMigMode(h,C.byref(cur),C.byref(pen)); print(f"gpu{i}: mig mode current={cur.value} pending={pen.value}")
    c=C.c_uint(0); r=f(h,C.byref(c),None); print(f"gpu{i}: card: count=0 infos=NULL -> ret={r} count={c.value}")
    c=C.c_uint(4); a=(P*4)(); r=f(h,C.byref(c),a); print(f"gpu{i}: card: count=4 infos=[4] -> ret={r} count={c.value}")
    m=C.c_uint(); r=L.nvmlDeviceGetMaxMigDeviceCount(h,C.byref(m)); print(f"gpu{i}: max MIG devices ret={r} count={m.value}")
    for k in range(m.value):
        g=C.c_void_p(); r=L.nvmlDeviceGetMigDeviceHandleByIndex(h,k,C.byref(g))
        if r: print(f"gpu{i}: mig {k}: handle ret={r}"); continue
        c=C.c_uint(0); r=f(g,C.byref(c),None); print(f"gpu{i}: mig {k}: ret={r} count={c.value}")
print("shutdown", L.nvmlShutdown())
