#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compile sim/topologies/default.json into the simulators.

The built-in topology and the example file are one file, so the default the
libraries carry can never drift from the one the docs show.  The JSON is
checked here (a broken default fails the build, not the first Init) and
emitted as a byte array, which needs no escaping.
"""
import json
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    json.loads(text)
    data = text.encode("utf-8")
    with open(dst, "w", encoding="utf-8") as out:
        out.write("/* Generated from %s by embed_topology.py; do not edit. */\n" % src.split("/")[-1])
        out.write('#include "sim/common/sim_topology.h"\n\n')
        out.write("const char sim_builtin_topology[] = {\n")
        for i in range(0, len(data), 16):
            out.write("\t" + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
        out.write("\t0x00\n};\n")


if __name__ == "__main__":
    main()
