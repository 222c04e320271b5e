//! The network flood end to end: real namespaces, the real `jitterlab`
//! binary's hidden `__net-sink` and `__net-flood` started through `ip netns
//! exec` with the argument vectors `NetFlood` builds, and the kernel's
//! per-CPU `NET_RX` counters to show that RPS put the receive work where it
//! was asked.
//!
//! The binary has no library, so this test includes the modules it drives
//! (`net::hosts`, `system::counters` and the `error` they use) from `src/`;
//! their unit tests therefore run here a second time. Everything that makes
//! namespaces is `#[serial(netns)]`: the names carry the pid, which every
//! test of one process shares. Needs root and iproute2; without them the
//! test says why it skips.

#[path = "../src/system/counters.rs"]
#[allow(dead_code)]
mod counters;
#[path = "../src/error.rs"]
#[allow(dead_code)]
mod error;
#[path = "../src/net/hosts.rs"]
#[allow(dead_code)]
mod hosts;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use serial_test::serial;

/// A neighbour process, killed if the test ends before it does.
struct Neighbour(Child);

impl Drop for Neighbour {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(argv: &[String]) -> Neighbour {
    Neighbour(
        Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Sends SIGTERM to `n`, waits for it, and returns the rest of its stdout
/// (read from `out`); asserts it exited 0 with an empty stderr.
fn terminate(mut n: Neighbour, out: &mut impl Read) -> String {
    let status = Command::new("kill")
        .args(["-TERM", &n.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut text = String::new();
    out.read_to_string(&mut text).unwrap();
    let mut err = String::new();
    n.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = n.0.wait().unwrap();
    assert!(status.success(), "{status}; stderr: {err}");
    assert_eq!(err, "");
    text
}

/// A kernel bitmap (`00000000,00000002`) without its commas and leading
/// zeros.
fn mask_digits(mask: &str) -> String {
    let digits = mask.replace(',', "");
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() { "0" } else { trimmed }.to_string()
}

/// The number in a line `PREFIX N SUFFIX`.
fn number(line: &str, prefix: &str, suffix: &str) -> u64 {
    line.strip_prefix(prefix)
        .and_then(|r| r.strip_suffix(suffix))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line:?} is not {prefix}N{suffix}"))
}

#[test]
#[serial(netns)]
fn flood_reaches_the_sink_and_its_receive_work_lands_on_the_rps_cpu() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: creating network namespaces needs root");
        return;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("skipping: `ip` is not installed (package iproute2)");
        return;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = jitterlab_core::units::CpuList::parse(&online).unwrap();
    let rps_cpu = online.iter().last().unwrap();
    let pid = std::process::id();
    let me = std::env::current_exe().unwrap();
    let me = me.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_jitterlab");

    let flood = hosts::NetFlood::setup(&mut |_| Ok(())).unwrap();
    let mut sink_argv = flood.sink_argv(&[rps_cpu]);
    let rx = format!("jl{pid}rx");
    let tx = format!("jl{pid}tx");
    let iface = format!("jl{pid}b");
    let cpu = rps_cpu.to_string();
    assert_eq!(
        sink_argv,
        [
            "ip",
            "netns",
            "exec",
            &rx,
            me,
            "__net-sink",
            "--iface",
            &iface,
            "--rps-cpus",
            &cpu,
            "--port",
            "9"
        ]
    );
    let mut flood_argv = flood.flood_argv();
    assert_eq!(
        flood_argv,
        [
            "ip",
            "netns",
            "exec",
            &tx,
            me,
            "__net-flood",
            "--dst",
            "198.18.0.2",
            "--port",
            "9",
            "--size",
            "1400"
        ]
    );
    // This test binary is not jitterlab: run the real one.
    sink_argv[4] = bin.into();
    flood_argv[4] = bin.into();

    let mut sink = start(&sink_argv);
    let mut sink_out: BufReader<ChildStdout> = BufReader::new(sink.0.stdout.take().unwrap());
    let mut line = String::new();
    sink_out.read_line(&mut line).unwrap();
    let (old, new) = line
        .strip_prefix(&format!("rps_cpus {iface} "))
        .and_then(|r| r.strip_suffix('\n'))
        .and_then(|r| r.split_once(" -> "))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    assert_eq!(mask_digits(old), "0", "a new veth end steers nothing");
    let bit = format!("{:x}{}", 1u8 << (rps_cpu % 4), "0".repeat(rps_cpu / 4));
    assert_eq!(mask_digits(new), bit, "the mask of CPU {rps_cpu}");

    let before = counters::read(Path::new("/"));
    let mut flooder = start(&flood_argv);
    let mut flood_out = flooder.0.stdout.take().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let sent = terminate(flooder, &mut flood_out);
    let after = counters::read(Path::new("/"));
    let received = terminate(sink, &mut sink_out);

    let sent = number(&sent, "sent ", " datagrams\n");
    let (datagrams, bytes) = received
        .strip_prefix("received ")
        .and_then(|r| r.strip_suffix(" bytes\n"))
        .and_then(|r| r.split_once(" datagrams, "))
        .unwrap_or_else(|| panic!("unexpected end line {received:?}"));
    let datagrams: u64 = datagrams.parse().unwrap();
    assert!(datagrams > 0, "the sink received nothing");
    assert_eq!(bytes.parse::<u64>().unwrap(), datagrams * 1400);
    assert!(sent >= datagrams, "sent {sent} < received {datagrams}");

    let (_, net_rx) = counters::delta(&before, &after, &[]);
    eprintln!("sent {sent}, received {datagrams} datagrams; NET_RX per CPU {net_rx:?}");
    assert!(
        net_rx.get(&rps_cpu).is_some_and(|&n| n > 0),
        "no NET_RX on the RPS CPU {rps_cpu}: {net_rx:?}"
    );

    assert_eq!(flood.teardown().unwrap(), [tx, rx]);
    let left = hosts::namespaces("ip").unwrap();
    assert!(
        !left.iter().any(|n| n.starts_with(&format!("jl{pid}"))),
        "{left:?}"
    );
}
