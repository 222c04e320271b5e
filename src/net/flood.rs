//! The two processes of the network flood neighbour: a UDP sink in the
//! probe's namespace and a UDP flood in the sender namespace.
//!
//! Both are jitterlab itself, started through hidden subcommands
//! (`__net-sink`, `__net-flood`) inside a namespace by `ip netns exec` (see
//! [`super::hosts`]), so the neighbour machinery treats them like any other
//! neighbour: an argument vector, a pinned process group, SIGTERM at the
//! end. Each prints one summary line when a terminating signal
//! (`crate::termination`) ends it, which
//! is the proof that the neighbour made noise.
//!
//! The sink first binds its socket, then steers the interface's receive
//! work with RPS and prints `rps_cpus IFACE OLD -> NEW` — that line also
//! says it is ready, so a flood started after it is never refused. `OLD`
//! and `NEW` are the kernel's own rendering of the file, read before and
//! after the write: the kernel leaves out CPUs it will not steer to
//! (isolated ones), and `NEW` then shows what it kept. The mask format is
//! the kernel's: hexadecimal, most significant first, in comma-separated
//! 32-bit groups ([`rps_mask`]). The setting is not restored by the sink:
//! it belongs to the namespace's veth end and goes away with it.
//!
//! The flood sends datagrams as fast as one socket allows and refuses any
//! destination outside 198.18.0.0/15 and loopback (defence in depth: the
//! namespaces have no route elsewhere anyway). Both loops check the signal
//! flag between datagrams, the sink with a read timeout so an idle sink
//! still ends. Only `std::net`: no unsafe, no shell.

use std::fs;
use std::io::{ErrorKind, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use jitterlab_core::units::CpuList;

use crate::error::bad;

/// How often a blocked receive or send wakes to check for a signal.
const POLL: Duration = Duration::from_millis(100);

/// What `jitterlab __net-sink` is asked for: receive the flood inside the
/// probe's namespace (the command line parses `--iface`, `--rps-cpus`,
/// `--port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkArgs {
    /// Interface whose receive queue 0 is steered with RPS.
    pub iface: String,
    /// CPUs that do the interface's receive work.
    pub rps_cpus: CpuList,
    /// UDP port to receive on.
    pub port: u16,
}

/// What `jitterlab __net-flood` is asked for: send UDP datagrams as fast
/// as possible (`--dst`, `--port`, `--size`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FloodArgs {
    /// Destination address: in 198.18.0.0/15 or loopback, nothing else.
    pub dst: IpAddr,
    /// Destination UDP port.
    pub port: u16,
    /// Payload bytes per datagram (1 to 65507).
    pub size: u16,
}

/// Runs the sink: steers receive work, then counts datagrams until a
/// terminating signal, and prints `received N datagrams, B bytes`.
pub fn sink_main(a: &SinkArgs) -> Result<ExitCode> {
    let cpus: Vec<usize> = a.rps_cpus.iter().collect();
    if cpus.is_empty() {
        return Err(bad(
            "--rps-cpus names no CPU; name the CPUs that should do the receive work, e.g. 1",
        ));
    }
    let stop = stop_flag()?;
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, a.port))
        .with_context(|| format!("binding UDP port {}", a.port))?;
    socket
        .set_read_timeout(Some(POLL))
        .context("setting the sink's read timeout")?;
    // Inside `ip netns exec`, / is the namespace's own view of /sys.
    let line = steer_rps_line(Path::new("/"), &a.iface, &cpus)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;

    let mut buf = vec![0u8; 65_536];
    let (mut datagrams, mut bytes) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        match socket.recv(&mut buf) {
            Ok(len) => {
                datagrams += 1;
                bytes += len as u64;
            }
            Err(e) if is_transient(&e) => {}
            Err(e) => return Err(e).context("receiving the flood"),
        }
    }
    writeln!(out, "received {datagrams} datagrams, {bytes} bytes")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the flood: sends `--size`-byte datagrams to `--dst:--port` until
