#!/usr/bin/env bash
# One-time, idempotent setup of the RDMA test VM (Debian bookworm host).  A second run with
# everything cached does no network access and takes about a second.
#   - installs the host tools (check-then-install; never removes a host package: --no-remove):
#     qemu-system-x86 (bookworm-backports), busybox-static, kmod, iproute2, rdma-core,
#     ibverbs-utils, ibverbs-providers, perftest, rdmacm-utils, libibverbs-dev, librdmacm-dev,
#     python3-pyverbs (rdma-core's test suite), strace, valgrind
#     and what the siw build needs (gcc-12, make, binutils, ...)
#   - downloads a PINNED stock Debian kernel package (below; if the mirror no longer has that
#     exact version, the current candidate of linux-image-6.12-amd64 is used, with a warning)
#     and unpacks it privately under $CACHE/kernel/<kver>: nothing goes into /boot or
#     /lib/modules
#   - Debian does not build siw (# CONFIG_RDMA_SIW is not set), so builds siw.ko out of tree
#     from the same kernel's linux-source + linux-headers packages into the private module tree
#   - builds the initramfs (mkinitramfs.sh)
#   - on first setup (or --check): boots the VM once and lists the RDMA devices
# Cache: $VERBS_VM_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/verbs-vm (shared by all clones).
#
# usage: setup.sh [--kernel PKG] [--no-siw] [--check] [--no-check]
#   --kernel PKG   a kernel meta package (linux-image-6.12-amd64, linux-image-amd64) or a
#                  concrete linux-image-<kver> package instead of the pinned one; becomes the
#                  default kernel of run-in-vm.sh
#   --no-siw       skip the out-of-tree siw build (rxe only)
#   --check        boot the VM once even if nothing changed
#   --no-check     never boot the VM
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
HERE=$VM_DIR

# The pinned guest kernel (bookworm-security's 6.12 line).  Bump both together.
PIN_PKG=linux-image-6.12.117+deb12-amd64
PIN_VERSION=6.12.117-1~deb12u1
FALLBACK_META=linux-image-6.12-amd64

KERNEL_PKG="" BUILD_SIW=1 CHECK=auto
while [ $# -gt 0 ]; do
    case "$1" in
        --kernel) KERNEL_PKG=$2; shift 2 ;;
        --no-siw) BUILD_SIW=0; shift ;;
        --check) CHECK=1; shift ;;
        --no-check) CHECK=0; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
T_START=$(date +%s.%N)
step() { echo "== vm-setup [$(elapsed "$T_START")s] $*"; }
mkdir -p "$CACHE/deb" "$CACHE/kernel" "$CACHE/runs"
# one setup at a time per cache (clones on one machine share it)
exec 9> "$CACHE/setup.lock"
flock 9 2>/dev/null || true
export DEBIAN_FRONTEND=noninteractive
SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo -n)
CHANGED=0

# --- 1. host packages ------------------------------------------------------------------------
# --no-remove everywhere: never let apt remove a host package to make room (bookworm's
# qemu-system-x86 7.2 would remove a preinstalled qemu-utils 10.0 from bookworm-backports,
# which Breaks qemu-system-common << 8.0).
PKGS=(busybox-static kmod iproute2 xz-utils zstd bc coreutils
      rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest libibverbs-dev librdmacm-dev
      python3-pyverbs
      strace valgrind)
