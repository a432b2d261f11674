//! The simulated NIC's sysfs tree, read by rdma-core through `SYSFS_PATH`
//! (its sysfs discovery, used when netlink is refused) and by our
//! `verbs::discovery` through `DiscoveryConfig::sysfs_root`.
//!
//! Layout as the kernel shows an mlx5 RoCE device (flattened: real sysfs
//! links `class/infiniband/mlx5_0` into the PCI device's directory; libibverbs
//! only opens paths under the class directories). The uverbs `dev` is
//! `1:3`, the number of `/dev/null`, which the shim opens in place of
//! `/dev/infiniband/uverbsN` so that libibverbs' `fstat` check passes.

use std::fs;
use std::io;
use std::path::Path;

/// Identity of the simulated NIC.
#[derive(Clone, Debug)]
pub struct Identity {
    /// IB device name (`mlx5_0`).
    pub ibdev: String,
    /// N of `uverbsN`.
    pub uverbs_index: u32,
    /// Node GUID (host order; printed as four groups of 16 bits).
    pub node_guid: u64,
    /// The port's MAC (the RoCE link-local GID is derived from it).
    pub mac: [u8; 6],
    /// The port's IPv4 address (the IPv4-mapped RoCE GIDs).
    pub ipv4: [u8; 4],
    /// The port's global IPv6 address (a unique local one; its RoCE GIDs).
    pub ipv6: [u8; 16],
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            ibdev: "mlx5_0".into(),
            uverbs_index: 0,
            node_guid: 0x0c42_a103_00b1_5e00,
            mac: [0x0c, 0x42, 0xa1, 0xb1, 0x5e, 0x00],
            ipv4: [10, 251, 0, 1],
            // fd0a:fb00::1
            ipv6: [0xfd, 0x0a, 0xfb, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        }
    }
}

/// PCI vendor id (Mellanox).
pub const PCI_VENDOR: u16 = 0x15b3;
/// PCI device id (ConnectX-6 Dx).
pub const PCI_DEVICE: u16 = 0x101d;
/// The netdev every GID of the port belongs to (`gid_attrs/ndevs/N`; the
/// loopback device, which every host has, so that the ifindex libibverbs
/// derives from the name exists).
pub const NETDEV: &str = "lo";
/// GID table length of the port (QUERY_PORT's gid_tbl_len).
pub const GID_TBL_LEN: u32 = 16;
/// The rdma_cm character device number (`class/misc/rdma_cm/dev`; a misc
/// device, major 10, whose minor the kernel assigns at load). The shim's
/// `fstat` on an rdma_cm descriptor reports it, as librdmacm's open check
/// wants a character device there.
pub const RDMA_CM_DEV: (u32, u32) = (10, 122);
/// Firmware version (QUERY_DEVICE fw_ver: major << 32 | minor << 16 | sub).
pub const FW: (u64, u64, u64) = (22, 36, 1010);

/// The GID table: (gid, sysfs type string). Link-local (from the MAC,
/// EUI-64), IPv4-mapped and the global IPv6 address, each as RoCE v1 and
/// v2, as mlx5 fills it (roce_gid_mgmt: one pair per address of the netdev).
pub fn gids(id: &Identity) -> Vec<([u8; 16], &'static str)> {
    let m = id.mac;
    let mut ll = [0u8; 16];
    ll[0] = 0xfe;
    ll[1] = 0x80;
    ll[8..16].copy_from_slice(&[m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]);
    let mut v4 = [0u8; 16];
    v4[10] = 0xff;
    v4[11] = 0xff;
    v4[12..16].copy_from_slice(&id.ipv4);
    let v6 = id.ipv6;
    vec![(ll, "IB/RoCE v1"), (ll, "RoCE v2"), (v4, "IB/RoCE v1"), (v4, "RoCE v2"), (v6, "IB/RoCE v1"), (v6, "RoCE v2")]
}

fn gid_text(g: &[u8; 16]) -> String {
    g.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c[1])).collect::<Vec<_>>().join(":")
}

fn guid_text(g: u64) -> String {
    format!("{:04x}:{:04x}:{:04x}:{:04x}", g >> 48, (g >> 32) & 0xffff, (g >> 16) & 0xffff, g & 0xffff)
}

fn w(dir: &Path, name: &str, text: &str) -> io::Result<()> {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(p, format!("{text}\n"))
}

