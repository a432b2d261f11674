//! TEMPORARY stand-in for `verbs::discovery` (sysfs only) until the
//! `discovery` branch is merged; mirrors the names of its API so the swap
//! is a `use` change. Not to be shipped.
#![allow(dead_code)]

use std::path::PathBuf;

use verbs::providers::ProviderKind;
use verbs::{Context, Error, ErrorKind, Result};

/// Stand-in for `discovery::TransportType`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TransportType(i32);

impl TransportType {
    pub(crate) fn as_raw(self) -> i32 {
        self.0
    }
}

/// Stand-in for `discovery::Device`.
#[derive(Debug)]
pub(crate) struct Device {
    name: String,
    guid: u64,
    node_type: u32,
    uverbs: PathBuf,
    ibdev: PathBuf,
}

impl Device {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
    pub(crate) fn guid(&self) -> u64 {
        self.guid
    }
    pub(crate) fn transport(&self) -> TransportType {
        TransportType(match self.node_type {
            1..=3 => 0,
            4 => 1,
            5 => 2,
            6 => 3,
            7 => 4,
            _ => -1,
        })
    }
    pub(crate) fn sysfs_attr(&self, rel: &str) -> Option<String> {
        let s = std::fs::read_to_string(self.ibdev.join(rel)).ok()?;
        Some(s.strip_suffix('\n').unwrap_or(&s).to_owned())
    }
}

fn read(p: PathBuf) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim_end().to_owned())
}

/// Stand-in for `discovery::devices`.
pub(crate) fn devices() -> Result<Vec<Device>> {
    let class = PathBuf::from("/sys/class/infiniband_verbs");
    if read(class.join("abi_version")).is_none() {
        return Err(Error::new("ibv_get_device_list", ErrorKind::NoAbiFile));
    }
    let mut out = Vec::new();
    let mut ents: Vec<_> = std::fs::read_dir(&class)
        .map_err(|_| Error::new("ibv_get_device_list", ErrorKind::NoAbiFile))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("uverbs"))
        .collect();
    ents.sort();
    for u in ents {
        let Some(name) = read(class.join(&u).join("ibdev")) else {
            continue;
        };
        let ibdev = PathBuf::from("/sys/class/infiniband").join(&name);
        let guid = read(ibdev.join("node_guid"))
            .and_then(|g| u64::from_str_radix(&g.replace(':', ""), 16).ok())
            .unwrap_or(0);
        let node_type = read(ibdev.join("node_type"))
            .and_then(|t| t.split(':').next().and_then(|n| n.parse().ok()))
            .unwrap_or(0);
        out.push(Device {
            name,
            guid,
            node_type,
            uverbs: PathBuf::from("/dev/infiniband").join(&u),
            ibdev,
        });
    }
    Ok(out)
}

/// Stand-in for `Context::open`.
pub(crate) fn open(dev: &Device) -> Result<Context> {
    let provider = if dev.name.starts_with("siw") {
        ProviderKind::Siw
    } else {
        ProviderKind::Rxe
    };
    let fd = rustix::fs::open(
        &dev.uverbs,
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| Error::from_errno("ibv_open_device", e))?;
    Context::from_fd(fd, provider, &dev.name)
}
