# Sourced by the host-side vm/*.sh scripts: where the cache lives and how files in it are named.
# The cache is outside the repository so that every clone on a machine shares one download,
# kernel unpack and siw build:  $VERBS_VM_CACHE, else $XDG_CACHE_HOME/verbs-vm, else
# ~/.cache/verbs-vm.
VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${VERBS_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/verbs-vm}
case "$CACHE" in /*) ;; *) CACHE=$PWD/$CACHE ;; esac

# The initramfs depends on the guest kernel and on this checkout's initramfs-init.sh and
# mkinitramfs.sh; the content hash in its name lets clones with different scripts coexist.
initrd_path() {  # initrd_path KVER
    local h
    h=$(cat "$VM_DIR/initramfs-init.sh" "$VM_DIR/mkinitramfs.sh" | sha256sum | cut -c1-12)
    echo "$CACHE/initramfs-$1-$h.cpio.gz"
}

# elapsed seconds since a `date +%s.%N` stamp, one decimal
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
