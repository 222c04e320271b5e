//! The network flood end to end: real namespaces, the real `jitterlab`
//! binary's hidden `__net-sink` and `__net-flood` started through `ip netns
//! exec` with the argument vectors `NetFlood` builds, and the kernel's
//! per-CPU `NET_RX` counters to show that RPS put the receive work where it
//! was asked. And the PubSub transports of the round trip between the I/O
//! simulator's and the controller's namespaces (`jitterlab_core::roundtrip::PAIR`): UDP
//! multicast and unicast, raw Ethernet with and without a VLAN tag and with
//! the reference implementation's 802.3 length framing, and the stamps
//! each one has.
//!
//! The binary has no library, so this test includes the modules it drives
//! (`net::hosts`, `net::pubsub`, `system::counters` and the `error` they
//! use) from `src/`;
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
#[path = "../src/net/pubsub.rs"]
#[allow(dead_code)]
mod pubsub;

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

// ---------------------------------------------------------------------------
// The PubSub transports of the round trip.

use pubsub::{Hardware, Options, PubSubSocket, Role, Transport, Wait};
use std::net::{Ipv4Addr, SocketAddrV4};

/// How long a test waits for a message that must come.
const PATIENCE: Duration = Duration::from_secs(2);

/// The round trip's namespaces, made for one test and deleted by
/// [`RoundTrip::finish`] (or, on a panic, by the pair's drop).
struct RoundTrip {
    pair: hosts::NetnsPair,
    pid: u32,
}

impl RoundTrip {
    /// Makes the pair, or says why it skips and returns `None`.
    fn setup() -> Option<RoundTrip> {
        if jitterlab_sys::effective_uid() != 0 {
            eprintln!("skipping: creating network namespaces and packet sockets needs root");
            return None;
        }
        if Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipping: `ip` is not installed (package iproute2)");
            return None;
        }
        let pair =
            hosts::NetnsPair::setup(jitterlab_core::roundtrip::PAIR, &mut |_| Ok(())).unwrap();
        Some(RoundTrip {
            pair,
            pid: std::process::id(),
        })
    }

    /// The I/O simulator's namespace.
    fn io(&self) -> &str {
        self.pair.netns_a()
    }

    /// The controller's namespace.
    fn pl(&self) -> &str {
        self.pair.netns_b()
    }

    /// A socket in the I/O simulator's namespace on its veth end.
    fn io_socket(&self, role: Role, transport: Transport, options: Options) -> PubSubSocket {
        PubSubSocket::open(Some(self.io()), role, &transport, options).unwrap()
    }

    /// A socket in the controller's namespace on its veth end.
    fn pl_socket(&self, role: Role, transport: Transport, options: Options) -> PubSubSocket {
        PubSubSocket::open(Some(self.pl()), role, &transport, options).unwrap()
    }

    /// UDP to `address` through the I/O simulator's veth end.
    fn io_udp(&self, address: SocketAddrV4) -> Transport {
        Transport::Udp {
            address,
            interface: self.pair.veth_a().into(),
        }
    }

    /// UDP to `address` through the controller's veth end.
    fn pl_udp(&self, address: SocketAddrV4) -> Transport {
        Transport::Udp {
            address,
            interface: self.pair.veth_b().into(),
        }
    }

    /// Raw Ethernet to the reference's multicast address on `iface`.
    fn eth(iface: &str) -> Transport {
        Transport::Ethernet {
            interface: iface.into(),
            destination: pubsub::DEFAULT_MAC,
        }
    }

    /// Deletes both namespaces (close the sockets first) and checks that no
    /// namespace of this process is left.
    fn finish(self) {
        let names = [self.io().to_string(), self.pl().to_string()];
        assert_eq!(self.pair.teardown().unwrap(), names);
        let left = hosts::namespaces("ip").unwrap();
        let ours = format!("jl{}", self.pid);
        assert!(!left.iter().any(|n| n.starts_with(&ours)), "{left:?}");
    }
}

