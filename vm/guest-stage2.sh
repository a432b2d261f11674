#!/bin/bash
# Stage 2 of the test VM: runs inside the guest, as root, chrooted into the host's root fs
# (overlay over 9p), with the host's bash/kmod/iproute2/rdma-core.  Started by the initramfs
# /init (initramfs-init.sh); argument 1 is the control dir (the rw "scratch" share, same path
# as on the host), which holds:
#   cmd.sh      the command to run (written by run-in-vm.sh)
#   env         "export K=V" lines for the command's environment
#   config      shell variables: RDMA=0/1, NETDEV=auto|lo|NAME, RDMA_DEVS="rxe siw", VERBOSE=0/1
# and receives:
#   guest.log   this script's log (module load order, rdma link output, timings)
#   exit-code   the command's exit status
# The command's stdout/stderr go to the virtio-serial ports named vmrun.stdout / vmrun.stderr
# (host side: FIFOs read by run-in-vm.sh), so they stay separate from the kernel console.
CTL=$1
LOG=$CTL/guest.log
: > "$LOG"
RDMA=1 NETDEV=auto RDMA_DEVS="rxe siw" VERBOSE=0 MODULES_EXTRA=""
[ -f "$CTL/config" ] && . "$CTL/config"

uptime_s() { cut -d' ' -f1 /proc/uptime; }
log() {
    echo "[stage2 $(uptime_s)] $*" >> "$LOG"
    [ "$VERBOSE" = 1 ] && echo "[stage2 $(uptime_s)] $*" > /dev/console
}
run_logged() {  # run a setup command, log it and its output
    log "+ $*"
    local out rc
    out=$("$@" 2>&1); rc=$?
    [ -n "$out" ] && log "$out"
    [ $rc -ne 0 ] && log "  -> exit $rc"
    return $rc
}
fail() {
    log "FATAL: $*"
    echo "vm setup failed: $*" > /dev/console
    [ -n "$ERR" ] && echo "vm setup failed: $* (guest.log: run again with --keep)" > "$ERR" 2>/dev/null
    echo 125 > "$CTL/exit-code"
    exit 125
}

log "kernel $(uname -r), stage 2 start"

