#!/bin/sh
# -Dsimulators=false, a production node's install: the simulated driver
# libraries (a libhgml.so and a libnvidia-ml.so.1 that would stand in for the
# real ones), the simulated BAR slot and the topologies are left out, and
# everything else is there.  The build is configured, not built: meson's list
# of what `meson install` would install is the answer (`meson introspect
# --installed`), and the default build's list (this build's) has them all.
set -eu
fail() { echo "test_install_production: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
installed() { meson introspect --installed "$1" | python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin).values()))'; }
sims='/libhgml\.so|/libnvidia-ml\.so|accelsim-barswap|/topologies/'

installed "$BUILD_ROOT" >"$tmp/default"
grep -Eq '/libnvidia-ml\.so\.1$' "$tmp/default" || fail "the default install has no simulated libnvidia-ml.so.1 (--sim needs it)"
grep -Eq '/libhgml\.so$' "$tmp/default" || fail "the default install has no simulated libhgml.so"

meson setup "$tmp/build" "$SOURCE_ROOT" -Dsimulators=false -Dtests=false -Dkmod=disabled >"$tmp/setup.log" 2>&1 ||
	fail "meson setup -Dsimulators=false failed: $(cat "$tmp/setup.log")"
installed "$tmp/build" >"$tmp/production"
if grep -E "$sims" "$tmp/production"; then
	fail "-Dsimulators=false still installs the simulators above"
fi
# Everything else the default installs is still there.
grep -Ev "$sims" "$tmp/default" | grep -v '/bar_swap\.ko$' | sort >"$tmp/want"
sort "$tmp/production" >"$tmp/got"
missing=$(comm -23 "$tmp/want" "$tmp/got")
[ -z "$missing" ] || fail "-Dsimulators=false leaves out more than the simulators: $missing"
echo "test_install_production: -Dsimulators=false installs $(wc -l <"$tmp/got") files, no simulator among them"
