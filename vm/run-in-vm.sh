#!/usr/bin/env bash
# Run a command inside a throw-away qemu VM that boots a stock Debian kernel (with RDMA
# modules: rdma_rxe, and an out-of-tree-built siw) on top of the HOST's root filesystem
# (9p, read-only, with a tmpfs overlay so the guest can write anywhere; writes vanish).
# Before the command runs, the guest loads ib_core/ib_uverbs/rdma_ucm/rdma_rxe/siw and
# creates rxe0 (on dummy0, 10.77.0.1) and siw0 (on dummy1, 10.77.1.1).  The command's
# stdout/stderr come back on this script's stdout/stderr (stdin is /dev/null), its exit
# status is this script's exit status.
#
# usage: run-in-vm.sh [options] -- CMD [ARGS...]
#   -k, --kernel KVER    guest kernel (default: $VERBS_VM_KVER, else $CACHE/default-kver,
#                        which setup.sh writes)
#   --accel A            auto|kvm|tcg (default $VERBS_VM_ACCEL or auto: kvm if a probe boot
#                        works, else tcg; the result is cached in $CACHE/accel.<kver>.<host-kernel>)
#   -m, --mem SIZE       guest memory (default 2G)
#   --smp N              guest CPUs (default: host CPUs, max 4)
#   --rw DIR             share host DIR writable at the same path (repeatable); everything
#                        else the guest writes goes to its tmpfs overlay and is lost
#   -e, --env VAR=VAL    set VAR in the command's environment (repeatable); PATH, HOME,
#                        USER, TERM, LANG, LC_*, RUST_*, CARGO_* are passed through anyway
#   --netdev DEV         netdev for rxe/siw.  auto (default): one dummy netdev per device,
#                        rxe0 on dummy0 = 10.77.0.1/24, siw0 on dummy1 = 10.77.1.1/24 (rdma_cm
#                        needs a non-loopback IP; 127.0.0.1 gives rdma_resolve_route ENODEV).
#                        lo: both on loopback (verbs + 127.0.0.1 work, rdma_cm does not).
#                        NAME: both on that netdev (created as a dummy with 10.77.0.1/24)
#   --rdma-devs "LIST"   which soft-RDMA devices to create (default "rxe siw", or "rxe" if
#                        no siw.ko was built; "" = modules loaded but no devices)
#   --no-rdma            do not load RDMA modules at all
#   --timeout SECS       kill the VM after SECS (default $VERBS_VM_TIMEOUT or 1800); exit 124
#   --keep               keep the run dir (console.log, guest.log, dmesg.txt) and print its path
#   -v, --verbose        stream the guest console (kernel + init log) to stderr
#   -q, --quiet          do not print the timing line
#   --debug              on setup failure drop to a shell on the console (use with -v)
# Environment in the guest: the caller's cwd; VM_SCRATCH = a writable dir shared with the
# host (in the run dir $CACHE/runs/vmrun.XXXXXX, or under $VMRUN_TMPDIR; kept only with
# --keep); VM_RXE_IP / VM_SIW_IP = IPv4 address of the netdev under rxe0 / siw0, VM_RXE_IP6 /
# VM_SIW_IP6 its global IPv6 address (fd77:0::1, fd77:1::1) (use these
# for rdma_cm); VM_RXE_GID_INDEX = index of rxe0's IPv4 RoCEv2 GID (ibv_*_pingpong -g,
# perftest -x); VERBS_TEST_RXE=rxe0, VERBS_TEST_SIW=siw0, VERBS_TEST_GID_INDEX (the same
# index) unless given with -e.  Both devices' ports are ACTIVE before the command starts.
# Timing: a last stderr line "run-in-vm: <wall>s wall (...)" unless -q.
# Cache: $VERBS_VM_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/verbs-vm (see common.sh).
# Exit status: the command's, or 124 (timeout), 125 (VM setup failed), 126 (VM crashed).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
HERE=$VM_DIR

KVER=${VERBS_VM_KVER:-} ACCEL=${VERBS_VM_ACCEL:-auto} MEM=2G SMP="" TIMEOUT=${VERBS_VM_TIMEOUT:-1800}
KEEP=0 VERBOSE=0 DEBUG=0 QUIET=0
NETDEV=auto RDMA=1 RDMA_DEVS=default
RW=() ENVS=()
die() { echo "run-in-vm: $*" >&2; exit 125; }
while [ $# -gt 0 ]; do
    case "$1" in
        -k|--kernel) KVER=$2; shift 2 ;;
        --accel) ACCEL=$2; shift 2 ;;
        -m|--mem) MEM=$2; shift 2 ;;
        --smp) SMP=$2; shift 2 ;;
        --rw) RW+=("$(realpath "$2")"); shift 2 ;;
        -e|--env) ENVS+=("$2"); shift 2 ;;
        --netdev) NETDEV=$2; shift 2 ;;
        --rdma-devs) RDMA_DEVS=$2; shift 2 ;;
        --no-rdma) RDMA=0; shift ;;
        --timeout) TIMEOUT=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -v|--verbose) VERBOSE=1; shift ;;
        -q|--quiet) QUIET=1; shift ;;
        --debug) DEBUG=1; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option $1 (command goes after --)" ;;
    esac