# --- output ports --------------------------------------------------------------------
OUT=/dev/null ERR=/dev/null
for p in /sys/class/virtio-ports/*; do
    [ -e "$p/name" ] || continue
    case "$(cat "$p/name")" in
        vmrun.stdout) OUT=/dev/${p##*/} ;;
        vmrun.stderr) ERR=/dev/${p##*/} ;;
    esac
done
[ "$OUT" = /dev/null ] && OUT=/dev/console && log "no vmrun.stdout port, using console"
[ "$ERR" = /dev/null ] && ERR=/dev/console && log "no vmrun.stderr port, using console"

# --- modules -------------------------------------------------------------------------
MODPROBE=(modprobe)
if [ ! -e "/lib/modules/$(uname -r)/modules.dep" ] && [ -n "$VMRUN_MODTREE" ]; then
    # read-only root: point kmod at the module tree directly (…/lib/modules/<kver> -> base dir)
    MODPROBE=(modprobe -d "${VMRUN_MODTREE%/lib/modules/*}")
fi

ip link set lo up

if [ "$RDMA" = 1 ]; then
    # rdma_ucm: rdma_cm for user space (rping, perftest -R, ...); crypto-crc32: rxe computes
    # its ICRC with crypto_alloc_shash("crc32") -- preloading it saves a request_module round trip
    mods="ib_core ib_uverbs rdma_ucm"
    for d in $RDMA_DEVS; do
        case $d in
            rxe) mods="$mods crypto-crc32 rdma_rxe" ;;
            siw) mods="$mods siw" ;;
            *) mods="$mods rdma_$d" ;;
        esac
    done
    # one modprobe for all (every process start costs ~0.1-0.3 s under TCG); -v logs the insmods
    run_logged "${MODPROBE[@]}" -a -v $mods $MODULES_EXTRA || fail "modprobe -a $mods $MODULES_EXTRA"

    # netdevs.  auto: one dummy netdev per device.  rdma_cm needs a non-loopback address
    # (127.0.0.1 -> rdma_resolve_route: ENODEV), and with rxe and siw on the same netdev
    # rdma_cm could bind the wrong device.  rxe loops packets to its own GID back internally,
    # so a dummy (which drops everything it transmits) is enough; siw uses kernel TCP sockets,
    # which go through lo for local addresses.
    ipcmds= rdmacmds= i=0 NDS=()
    for d in $RDMA_DEVS; do
        case "$NETDEV" in
            auto) nd=dummy$i; cidr=10.77.$i.1/24 cidr6=fd77:$i::1/64 ;;
            lo) nd=lo; cidr= cidr6= ;;
            *) nd=$NETDEV; cidr=10.77.0.1/24 cidr6=fd77:0::1/64 ;;
        esac
        # A global IPv6 address too (nodad: usable at once), for rdma_cm over IPv6.
        if [ -n "$cidr" ] && ! [ -e "/sys/class/net/$nd" ] && [[ " ${NDS[*]} " != *" $nd "* ]]; then
            ipcmds+="link add $nd type dummy"$'\n'"addr add $cidr dev $nd"$'\n'"addr add $cidr6 dev $nd nodad"$'\n'"link set $nd up"$'\n'
        fi
        NDS+=("$nd")
        rdmacmds+="link add ${d}0 type $d netdev $nd"$'\n'
        i=$((i + 1))
    done
    # Tests take netdevs down and up (port events, link faults): keep the IPv6
    # addresses across that, as IPv4 ones are kept.
    for c in all default; do echo 1 >"/proc/sys/net/ipv6/conf/$c/keep_addr_on_down" 2>/dev/null || true; done
    if [ -n "$ipcmds" ]; then
        log "ip -batch: $(echo "$ipcmds" | tr '\n' ';')"
        echo -n "$ipcmds" | run_logged ip -batch - || fail "ip -batch (dummy netdevs)"
    fi
    if [ -n "$rdmacmds" ]; then
        log "rdma -b: $(echo "$rdmacmds" | tr '\n' ';')"
        echo -n "$rdmacmds" | run_logged rdma -b - || fail "rdma link add"
    fi
    i=0
    for d in $RDMA_DEVS; do
        nd=${NDS[$i]}; i=$((i + 1))
        ip4=$(ip -4 -o addr show dev "$nd" | awk '{print $4}' | cut -d/ -f1 | head -1)
        ip6=$(ip -6 -o addr show dev "$nd" scope global | awk '{print $4}' | cut -d/ -f1 | head -1)
        case $d in
            rxe) echo "export VM_RXE_IP=$ip4 VM_RXE_IP6=$ip6 VM_RXE_NETDEV=$nd" >> /run/vm-rdma.env ;;
            siw) echo "export VM_SIW_IP=$ip4 VM_SIW_IP6=$ip6 VM_SIW_NETDEV=$nd" >> /run/vm-rdma.env ;;
        esac
    done
    # wait for the uverbs char devices (devtmpfs creates them asynchronously)
    n=$(echo $RDMA_DEVS | wc -w)
    for _ in $(seq 100); do
        [ "$n" -gt 0 ] || break
        set -- /dev/infiniband/uverbs*
        [ -e "$1" ] && [ $# -ge "$n" ] && break
        sleep 0.05
    done
    # RoCEv2 IPv4 GID index of rxe0 (ibv_rc_pingpong -g N, perftest -x N); the IP-based GIDs
    # are added asynchronously, so poll a little.  (bash builtins only: forks are slow on TCG)
    if [ -d /sys/class/infiniband/rxe0 ]; then
        gidx=
        for _ in $(seq 40); do
            for i in $(seq 0 15); do
                read -r v < /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null || continue
                case "$v" in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
                read -r t < /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null
                [ "$t" = "RoCE v2" ] && { gidx=$i; break; }
            done
            [ -n "$gidx" ] && break
            sleep 0.05
        done
        if [ -n "$gidx" ]; then
            echo "export VM_RXE_GID_INDEX=$gidx VERBS_TEST_GID_INDEX=$gidx" >> /run/vm-rdma.env
        else log "warning: no IPv4 RoCEv2 GID on rxe0"; fi
    fi
    # the device names the project's device tests use (tests/device/common.rs)
    for d in $RDMA_DEVS; do
        case $d in
            rxe) echo "export VM_RXE_DEV=rxe0 VERBS_TEST_RXE=rxe0" >> /run/vm-rdma.env ;;
            siw) echo "export VM_SIW_DEV=siw0 VERBS_TEST_SIW=siw0" >> /run/vm-rdma.env ;;
        esac
    done
    # every port ACTIVE before the command starts (state "4: ACTIVE"; usually at once)
    for d in $RDMA_DEVS; do
        st=
        for _ in $(seq 100); do
            read -r st < "/sys/class/infiniband/${d}0/ports/1/state" 2>/dev/null
            [ "$st" = "4: ACTIVE" ] && break
            sleep 0.05
        done
        [ "$st" = "4: ACTIVE" ] || fail "${d}0 port 1 not ACTIVE (state: '$st')"
    done
    log "devices: $(echo /dev/infiniband/*) env: $(tr '\n' ' ' < /run/vm-rdma.env 2>/dev/null)"
fi
# 2 MiB huge pages for verbs::HugePageBuf (examples/huge_pages.rs needs 8): 32 MiB of the
# guest's memory, reserved before the tests fragment it.
run_logged sh -c 'echo 16 > /proc/sys/vm/nr_hugepages' || log "no huge pages reserved"
log "setup done"

# --- the command ---------------------------------------------------------------------
ulimit -l unlimited 2>/dev/null
ulimit -c 0
T_CMD0=$(uptime_s)
(
    [ -f /run/vm-rdma.env ] && . /run/vm-rdma.env
    [ -f "$CTL/env" ] && . "$CTL/env"
    exec /bin/bash "$CTL/cmd.sh"
) < /dev/null > "$OUT" 2> "$ERR"
rc=$?
echo "$T_CMD0 $(uptime_s)" > "$CTL/times"
log "command exited with $rc"
echo $rc > "$CTL/exit-code"
dmesg > "$CTL/dmesg.txt" 2>/dev/null
exit 0