/// Waits for the next message on `socket` into `buf`, at most [`PATIENCE`].
fn next(socket: &PubSubSocket, buf: &mut [u8]) -> pubsub::Received {
    socket
        .recv(buf, Wait::Timeout(PATIENCE))
        .unwrap()
        .expect("a message within the test's patience")
}

/// Sends `msg` from `tx` and receives it on `rx`; asserts the bytes and that
/// the kernel's receive stamp lies between the sender's clock read before
/// the send and the receiver's after the receive.
fn send_and_check(tx: &PubSubSocket, rx: &PubSubSocket, msg: &[u8]) {
    let mut buf = [0u8; 1600];
    let before = jitterlab_sys::rx_timestamp::realtime_ns();
    tx.send(msg).unwrap();
    let got = next(rx, &mut buf);
    let after = jitterlab_sys::rx_timestamp::realtime_ns();
    assert_eq!(&buf[..got.len], msg);
    let stamp = got.rx_realtime_ns.expect("a receive stamp");
    assert!(
        before <= stamp && stamp <= after,
        "{before} <= {stamp} <= {after}"
    );
    assert_eq!(got.rx_hardware_ns, None);
}

/// The first message of the reference's tutorial publisher in
/// `tutorial_eth.pcap` (captures/uadp): IEEE 802.3 length framing (0x0027 =
/// 39 bytes) instead of EtherType 0xB62C, then the 39-byte UADP message.
const TUTORIAL_ETH_FRAME: [u8; 53] = [
    0x01, 0x00, 0x5e, 0x00, 0x00, 0x01, 0x7a, 0x14, 0xff, 0x69, 0xe5, 0xc7, 0x00, 0x27, 0xf1, 0x01,
    0xba, 0x08, 0x01, 0x64, 0x00, 0x01, 0x4d, 0xf4, 0xe1, 0x10, 0x54, 0x03, 0x1d, 0xcb, 0x7e, 0x7b,
    0xdd, 0x01, 0xf6, 0x27, 0x9f, 0xa5, 0x60, 0x27, 0x9f, 0xa5, 0x01, 0x00, 0x0d, 0xb8, 0x03, 0x1d,
    0xcb, 0x7e, 0x7b, 0xdd, 0x01,
];

/// The UADP message inside [`TUTORIAL_ETH_FRAME`].
fn tutorial_message() -> &'static [u8] {
    &TUTORIAL_ETH_FRAME[14..]
}