/// Writes the tree under `root` (the future `SYSFS_PATH`), replacing the
/// simulated device's directories if they exist.
pub fn write(root: &Path, id: &Identity) -> io::Result<()> {
    let verbs = root.join("class/infiniband_verbs");
    let uverbs = verbs.join(format!("uverbs{}", id.uverbs_index));
    let ibdev = root.join("class/infiniband").join(&id.ibdev);
    for d in [&uverbs, &ibdev] {
        if d.exists() {
            fs::remove_dir_all(d)?;
        }
    }
    w(&verbs, "abi_version", "6")?;
    w(&uverbs, "ibdev", &id.ibdev)?;
    w(&uverbs, "dev", "1:3")?;
    w(&uverbs, "abi_version", "1")?;
    // The connection manager's ABI (librdmacm reads it before using rdma_cm).
    w(&root.join("class/misc/rdma_cm"), "abi_version", "4")?;
    w(&root.join("class/misc/rdma_cm"), "dev", &format!("{}:{}", RDMA_CM_DEV.0, RDMA_CM_DEV.1))?;
    let modalias = format!("pci:v{:08X}d{:08X}sv{:08X}sd{:08X}bc02sc00i00", PCI_VENDOR, PCI_DEVICE, PCI_VENDOR, 0x0016);
    w(&uverbs, "device/modalias", &modalias)?;
    w(&ibdev, "node_type", "1: CA")?;
    w(&ibdev, "node_guid", &guid_text(id.node_guid))?;
    w(&ibdev, "sys_image_guid", &guid_text(id.node_guid))?;
    w(&ibdev, "fw_ver", &format!("{}.{}.{:04}", FW.0, FW.1, FW.2))?;
    w(&ibdev, "hca_type", "MT4125")?;
    w(&ibdev, "hw_rev", "0x0")?;
    w(&ibdev, "board_id", "VSIM000000001")?;
    w(&ibdev, "node_desc", &format!("verbs-sim {}", id.ibdev))?;
    w(&ibdev, "device/modalias", &modalias)?;
    w(&ibdev, "device/vendor", &format!("0x{PCI_VENDOR:04x}"))?;
    w(&ibdev, "device/device", &format!("0x{PCI_DEVICE:04x}"))?;
    w(&ibdev, "device/subsystem_vendor", &format!("0x{PCI_VENDOR:04x}"))?;
    w(&ibdev, "device/subsystem_device", "0x0016")?;
    let port = ibdev.join("ports/1");
    write_port_state(root, id, true)?;
    w(&port, "link_layer", "Ethernet")?;
    w(&port, "rate", "100 Gb/sec (4X EDR)")?;
    w(&port, "lid", "0x0")?;
    w(&port, "sm_lid", "0x0")?;
    w(&port, "lid_mask_count", "0")?;
    w(&port, "sm_sl", "0")?;
    w(&port, "cap_mask", "0x04010000")?;
    w(&port, "pkeys/0", "0xffff")?;
    let table = gids(id);
    for i in 0..GID_TBL_LEN as usize {
        let (gid, ty) = table.get(i).copied().unwrap_or(([0; 16], "IB/RoCE v1"));
        w(&port, &format!("gids/{i}"), &gid_text(&gid))?;
        w(&port, &format!("gid_attrs/types/{i}"), ty)?;
        w(&port, &format!("gid_attrs/ndevs/{i}"), NETDEV)?;
    }
    Ok(())
}

/// Rewrites port 1's `state` and `phys_state` as the kernel shows them
/// with the port's netdev up (`4: ACTIVE`, `5: LinkUp`) or down (`1: DOWN`,
/// `3: Disabled`: mlx5_query_port_roce of a netdev that is not running).
/// Each file is replaced whole (written aside, then renamed), so that a
/// reader sees the old text or the new one, never a mix.
pub fn write_port_state(root: &Path, id: &Identity, up: bool) -> io::Result<()> {
    let port = root.join("class/infiniband").join(&id.ibdev).join("ports/1");
    fs::create_dir_all(&port)?;
    let (state, phys) = if up { ("4: ACTIVE", "5: LinkUp") } else { ("1: DOWN", "3: Disabled") };
    for (name, text) in [("state", state), ("phys_state", phys)] {
        let aside = port.join(format!(".{name}.new"));
        fs::write(&aside, format!("{text}\n"))?;
        fs::rename(&aside, port.join(name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_has_what_libibverbs_reads() {
        let dir = std::env::temp_dir().join(format!("vsim-fixture-{}", std::process::id()));
        let id = Identity::default();
        write(&dir, &id).unwrap();
        let r = |p: &str| fs::read_to_string(dir.join(p)).unwrap();
        assert_eq!(r("class/infiniband_verbs/uverbs0/dev"), "1:3\n");
        assert_eq!(r("class/infiniband_verbs/uverbs0/ibdev"), "mlx5_0\n");
        assert_eq!(r("class/infiniband/mlx5_0/node_guid"), "0c42:a103:00b1:5e00\n");
        assert!(r("class/infiniband/mlx5_0/device/modalias").starts_with("pci:v000015B3d0000101Dsv"));
        assert_eq!(r("class/infiniband/mlx5_0/ports/1/gids/3"), "0000:0000:0000:0000:0000:ffff:0afb:0001\n");
        assert_eq!(r("class/infiniband/mlx5_0/ports/1/gids/0"), "fe80:0000:0000:0000:0e42:a1ff:feb1:5e00\n");
        assert_eq!(r("class/infiniband/mlx5_0/ports/1/gid_attrs/types/3"), "RoCE v2\n");
        // the port state follows the netdev, and comes back
        write_port_state(&dir, &id, false).unwrap();
        assert_eq!((r("class/infiniband/mlx5_0/ports/1/state"), r("class/infiniband/mlx5_0/ports/1/phys_state")), ("1: DOWN\n".into(), "3: Disabled\n".into()));
        write_port_state(&dir, &id, true).unwrap();
        assert_eq!((r("class/infiniband/mlx5_0/ports/1/state"), r("class/infiniband/mlx5_0/ports/1/phys_state")), ("4: ACTIVE\n".into(), "5: LinkUp\n".into()));
        // rewriting over an existing tree works
        write(&dir, &id).unwrap();
        // the copy our discovery tests read (tests/fixtures/mlx5/sys) is this tree
        let copy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mlx5/sys");
        assert_eq!(
            files(&dir),
            files(&copy),
            "tests/fixtures/mlx5/sys is stale: regenerate it with verbs-simd --sysfs-only --sysfs tests/fixtures/mlx5/sys"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Every file under `root`: (relative path, contents), sorted.
    fn files(root: &Path) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let rel = p.strip_prefix(root).unwrap().display().to_string();
                    out.push((rel, fs::read_to_string(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }
}
