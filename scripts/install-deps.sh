#!/bin/sh
# Installs the Debian packages Duet needs to build, test and benchmark, when they are
# missing. Runs apt-get only as root; otherwise it says what to install and carries on
# (the build itself needs only a C compiler and CMake).
set -eu

need=""
have() { command -v "$1" >/dev/null 2>&1; }
have cc     || need="$need gcc"
have cmake  || need="$need cmake"
have make   || need="$need make"
have oshcc  || need="$need openmpi-bin libopenmpi-dev"   # the OpenSHMEM/MPI anchors for bench/
have python3 || need="$need python3"
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || need="$need python3-numpy" # python/duet and its tests
have gnuplot || need="$need gnuplot-nox"                 # duet-perf --plot (make run)
[ -e /usr/include/ucp/api/ucp.h ] || need="$need libucx-dev"  # the net transport (UCX)
have ucx_perftest || need="$need ucx-utils"              # ucx_perftest: tests/net, bench/ucx_floor.sh
have ip      || need="$need iproute2"                    # network namespaces as hosts (tests/net)
have ping    || need="$need iputils-ping"                # tests/net/test_netns.sh
have pkg-config || need="$need pkgconf"                  # tools.install: a consumer built with pkg-config
have readelf || need="$need binutils"                    # tools.install: the sonames

[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ] && have apt-get; then
    echo "install-deps: installing:$need"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $need >/dev/null
else
    echo "install-deps: missing:$need (run as root, or install them with your package manager)" >&2
fi