# out-of-tree siw build: the kernel's compiler (gcc-12) + what the prebuilt kbuild tools link to
[ "$BUILD_SIW" = 1 ] && PKGS+=(gcc-12 make binutils libelf1 libssl3 zlib1g)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in "${PKGS[@]}"; do installed "$p" || missing+=("$p"); done
UPDATED=0
apt_update() {
    [ "$UPDATED" = 1 ] && return
    step "apt-get update"
    "${SUDO[@]}" apt-get -q update
    UPDATED=1
}
if [ ${#missing[@]} -gt 0 ]; then
    apt_update
    step "apt-get install ${missing[*]}"
    "${SUDO[@]}" apt-get -q install -y --no-install-recommends --no-remove "${missing[@]}"
fi
# qemu: from bookworm-backports (10.0), via a private sources list + lists dir, so the host's
# apt configuration is left alone.  QEMU_FROM=stable uses bookworm's 7.2 instead.
QEMU_FROM=${QEMU_FROM:-backports}
if ! installed qemu-system-x86; then
    if [ "$QEMU_FROM" = backports ]; then
        BPO=$CACHE/apt-bpo
        mkdir -p "$BPO/lists/partial"
        cat > "$BPO/sources.list" <<'EOS'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
deb http://deb.debian.org/debian bookworm-backports main
EOS
        APT_BPO=(-o "Dir::Etc::sourcelist=$BPO/sources.list" -o Dir::Etc::sourceparts=-
                 -o "Dir::State::lists=$BPO/lists" -o APT::Sandbox::User=root)
        step "apt-get update (private list incl. bookworm-backports)"
        "${SUDO[@]}" apt-get -q "${APT_BPO[@]}" update
        step "apt-get install qemu-system-x86/bookworm-backports"
        # pkg/release pins only the named package, so name the ones that must match qemu
        "${SUDO[@]}" apt-get -q "${APT_BPO[@]}" install -y --no-install-recommends --no-remove \
            qemu-system-x86/bookworm-backports qemu-system-common/bookworm-backports \
            qemu-system-data/bookworm-backports seabios/bookworm-backports
    else
        apt_update
        step "apt-get install qemu-system-x86"
        "${SUDO[@]}" apt-get -q install -y --no-install-recommends --no-remove qemu-system-x86
    fi
fi
step "host packages present ($(qemu-system-x86_64 --version | head -1))"

# --- 2. resolve the kernel package -------------------------------------------------------------
candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}'; }
has_version() { apt-cache madison "$1" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' | grep -qxF "$2"; }
resolve_meta() {  # resolve_meta PKG -> sets IMG_PKG, KVERSION (follows meta packages)
    IMG_PKG=$1
    local c; c=$(candidate "$IMG_PKG")
    { [ -n "$c" ] && [ "$c" != "(none)" ]; } || apt_update
    for _ in 1 2 3; do
        dep=$(apt-cache depends "$IMG_PKG" 2>/dev/null | awk '/^ *Depends: linux-image-/ {print $2; exit}')
        [ -n "$dep" ] || break
        IMG_PKG=$dep
    done
    KVERSION=$(candidate "$IMG_PKG")
    [ -n "$KVERSION" ] && [ "$KVERSION" != "(none)" ] || { echo "cannot resolve $1" >&2; exit 1; }
}
if [ -n "$KERNEL_PKG" ]; then
    resolve_meta "$KERNEL_PKG"
else
    IMG_PKG=$PIN_PKG KVERSION=$PIN_VERSION
    pinned_kver=${PIN_PKG#linux-image-}
    FALLBACK_NOTE=$CACHE/pin-fallback.$PIN_PKG=$PIN_VERSION
    if [ -f "$FALLBACK_NOTE" ]; then
        # an earlier run found the pin gone and fell back: reuse that kernel (no apt look-up)
        read -r IMG_PKG KVERSION < "$FALLBACK_NOTE"
        echo "WARNING: pinned kernel $PIN_PKG=$PIN_VERSION is not on the mirror; using" \
             "$IMG_PKG=$KVERSION (delete $FALLBACK_NOTE to re-check)" >&2
    elif [ ! -f "$CACHE/kernel/$pinned_kver/.complete" ] && ! ls "$CACHE/deb/${PIN_PKG}_"*.deb >/dev/null 2>&1; then
        # not cached yet: is the pinned version still on the mirror?
        has_version "$PIN_PKG" "$PIN_VERSION" || { apt_update; true; }
        if ! has_version "$PIN_PKG" "$PIN_VERSION"; then
            resolve_meta "$FALLBACK_META"
            echo "WARNING: pinned kernel $PIN_PKG=$PIN_VERSION is gone from the mirror;" \
                 "using $FALLBACK_META's candidate $IMG_PKG=$KVERSION (update PIN_* in vm/setup.sh)" >&2
            echo "$IMG_PKG $KVERSION" > "$FALLBACK_NOTE"
        fi
    fi
fi
KVER=${IMG_PKG#linux-image-}
step "kernel: $IMG_PKG $KVERSION (kver $KVER)"
KROOT=$CACHE/kernel/$KVER
MODDIR=$KROOT/lib/modules/$KVER

# --- 3. download + unpack the kernel ------------------------------------------------------------
fetch_deb() {  # fetch_deb PKG VERSION -> prints the .deb path (cached in $CACHE/deb)
    local f v
    v=$(echo "$2" | sed 's/:/%3a/')
    f=$(ls "$CACHE/deb/${1}_"*.deb 2>/dev/null | grep -F "_${v}_" | head -1 || true)
    if [ -z "$f" ]; then
        has_version "$1" "$2" || apt_update
        (cd "$CACHE/deb" && apt-get -q -o APT::Sandbox::User="$(id -un)" download "$1=$2" >&2)
        f=$(ls "$CACHE/deb/${1}_"*.deb | grep -F "_${v}_" | head -1)
    fi
    echo "$f"
}
if [ ! -f "$KROOT/.complete" ]; then
    step "download + unpack $IMG_PKG"
    deb=$(fetch_deb "$IMG_PKG" "$KVERSION")
    rm -rf "$KROOT.tmp"; mkdir -p "$KROOT.tmp"
    dpkg -x "$deb" "$KROOT.tmp"
    echo "$KVERSION" > "$KROOT.tmp/.version"
    touch "$KROOT.tmp/.complete"
    rm -rf "$KROOT"; mv "$KROOT.tmp" "$KROOT"
    CHANGED=1
else
    step "kernel $KVER already unpacked"
fi
KVERSION=$(cat "$KROOT/.version")
KCONFIG=$KROOT/boot/config-$KVER
for opt in CONFIG_INFINIBAND CONFIG_INFINIBAND_USER_ACCESS CONFIG_RDMA_RXE CONFIG_NET_9P_VIRTIO CONFIG_9P_FS CONFIG_OVERLAY_FS; do
    grep -qE "^$opt=(y|m)" "$KCONFIG" || { echo "kernel $KVER lacks $opt" >&2; exit 1; }
done

# --- 4. siw (Debian kernels: "# CONFIG_RDMA_SIW is not set") ----------------------------------
have_siw() { find "$MODDIR" -name 'siw.ko*' | grep -q .; }
if [ "$BUILD_SIW" = 1 ] && ! have_siw; then
    step "building siw.ko out of tree for $KVER"
    HDR_PKG=linux-headers-$KVER
    deps=$(apt-cache depends "$HDR_PKG=$KVERSION" 2>/dev/null) || { apt_update; deps=$(apt-cache depends "$HDR_PKG=$KVERSION"); }
    COMMON_PKG=$(echo "$deps" | awk '/Depends: linux-headers-.*-common/ {print $2; exit}')
    KBUILD_PKG=$(echo "$deps" | awk '/Depends: linux-kbuild-/ {print $2; exit}')
    SRC_PKG=linux-source-$(echo "$KVER" | cut -d. -f1,2)
    SRC_VERSION=$KVERSION
    has_version "$SRC_PKG" "$SRC_VERSION" || {
        SRC_VERSION=$(candidate "$SRC_PKG")
        echo "WARNING: $SRC_PKG $KVERSION not available, building siw from $SRC_VERSION" >&2; }
    KB=$CACHE/kbuild-$KVER
    if [ ! -f "$KB/.done" ]; then
        rm -rf "$KB"; mkdir -p "$KB"
        for p in "$HDR_PKG" "$COMMON_PKG" "$KBUILD_PKG"; do
            dpkg -x "$(fetch_deb "$p" "$KVERSION")" "$KB"
        done
        # the headers Makefile includes the -common tree by absolute path: point it at our copy
        sed -i "s|^include /usr/src/|include $KB/usr/src/|" "$KB/usr/src/linux-headers-$KVER/Makefile"
        touch "$KB/.done"
    fi
    SIWSRC=$CACHE/siw-src-$KVER
    if [ ! -f "$SIWSRC/siw_main.c" ]; then
        srcdeb=$(fetch_deb "$SRC_PKG" "$SRC_VERSION")
        rm -rf "$SIWSRC.tmp"; mkdir -p "$SIWSRC.tmp"
        # only drivers/infiniband/sw/siw out of the ~150 MB source tarball
        dpkg-deb --fsys-tarfile "$srcdeb" | tar -xO "./usr/src/$SRC_PKG.tar.xz" | xz -T0 -dc \
            | tar -x -C "$SIWSRC.tmp" --strip-components=5 "$SRC_PKG/drivers/infiniband/sw/siw"
        rm -rf "$SIWSRC"; mv "$SIWSRC.tmp" "$SIWSRC"
    fi
    # CONFIG_DEBUG_INFO_BTF_MODULES= : skip BTF generation (would need pahole)
    make -s -C "$KB/usr/src/linux-headers-$KVER" M="$SIWSRC" CONFIG_RDMA_SIW=m \
        CONFIG_DEBUG_INFO_BTF_MODULES= -j"$(nproc)" modules
    mkdir -p "$MODDIR/updates"
    strip --strip-debug -o "$MODDIR/updates/siw.ko.tmp" "$SIWSRC/siw.ko"
    mv "$MODDIR/updates/siw.ko.tmp" "$MODDIR/updates/siw.ko"
    modinfo "$MODDIR/updates/siw.ko" | grep -E '^(vermagic|depends):'
    CHANGED=1
elif [ "$BUILD_SIW" = 1 ]; then
    step "siw.ko present"
fi

# module index for the private tree (modprobe in the guest uses it)
if [ ! -f "$MODDIR/modules.dep" ] || [ -n "$(find "$MODDIR" -name '*.ko*' -newer "$MODDIR/modules.dep" | head -1)" ]; then
    step "depmod"
    depmod -b "$KROOT" "$KVER"
    CHANGED=1
fi

# --- 5. initramfs, default kernel ------------------------------------------------------------------
if [ ! -f "$(initrd_path "$KVER")" ]; then
    step "initramfs"
    "$HERE/mkinitramfs.sh" "$KVER"
    CHANGED=1
fi
if [ "$(cat "$CACHE/default-kver" 2>/dev/null)" != "$KVER" ]; then
    echo "$KVER" > "$CACHE/default-kver.tmp.$$"; mv "$CACHE/default-kver.tmp.$$" "$CACHE/default-kver"
    CHANGED=1
fi

# --- 6. smoke test (first setup, or --check) ----------------------------------------------------------
if [ "$CHECK" = 1 ] || { [ "$CHECK" = auto ] && [ "$CHANGED" = 1 ]; }; then
    step "smoke test: boot $KVER and list RDMA devices"
    devs="rxe"; have_siw && devs="rxe siw"
    "$HERE/run-in-vm.sh" -k "$KVER" --rdma-devs "$devs" -- sh -c 'uname -r; rdma link show; ibv_devices'
fi
step "done: kernel $KVER, cache $CACHE, accel $(cat "$CACHE"/accel."$KVER".* 2>/dev/null || echo 'probed on first run')"
echo "vm-setup: ${KVER} ready in $(elapsed "$T_START")s"
