//! Receive Packet Steering inside namespaces, end to end: a real
//! namespace pair, the real `jitterlab` binary's hidden `__rps` started
//! through `ip netns exec` by `net::rps::steer_rps_in_with`, and the mask
//! read back from each namespace's own sysfs with `ip netns exec NS cat`.
//!
//! The binary has no library, so this test includes the modules it drives
//! (`net::rps`, `net::flood` whose steps it reuses, `net::hosts` for the
//! pair, and the `error` and `termination` they use) from `src/`; their unit tests therefore
//! run here a second time. Needs root and iproute2; without them the test
//! says why it skips.

#[path = "../src/error.rs"]
#[allow(dead_code)]
mod error;

#[path = "../src/termination.rs"]
#[allow(dead_code)]
mod termination;

#[path = "../src/net/flood.rs"]
#[allow(dead_code)]
pub mod flood;
#[path = "../src/net/hosts.rs"]
#[allow(dead_code)]
mod hosts;
// `rps_main` is the binary's, not this test's.
#[path = "../src/net/rps.rs"]
#[allow(dead_code)]
mod rps;

/// `rps` reaches the flood's steps as `crate::net::flood`, as in the
/// binary.
mod net {
    pub use crate::flood;
}

use std::process::Command;

use hosts::NetnsPair;
use jitterlab_core::roundtrip::PAIR as ROUNDTRIP_PAIR;
use rps::steer_rps_in_with;
use serial_test::serial;

/// A kernel bitmap (`00000000,00000002`) without its commas and leading
/// zeros.
fn mask_digits(mask: &str) -> String {
    let digits = mask.trim().replace(',', "");
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() { "0" } else { trimmed }.to_string()
}

/// The mask of one CPU in hexadecimal, as [`mask_digits`] shows it.
fn bit(cpu: usize) -> String {
    format!("{:x}{}", 1u8 << (cpu % 4), "0".repeat(cpu / 4))
}

/// `ip netns exec NS cat /sys/class/net/IFACE/queues/rx-0/rps_cpus`.
fn read_back(netns: &str, iface: &str) -> String {
    let path = format!("/sys/class/net/{iface}/queues/rx-0/rps_cpus");
    let out = Command::new("ip")
        .args(["netns", "exec", netns, "cat", &path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cat {path} in {netns}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[serial(netns)]
fn each_veth_end_is_steered_to_its_own_cpu_inside_its_namespace() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: creating network namespaces and writing their sysfs needs root");
        return;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("skipping: `ip` is not installed (package iproute2)");
        return;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = jitterlab_core::units::CpuList::parse(&online).unwrap();
    let (first, last) = (online.iter().next().unwrap(), online.iter().last().unwrap());
    let bin = env!("CARGO_BIN_EXE_jitterlab");

    let pair = NetnsPair::setup(ROUNDTRIP_PAIR, &mut |_| Ok(())).unwrap();
    let (ns_a, ns_b) = (pair.netns_a().to_string(), pair.netns_b().to_string());
    let (if_a, if_b) = (pair.veth_a().to_string(), pair.veth_b().to_string());
    for (ns, iface, cpu) in [(&ns_a, &if_a, first), (&ns_b, &if_b, last)] {
        let line = steer_rps_in_with("ip", bin, ns, iface, &[cpu]).unwrap();
        eprintln!("{ns}: {line}");
        let (old, new) = line
            .strip_prefix(&format!("rps_cpus {iface} "))
            .and_then(|r| r.split_once(" -> "))
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
        assert_eq!(mask_digits(old), "0", "a new veth end steers nothing");
        assert_eq!(mask_digits(new), bit(cpu), "{line}");
        let read = read_back(ns, iface);
        assert_eq!(read.trim_end(), new, "the line shows what the kernel holds");
        assert_eq!(mask_digits(&read), bit(cpu));
    }
    // Each namespace's sysfs shows only its own end.
    let e = steer_rps_in_with("ip", bin, &ns_a, &if_b, &[first]).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains(&format!(
            "there is no interface {if_b} here (/sys/class/net/{if_b} is missing); run it inside the namespace that holds it"
        )),
        "{text}"
    );
    assert_eq!(
        mask_digits(&read_back(&ns_b, &if_b)),
        bit(last),
        "left as steered"
    );
    // The steering goes with the namespaces: nothing to restore.
    assert_eq!(pair.teardown().unwrap(), [ns_a.clone(), ns_b.clone()]);
    let left = hosts::namespaces("ip").unwrap();
    assert!(!left.contains(&ns_a) && !left.contains(&ns_b), "{left:?}");
}
