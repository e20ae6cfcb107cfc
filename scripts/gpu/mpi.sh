#!/usr/bin/env bash
# Open MPI for a GPU machine that cannot fetch packages (sourced by the
# `devices` suite, not a suite itself).
#
# The build machine downloads Debian's Open MPI runtime and the libraries
# it needs beyond a base system (`mpi_download DIR`, apt-get download: no
# root, nothing installed); the run unpacks them under DIR/root, never
# into / (`mpi_use DIR`), and points Open MPI, PMIx and hwloc there:
# OPAL_PREFIX (Open MPI's relocation variable: help texts, components,
# orted), PMIx's PMIX_PREFIX and directories, HWLOC_PLUGINS_PATH, and
# PATH and LD_LIBRARY_PATH first. The binaries need glibc 2.36 (Debian 12) or
# newer, as the suites' other binaries built here do. Tested on the build
# machine with the system's Open MPI hidden (a mount namespace): every
# library and component then loads from DIR/root.

# Debian 12's Open MPI 4.1 runtime (libmpi.so.40, the ABI rsmpi links
# against) and what it loads beyond a base system.
MPI_DEBS="openmpi-bin libopenmpi3 openmpi-common libpmix2 libhwloc15 libhwloc-plugins libevent-core-2.1-7
    libevent-pthreads-2.1-7 libfabric1 libucx0 libpsm2-2 libpsm-infinipath1 libibverbs1 ibverbs-providers librdmacm1
    libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 libpciaccess0 libxnvctrl0 ocl-icd-libopencl1 libx11-6 libxext6
    libxcb1 libxau6 libxdmcp6 libx11-data libxml2 libicu72 libbsd0 libmd0"

mpi_download() { # dir
    mkdir -p "$1"
    # shellcheck disable=SC2086
    (cd "$1" && apt-get download -qq $MPI_DEBS 2>&1 | grep -v "^W: Download is performed unsandboxed" || true) || return 1
    ls "$1"/*.deb >/dev/null
}

# Unpacks DIR/*.deb under DIR/root (dpkg-deb, or ar and tar where there is
# no dpkg) and exports the environment that runs its mpirun: MPIRUN names
# it. Returns non-zero if DIR has no packages.
mpi_use() { # dir
    local d=$1 r=$1/root f lib
    ls "$d"/*.deb >/dev/null 2>&1 || return 1
    if [ ! -x "$r/usr/bin/orterun" ]; then
        mkdir -p "$r"
        for f in "$d"/*.deb; do
            if command -v dpkg-deb >/dev/null; then
                dpkg-deb -x "$f" "$r"
            else
                (cd "$r" && ar p "$f" "$(ar t "$f" | grep '^data\.tar')" | tar -x --auto-compress -f - 2>/dev/null ||
                    ar p "$f" "$(ar t "$f" | grep '^data\.tar')" | tar -xJ)
            fi
        done
    fi
    lib=$r/usr/lib/x86_64-linux-gnu
    # Open MPI's paths are relative to its prefix but for /etc/openmpi;
    # PMIx's are absolute (Debian's build), so each one is given.
    export OPAL_PREFIX=$r/usr OPAL_SYSCONFDIR=$r/etc/openmpi
    export PMIX_PREFIX=$lib/pmix2 PMIX_LIBDIR=$lib/pmix2/lib PMIX_PKGLIBDIR=$lib/pmix2/lib/pmix \
        PMIX_DATADIR=$lib/pmix2/share PMIX_PKGDATADIR=$lib/pmix2/share/pmix
    export HWLOC_PLUGINS_PATH=$lib/hwloc
    export PATH=$r/usr/bin:$PATH
    export LD_LIBRARY_PATH=$lib:$r/lib/x86_64-linux-gnu:$lib/openmpi/lib:$lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # One node: shared memory between the ranks, no network transport to
    # probe (UCX, libfabric).
    export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
    export MPIRUN=$r/usr/bin/orterun OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}