done
[ $# -gt 0 ] || die "no command given (usage: run-in-vm.sh [options] -- CMD ARGS...)"
[ -n "$KVER" ] || KVER=$(cat "$CACHE/default-kver" 2>/dev/null) || die "no kernel: run setup.sh"
if [ -z "$SMP" ]; then SMP=$(nproc); if [ "$SMP" -gt 4 ]; then SMP=4; fi; fi
KROOT=$CACHE/kernel/$KVER
KIMG=$KROOT/boot/vmlinuz-$KVER
MODTREE=$KROOT/lib/modules/$KVER
INITRD=$(initrd_path "$KVER")
[ -f "$KIMG" ] && [ -e "$MODTREE/modules.dep" ] || die "kernel $KVER not set up (run setup.sh)"
if [ "$RDMA_DEVS" = default ]; then
    RDMA_DEVS="rxe siw"
    grep -q '/siw\.ko' "$MODTREE/modules.dep" || { RDMA_DEVS=rxe; echo "run-in-vm: no siw.ko for $KVER (setup.sh builds it): rxe only" >&2; }
fi
# (re)build the initramfs when this checkout's init scripts changed (its name has their hash)
if [ ! -f "$INITRD" ]; then
    "$HERE/mkinitramfs.sh" "$KVER" >&2
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (run setup.sh)"

mkdir -p "${VMRUN_TMPDIR:-$CACHE/runs}"
RUN=$(mktemp -d "${VMRUN_TMPDIR:-$CACHE/runs}/vmrun.XXXXXX")
QEMU_PID="" READERS=()
cleanup() {
    set +e
    [ -n "$QEMU_PID" ] && { kill "$QEMU_PID" 2>/dev/null; wait "$QEMU_PID" 2>/dev/null; }
    for r in "${READERS[@]}"; do kill "$r" 2>/dev/null; done
    if [ "$KEEP" = 1 ]; then echo "run-in-vm: run dir kept: $RUN" >&2; else rm -rf "$RUN"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for p in "$RUN" "${RW[@]}" "$HERE/guest-stage2.sh" "$MODTREE"; do
    case "$p" in *[[:space:],]*) die "paths with spaces or commas are not supported: '$p'" ;; esac
done
mkdir -p "$RUN/scratch"

# --- what the guest should do ----------------------------------------------------------
{
    printf 'cd -- %q 2>/dev/null || cd /\n' "$PWD"
    printf 'exec'; printf ' %q' "$@"; printf '\n'
} > "$RUN/cmd.sh"
{
    for v in PATH HOME USER LOGNAME TERM LANG $(compgen -e | grep -E '^(LC_|RUST_|RUSTFLAGS$|CARGO_)' || true); do
        [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
    done
    printf 'export VM_SCRATCH=%q\n' "$RUN/scratch"
    for e in "${ENVS[@]}"; do printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"; done
} > "$RUN/env"
{
    printf 'RDMA=%q\nNETDEV=%q\nRDMA_DEVS=%q\nVERBOSE=%q\n' "$RDMA" "$NETDEV" "$RDMA_DEVS" "$VERBOSE"
} > "$RUN/config"

# --- accelerator -------------------------------------------------------------------------
probe_kvm() {  # boots the kernel with KVM once; prints kvm or tcg
    [ -w /dev/kvm ] || { echo tcg; return; }
    local log=$RUN/kvm-probe.log out=$RUN/kvm-probe.out res=tcg pid i
    : > "$log"
    qemu-system-x86_64 -accel kvm -cpu host -m 512M -smp 1 -nodefaults -no-user-config \
        -display none -no-reboot -serial "file:$log" -kernel "$KIMG" -initrd "$INITRD" \
        -append "console=ttyS0 panic=-1 quiet vmrun.probe=1" > "$out" 2>&1 &
    pid=$!
    for i in $(seq 60); do  # <= 30 s; a KVM that cannot run this kernel usually fails at once
        if grep -q VMRUN-PROBE-OK "$log"; then res=kvm; break; fi
        grep -qE 'KVM internal error|emulation failure|failed to initialize|Could not access KVM' "$out" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    grep -q VMRUN-PROBE-OK "$log" && res=kvm
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    echo "$res"
}
if [ "$ACCEL" = auto ]; then
    cachef=$CACHE/accel.$KVER.$(uname -r)
    if [ -f "$cachef" ]; then ACCEL=$(cat "$cachef"); else
        echo "run-in-vm: probing KVM (one-time, cached in $cachef)..." >&2
        ACCEL=$(probe_kvm); echo "$ACCEL" > "$cachef"
    fi
fi
case "$ACCEL" in
    kvm) ACCEL_ARGS=(-accel kvm -cpu host) ;;
    tcg) ACCEL_ARGS=(-accel tcg,thread=multi -cpu max) ;;
    *) die "bad --accel $ACCEL" ;;
esac