/// a terminating signal, and prints `sent N datagrams`.
pub fn flood_main(a: &FloodArgs) -> Result<ExitCode> {
    check_destination(a.dst)?;
    let stop = stop_flag()?;
    let local: SocketAddr = match a.dst {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).context("binding the flood's UDP socket")?;
    socket
        .connect((a.dst, a.port))
        .with_context(|| format!("connecting to {}:{}", a.dst, a.port))?;
    socket
        .set_write_timeout(Some(POLL))
        .context("setting the flood's write timeout")?;
    let payload = vec![0x6a_u8; usize::from(a.size)];
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match socket.send(&payload) {
            Ok(_) => sent += 1,
            // The sink is not up yet (ICMP port unreachable), or the
            // socket buffer is full: keep going.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused || is_transient(&e) => {}
            Err(e) => return Err(e).with_context(|| format!("sending to {}:{}", a.dst, a.port)),
        }
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "sent {sent} datagrams")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The RPS mask of `cpus` in the kernel's bitmap format: hexadecimal, most
/// significant group first, 32-bit groups separated by commas, every group
/// but the first zero-padded to 8 digits (CPU 1 → `2`, CPUs 0-1 → `3`,
/// CPU 32 → `1,00000000`; no CPU → `0`).
pub fn rps_mask(cpus: &[usize]) -> String {
    let Some(&max) = cpus.iter().max() else {
        return "0".into();
    };
    let mut groups = vec![0u32; max / 32 + 1];
    for &c in cpus {
        groups[c / 32] |= 1 << (c % 32);
    }
    let mut out = format!("{:x}", groups[groups.len() - 1]);
    for g in groups.iter().rev().skip(1) {
        out.push_str(&format!(",{g:08x}"));
    }
    out
}

/// Steers `iface`'s receive work onto `cpus` under `root` and says what
/// changed: `rps_cpus IFACE OLD -> NEW` (also `jitterlab __rps`'s line).
pub(crate) fn steer_rps_line(root: &Path, iface: &str, cpus: &[usize]) -> Result<String> {
    let (old, new) = steer_rps(root, iface, cpus)?;
    Ok(format!("rps_cpus {iface} {old} -> {new}"))
}