/// A frame from source `src` to the reference's multicast address with
/// EtherType 0xB62C, optionally behind an 802.1Q tag with `tci`.
fn uadp_frame(src: [u8; 6], tci: Option<u16>, payload: &[u8]) -> Vec<u8> {
    let mut f = pubsub::DEFAULT_MAC.to_vec();
    f.extend_from_slice(&src);
    if let Some(tci) = tci {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&jitterlab_core::ether::ETHERTYPE_UADP.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Receives frames on `rx` until one comes from `src` (the subscriber takes
/// every frame of the link, IPv6 neighbour discovery too) and returns it
/// with its receive stamp.
fn frame_from(rx: &PubSubSocket, src: &[u8]) -> (Vec<u8>, u64) {
    let mut buf = [0u8; 1600];
    let deadline = std::time::Instant::now() + PATIENCE;
    while std::time::Instant::now() < deadline {
        let got = next(rx, &mut buf);
        if buf.get(6..12) == Some(src) {
            return (buf[..got.len].to_vec(), got.rx_realtime_ns.unwrap());
        }
    }
    panic!("no frame from {src:02x?} within {PATIENCE:?}");
}

#[test]
#[serial(netns)]
fn udp_multicast_from_io_to_pl_and_back_with_receive_stamps() {
    let Some(rt) = RoundTrip::setup() else { return };
    let group = pubsub::DEFAULT_UDP;
    let none = Options::default();
    let io_pub = rt.io_socket(Role::Publisher, rt.io_udp(group), none);
    let io_sub = rt.io_socket(Role::Subscriber, rt.io_udp(group), none);
    let pl_sub = rt.pl_socket(Role::Subscriber, rt.pl_udp(group), none);
    let pl_pub = rt.pl_socket(Role::Publisher, rt.pl_udp(group), none);

    send_and_check(&io_pub, &pl_sub, tutorial_message());
    let reply = b"output image of the controller";
    send_and_check(&pl_pub, &io_sub, reply);
    // Without IP_MULTICAST_LOOP neither side heard itself: the reply was the
    // I/O subscriber's first message, and nothing else is queued.
    let mut buf = [0u8; 64];
    assert_eq!(io_sub.recv(&mut buf, Wait::Poll).unwrap(), None);
    assert_eq!(pl_sub.recv(&mut buf, Wait::Poll).unwrap(), None);
    assert!(pl_sub.stamps().rx_software);

    // Both roles in one namespace: with the loop asked for, a subscriber
    // beside the publisher hears it.
    let looped = Options {
        multicast_loop: true,
        ..none
    };
    let io_pub_loop = rt.io_socket(Role::Publisher, rt.io_udp(group), looped);
    send_and_check(&io_pub_loop, &io_sub, b"heard at home");
    assert_eq!(next(&pl_sub, &mut buf).len, b"heard at home".len());

    drop((io_pub, io_sub, pl_sub, pl_pub, io_pub_loop));
    rt.finish();
}

#[test]
#[serial(netns)]
fn udp_unicast_from_io_to_pl() {
    let Some(rt) = RoundTrip::setup() else { return };
    let to_pl = SocketAddrV4::new(rt.pair.ip_b(), 4841);
    assert_eq!(to_pl.ip(), &Ipv4Addr::new(198, 18, 0, 10));
    let none = Options::default();
    let io_pub = rt.io_socket(Role::Publisher, rt.io_udp(to_pl), none);
    let pl_sub = rt.pl_socket(Role::Subscriber, rt.pl_udp(to_pl), none);
    let mut buf = [0u8; 64];
    assert_eq!(
        pl_sub.recv(&mut buf, Wait::Poll).unwrap(),
        None,
        "an empty socket"
    );
    send_and_check(&io_pub, &pl_sub, tutorial_message());
    assert_eq!(pl_sub.recv(&mut buf, Wait::Poll).unwrap(), None);
    drop((io_pub, pl_sub));
    rt.finish();
}

#[test]
#[serial(netns)]
fn raw_ethernet_frames_arrive_byte_for_byte_tagged_or_not_and_in_802_3_framing() {
    let Some(rt) = RoundTrip::setup() else { return };
    let none = Options::default();
    let io_pub = rt.io_socket(Role::Publisher, RoundTrip::eth(rt.pair.veth_a()), none);
    let pl_sub = rt.pl_socket(Role::Subscriber, RoundTrip::eth(rt.pair.veth_b()), none);
    // A locally administered source no real interface has.
    let src = [0x02, 0x4a, 0x4c, 0x00, 0x00, 0x01];
    let msg = tutorial_message();
    for tci in [None, Some(0x6000), Some(0x6005)] {
        // Priority 3, VLAN 0 (a priority tag) and VLAN 5.
        let frame = uadp_frame(src, tci, msg);
        let before = jitterlab_sys::rx_timestamp::realtime_ns();
        io_pub.send(&frame).unwrap();
        let (got, stamp) = frame_from(&pl_sub, &src);
        let after = jitterlab_sys::rx_timestamp::realtime_ns();
        assert_eq!(got, frame, "tag {tci:x?}");
        assert!(
            before <= stamp && stamp <= after,
            "{before} <= {stamp} <= {after}"
        );
    }
    // The reference's own framing: a length, not an EtherType.
    io_pub.send(&TUTORIAL_ETH_FRAME).unwrap();
    let (got, _) = frame_from(&pl_sub, &TUTORIAL_ETH_FRAME[6..12]);
    assert_eq!(got, TUTORIAL_ETH_FRAME);

    // The subscriber does not hear what its own namespace sends.
    let pl_pub = rt.pl_socket(Role::Publisher, RoundTrip::eth(rt.pair.veth_b()), none);
    let io_sub = rt.io_socket(Role::Subscriber, RoundTrip::eth(rt.pair.veth_a()), none);
    let back = [0x02, 0x4a, 0x4c, 0x00, 0x00, 0x02];
    let frame = uadp_frame(back, None, b"output");
    pl_pub.send(&frame).unwrap();
    assert_eq!(frame_from(&io_sub, &back).0, frame);
    let mut buf = [0u8; 1600];
    while let Some(r) = pl_sub.recv(&mut buf, Wait::Poll).unwrap() {
        assert_ne!(
            &buf[6..12],
            &back,
            "heard its own frame: {:02x?}",
            &buf[..r.len]
        );
    }

    drop((io_pub, pl_sub, pl_pub, io_sub));
    rt.finish();
}

#[test]
#[serial(netns)]
fn veth_stamps_in_software_and_has_no_hardware_stamps() {
    let Some(rt) = RoundTrip::setup() else { return };
    let pid = rt.pid;
    let stamped = Options {
        tx_stamps: true,
        hardware_stamps: true,
        ..Options::default()
    };
    let group = pubsub::DEFAULT_UDP;
    let udp_pub = rt.io_socket(Role::Publisher, rt.io_udp(group), stamped);
    let eth_pub = rt.io_socket(Role::Publisher, RoundTrip::eth(rt.pair.veth_a()), stamped);
    let pl_sub = rt.pl_socket(Role::Subscriber, rt.pl_udp(group), Options::default());
    let absent = Hardware::Absent {
        reason: format!("veth (jl{pid}i) offers no hardware time stamps"),
    };
    for s in [&udp_pub, &eth_pub] {
        assert_eq!(s.stamps().hardware, absent, "asked for, and still absent");
        assert_eq!(s.stamps().driver.as_deref(), Some("veth"));
    }
    assert_eq!(
        pl_sub.stamps().hardware,
        Hardware::Absent {
            reason: format!("veth (jl{pid}p) offers no hardware time stamps"),
        }
    );
    assert!(pl_sub.stamps().rx_software && !pl_sub.stamps().tx_software);
    eprintln!("veth publisher: {}", udp_pub.stamps());

    // Nothing sent yet: no stamp queued.
    assert_eq!(udp_pub.tx_stamp().unwrap(), None);
    let frame = uadp_frame([0x02, 0, 0, 0, 0, 3], None, b"stamp me");
    for (socket, msg) in [(&udp_pub, &b"stamp me"[..]), (&eth_pub, &frame[..])] {
        for _ in 0..3 {
            let before = jitterlab_sys::rx_timestamp::realtime_ns();
            socket.send(msg).unwrap();
            let after = jitterlab_sys::rx_timestamp::realtime_ns();
            let stamp = socket.tx_stamp().unwrap();
            assert!(socket.stamps().tx_software);
            let stamp = stamp.expect("veth stamps every send in software");
            assert!(
                before <= stamp && stamp <= after,
                "{before} <= {stamp} <= {after}"
            );
        }
        assert_eq!(socket.tx_stamp().unwrap(), None, "one stamp per send");
    }
    drop((udp_pub, eth_pub, pl_sub));
    rt.finish();
}

#[test]
#[serial(netns)]
fn a_missing_interface_in_a_namespace_is_named() {
    let Some(rt) = RoundTrip::setup() else { return };
    let pid = rt.pid;
    let missing = format!("jl{pid}x");
    for transport in [
        RoundTrip::eth(&missing),
        Transport::Udp {
            address: pubsub::DEFAULT_UDP,
            interface: missing.clone(),
        },
    ] {
        let e = PubSubSocket::open(
            Some(rt.pl()),
            Role::Subscriber,
            &transport,
            Options::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("network interface jl{pid}x does not exist in network namespace jl{pid}pl; `ip -n jl{pid}pl link` lists the interfaces there are")
        );
    }
    // The veth end of the other namespace is not in this one either.
    let e = PubSubSocket::open(
        Some(rt.pl()),
        Role::Publisher,
        &RoundTrip::eth(rt.pair.veth_a()),
        Options::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("network interface jl{pid}i does not exist")),
        "{e}"
    );
    rt.finish();
}