# --- output plumbing: guest virtio-serial ports -> FIFOs -> our stdout/stderr ------------
mkfifo "$RUN/stdout.fifo" "$RUN/stderr.fifo"
cat "$RUN/stdout.fifo" & READERS+=($!)
cat "$RUN/stderr.fifo" >&2 & READERS+=($!)
: > "$RUN/console.log"

LOGLEVEL=4; [ "$VERBOSE" = 1 ] && LOGLEVEL=7
rwlist=$(IFS=,; echo "${RW[*]}")
APPEND="console=ttyS0 panic=-1 loglevel=$LOGLEVEL mitigations=off tsc=reliable"
APPEND+=" vmrun.ctl=$RUN vmrun.stage2=$HERE/guest-stage2.sh vmrun.modtree=$MODTREE vmrun.debug=$DEBUG"
[ -n "$rwlist" ] && APPEND+=" vmrun.rw=$rwlist"

QEMU=(qemu-system-x86_64 "${ACCEL_ARGS[@]}" -m "$MEM" -smp "$SMP"
    -nodefaults -no-user-config -display none -no-reboot
    -kernel "$KIMG" -initrd "$INITRD" -append "$APPEND"
    -serial "file:$RUN/console.log"
    -device virtio-rng-pci
    -fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot
    -fsdev "local,id=fsctl,path=$RUN,security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=fsctl,mount_tag=scratch
    -device virtio-serial-pci,id=vser0
    -chardev "file,id=cout,path=$RUN/stdout.fifo" -device virtserialport,bus=vser0.0,chardev=cout,name=vmrun.stdout
    -chardev "file,id=cerr,path=$RUN/stderr.fifo" -device virtserialport,bus=vser0.0,chardev=cerr,name=vmrun.stderr)
i=0
for d in "${RW[@]}"; do
    QEMU+=(-fsdev "local,id=fsrw$i,path=$d,security_model=none,multidevs=remap"
           -device "virtio-9p-pci,fsdev=fsrw$i,mount_tag=rw$i")
    i=$((i + 1))
done

T0=$(date +%s.%N)
# timeout(1) is the watchdog: SIGTERM to qemu after $TIMEOUT s, exit status 124
timeout "$TIMEOUT" "${QEMU[@]}" > "$RUN/qemu.out" 2>&1 &
QEMU_PID=$!
TAIL_PID=""
if [ "$VERBOSE" = 1 ]; then tail -n +1 -f --pid="$QEMU_PID" "$RUN/console.log" >&2 & TAIL_PID=$!; fi
MON_PID=""
if [ "$ACCEL" = kvm ]; then
    # a KVM that cannot run this guest (e.g. the host's PVM) stops the vCPU and qemu hangs
    ( while sleep 1; do
        grep -qE 'KVM internal error|emulation failure' "$RUN/qemu.out" 2>/dev/null || continue
        echo "run-in-vm: KVM failed (see $RUN/qemu.out); use --accel tcg" >&2
        kill "$QEMU_PID" 2>/dev/null; break
      done ) & MON_PID=$!
fi
set +e
wait "$QEMU_PID"; QRC=$?
set -e
QEMU_PID=""
[ -n "$MON_PID" ] && { kill "$MON_PID" 2>/dev/null || true; wait "$MON_PID" 2>/dev/null || true; }
[ "$QRC" = 124 ] && touch "$RUN/timed-out"
[ -n "$TAIL_PID" ] && { wait "$TAIL_PID" 2>/dev/null || true; }
T1=$(date +%s.%N)
# release the FIFO readers (if qemu never opened a FIFO, its reader is still blocked in open)
for f in stdout stderr; do exec 9<>"$RUN/$f.fifo"; exec 9<&-; done
wait "${READERS[@]}" 2>/dev/null || true
READERS=()

if [ -f "$RUN/timed-out" ]; then
    echo "run-in-vm: timed out after ${TIMEOUT}s; console tail:" >&2; tail -n 30 "$RUN/console.log" >&2
    RC=124
elif [ -f "$RUN/exit-code" ]; then
    RC=$(cat "$RUN/exit-code")
else
    echo "run-in-vm: VM ended without an exit code (qemu rc=$QRC); console tail:" >&2
    tail -n 40 "$RUN/console.log" >&2; cat "$RUN/qemu.out" >&2
    [ -f "$RUN/init-error" ] && cat "$RUN/init-error" >&2
    [ -f "$RUN/guest.log" ] && tail -n 20 "$RUN/guest.log" >&2
    RC=126
fi
if [ "$QUIET" != 1 ]; then
    detail=
    if [ -f "$RUN/times" ]; then  # guest uptime at command start and end (guest-stage2.sh)
        read -r g0 g1 < "$RUN/times" || true
        [ -n "${g1:-}" ] && detail=$(awk -v a="$g0" -v b="$g1" 'BEGIN { printf "boot+RDMA setup %.1fs, command %.1fs, ", a, b - a }')
    fi
    printf 'run-in-vm: %.1fs wall (%saccel %s, kernel %s), exit %s\n' \
        "$(echo "$T1 - $T0" | bc)" "$detail" "$ACCEL" "$KVER" "$RC" >&2
fi
exit "$RC"
