#!/usr/bin/env bash
# Build the tiny initramfs for one guest kernel: busybox-static + /init (initramfs-init.sh)
# + the modules needed to mount the host root over 9p (resolved with modprobe --show-depends
# against the extracted module tree, decompressed so that busybox insmod can load them).
# usage: mkinitramfs.sh KVER   -> $CACHE/initramfs-KVER-<hash of the init scripts>.cpio.gz
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
HERE=$VM_DIR
KVER=${1:?usage: mkinitramfs.sh KVER}
KROOT=$CACHE/kernel/$KVER
MODDIR=$KROOT/lib/modules/$KVER
OUTFILE=$(initrd_path "$KVER")
[ -e "$MODDIR/modules.dep" ] || { echo "no module tree (run setup.sh): $MODDIR" >&2; exit 1; }

WORK=$(mktemp -d "$CACHE/initramfs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK"/{bin,dev,proc,sys,modules}
cp /bin/busybox "$WORK/bin/busybox"
cp "$HERE/initramfs-init.sh" "$WORK/init"
chmod 755 "$WORK/init"

# modules needed before the host root is visible; builtin ones are skipped automatically
: > "$WORK/modules.list"
declare -A seen=()
for m in virtio_pci virtio_console virtio_rng 9pnet_virtio 9p overlay; do
    while read -r kind path _; do
        [ "$kind" = insmod ] || continue
        [ -n "${seen[$path]:-}" ] && continue
        seen[$path]=1
        name=$(basename "$path"); name=${name%.xz}; name=${name%.zst}; name=${name%.gz}
        case "$path" in
            *.ko.xz)  xz -dc "$path" > "$WORK/modules/$name" ;;
            *.ko.zst) zstd -qdc "$path" > "$WORK/modules/$name" ;;
            *.ko.gz)  gzip -dc "$path" > "$WORK/modules/$name" ;;
            *)        cp "$path" "$WORK/modules/$name" ;;
        esac
        echo "$name" >> "$WORK/modules.list"
    done < <(modprobe -d "$KROOT" -S "$KVER" --show-depends "$m")
done

(cd "$WORK" && find . -mindepth 1 | LC_ALL=C sort | busybox cpio -o -H newc 2>/dev/null) | gzip -1 > "$OUTFILE.tmp.$$"
mv "$OUTFILE.tmp.$$" "$OUTFILE"
echo "built $OUTFILE ($(stat -c %s "$OUTFILE") bytes), modules: $(tr '\n' ' ' < "$WORK/modules.list")"