/// Writes the RPS mask of `cpus` to `IFACE`'s receive queue 0 under `root`;
/// returns the file's text before and after.
fn steer_rps(root: &Path, iface: &str, cpus: &[usize]) -> Result<(String, String)> {
    if iface.is_empty()
        || iface.len() > 15
        || iface == "."
        || iface == ".."
        || iface.contains(['/', ':'])
        || iface.chars().any(char::is_whitespace)
    {
        return Err(bad(format!(
            "--iface {iface:?} is not a network interface name"
        )));
    }
    let dev = root.join("sys/class/net").join(iface);
    if !dev.exists() {
        bail!(
            "there is no interface {iface} here ({} is missing); run it inside the namespace that holds it",
            dev.display()
        );
    }
    let path = dev.join("queues/rx-0/rps_cpus");
    let old = match fs::read_to_string(&path) {
        Ok(t) => t.trim_end().to_string(),
        Err(e) if e.kind() == ErrorKind::NotFound => bail!(
            "{} is missing: the kernel was built without CONFIG_RPS, so receive work cannot be steered",
            path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mask = rps_mask(cpus);
    fs::write(&path, format!("{mask}\n"))
        .with_context(|| format!("writing {mask} to {}", path.display()))?;
    let new = fs::read_to_string(&path)
        .with_context(|| format!("reading back {}", path.display()))?
        .trim_end()
        .to_string();
    Ok((old, new))
}

/// Refuses (as bad input) any destination but 198.18.0.0/15 and loopback.
fn check_destination(dst: IpAddr) -> Result<()> {
    let benchmarking = match dst {
        IpAddr::V4(a) => a.octets()[0] == 198 && a.octets()[1] & 0xfe == 18,
        IpAddr::V6(_) => false,
    };
    if benchmarking || dst.is_loopback() {
        Ok(())
    } else {
        Err(bad(format!(
            "refusing to flood {dst}: --dst must be in 198.18.0.0/15 (the benchmarking range of jitterlab's own network namespaces) or a loopback address"
        )))
    }
}

/// The flag every terminating signal raises ([`crate::termination`]).
fn stop_flag() -> Result<Arc<AtomicBool>> {
    crate::termination::stop_flag()
}

/// Errors after which a socket loop just checks its flag and goes on.
fn is_transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;

    #[test]
    fn rps_mask_is_the_kernels_bitmap_format() {
        assert_eq!(rps_mask(&[]), "0");
        assert_eq!(rps_mask(&[0]), "1");
        assert_eq!(rps_mask(&[1]), "2");
        assert_eq!(rps_mask(&[0, 1]), "3");
        assert_eq!(rps_mask(&[4, 5, 6, 7]), "f0");
        assert_eq!(rps_mask(&[31]), "80000000");
        assert_eq!(rps_mask(&[32]), "1,00000000");
        assert_eq!(rps_mask(&[35, 0]), "8,00000001");
        assert_eq!(rps_mask(&[64, 0]), "1,00000000,00000001");
        assert_eq!(rps_mask(&[1, 1]), "2");
    }

    #[test]
    fn flood_refuses_foreign_destinations() {
        for dst in [
            "8.8.8.8",
            "198.20.0.1",
            "198.17.255.255",
            "10.0.0.1",
            "2001:db8::1",
        ] {
            let a = FloodArgs {
                dst: dst.parse().unwrap(),
                port: 9,
                size: 1400,
            };
            let e = flood_main(&a).unwrap_err();
            assert!(e.downcast_ref::<BadInput>().is_some(), "{dst}");
            assert_eq!(
                e.to_string(),
                format!("refusing to flood {dst}: --dst must be in 198.18.0.0/15 (the benchmarking range of jitterlab's own network namespaces) or a loopback address")
            );
        }
        for dst in ["198.18.0.2", "198.19.255.254", "127.0.0.1", "::1"] {
            assert!(check_destination(dst.parse().unwrap()).is_ok(), "{dst}");
        }
    }

    #[test]
    fn steer_rps_writes_the_mask_and_reports_old_and_new() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("sys/class/net/jl1b/queues/rx-0");
        fs::create_dir_all(&queue).unwrap();
        fs::write(queue.join("rps_cpus"), "0\n").unwrap();
        assert_eq!(
            steer_rps(dir.path(), "jl1b", &[0, 1]).unwrap(),
            ("0".to_string(), "3".to_string())
        );
        assert_eq!(fs::read_to_string(queue.join("rps_cpus")).unwrap(), "3\n");
    }

    #[test]
    fn steer_rps_names_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let e = steer_rps(dir.path(), "jl1b", &[1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "there is no interface jl1b here ({}/sys/class/net/jl1b is missing); run it inside the namespace that holds it",
                dir.path().display()
            )
        );
        fs::create_dir_all(dir.path().join("sys/class/net/jl1b/queues/rx-0")).unwrap();
        let e = steer_rps(dir.path(), "jl1b", &[1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}/sys/class/net/jl1b/queues/rx-0/rps_cpus is missing: the kernel was built without CONFIG_RPS, so receive work cannot be steered",
                dir.path().display()
            )
        );
        for iface in ["", "..", "a/b", "eth0:1", "a b", "abcdefghijklmnop"] {
            let e = steer_rps(dir.path(), iface, &[1]).unwrap_err();
            assert!(e.downcast_ref::<BadInput>().is_some());
            assert_eq!(
                e.to_string(),
                format!("--iface {iface:?} is not a network interface name")
            );
        }
    }

    #[test]
    fn sink_refuses_an_empty_cpu_list() {
        let a = SinkArgs {
            iface: "jl1b".into(),
            rps_cpus: CpuList::default(),
            port: 9,
        };
        let e = sink_main(&a).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "--rps-cpus names no CPU; name the CPUs that should do the receive work, e.g. 1"
        );
    }
}
