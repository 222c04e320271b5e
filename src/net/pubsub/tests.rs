//! Unit tests of the PubSub transports that need no root: the VLAN tag
//! put back, the error messages, and UDP unicast over loopback in the
//! caller's own namespace.

use super::*;
use crate::error::BadInput;
use std::net::Ipv4Addr;
use std::net::UdpSocket;
use std::time::Instant;

/// A UDP port on loopback that was free a moment ago.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn loopback(port: u16) -> Transport {
    Transport::Udp {
        address: SocketAddrV4::new(Ipv4Addr::LOCALHOST, port),
        interface: "lo".into(),
    }
}

#[test]
fn a_tag_goes_back_after_the_addresses() {
    let untagged: Vec<u8> = (0u8..20).collect();
    let mut buf = [0xee; 32];
    buf[..20].copy_from_slice(&untagged);
    assert_eq!(reinsert_tag(&mut buf, 20, 0x8100, 0x6000), 24);
    let mut want = untagged[..12].to_vec();
    want.extend_from_slice(&[0x81, 0x00, 0x60, 0x00]);
    want.extend_from_slice(&untagged[12..]);
    assert_eq!(&buf[..24], &want[..]);
    assert_eq!(buf[24], 0xee, "nothing written beyond the frame");

    // A full buffer: the tag goes in, the last 4 bytes fall off the end.
    let mut full = [0u8; 20];
    full.copy_from_slice(&untagged);
    assert_eq!(reinsert_tag(&mut full, 20, 0x88a8, 0x0005), 20);
    assert_eq!(&full[12..16], &[0x88, 0xa8, 0x00, 0x05]);
    assert_eq!(&full[16..], &untagged[12..16]);

    // No addresses, or no room for addresses and a tag: left alone.
    let mut short = [1u8; 32];
    assert_eq!(reinsert_tag(&mut short, 11, 0x8100, 1), 11);
    assert_eq!(short, [1u8; 32]);
    let mut tiny = [2u8; 15];
    assert_eq!(reinsert_tag(&mut tiny, 14, 0x8100, 1), 14);
    assert_eq!(tiny, [2u8; 15]);
}

#[test]
fn interface_and_privilege_errors_name_the_fix() {
    let enodev = || io::Error::from_raw_os_error(libc::ENODEV);
    let e = interface_error(enodev(), "eth9", None);
    assert!(e.downcast_ref::<BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        "network interface eth9 does not exist; `ip link` lists the interfaces there are"
    );
    assert_eq!(
        interface_error(enodev(), "jl7x", Some("jl7pl")).to_string(),
        "network interface jl7x does not exist in network namespace jl7pl; `ip -n jl7pl link` lists the interfaces there are"
    );
    assert_eq!(
        interface_error(io::Error::from_raw_os_error(libc::EINVAL), "a-very-long-name-0", None)
            .to_string(),
        "\"a-very-long-name-0\" cannot be a network interface name: it has 1 to 15 characters and no NUL"
    );
    for errno in [libc::EPERM, libc::EACCES] {
        let e = packet_error(io::Error::from_raw_os_error(errno), "eth0", None);
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "raw Ethernet (opc.eth) needs root or CAP_NET_RAW to open a packet socket; run as root, or use the UDP transport (opc.udp)"
        );
    }
    let e = packet_error(
        io::Error::from_raw_os_error(libc::ENOBUFS),
        "eth0",
        Some("jl7io"),
    );
    assert!(e.downcast_ref::<BadInput>().is_none());
    assert!(e
        .to_string()
        .starts_with("opening a packet socket on eth0 in network namespace jl7io"));
}

#[test]
fn a_missing_interface_or_namespace_is_named() {
    let e = PubSubSocket::open(
        None,
        Role::Subscriber,
        &Transport::Udp {
            address: DEFAULT_UDP,
            interface: "jlnosuchif0".into(),
        },
        Options::default(),
    )
    .unwrap_err();
    assert!(e.downcast_ref::<BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        "network interface jlnosuchif0 does not exist; `ip link` lists the interfaces there are"
    );
    let e = PubSubSocket::open(
        Some("jlnosuchns0"),
        Role::Publisher,
        &loopback(4840),
        Options::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "network namespace jlnosuchns0 does not exist (/run/netns/jlnosuchns0 is missing); `ip netns list` lists the ones there are"
    );
}

#[test]
fn raw_ethernet_without_cap_net_raw_is_refused() {
    let eth = Transport::Ethernet {
        interface: "lo".into(),
        destination: DEFAULT_MAC,
    };
    match PubSubSocket::open(None, Role::Subscriber, &eth, Options::default()) {
        Ok(_) => assert_eq!(jitterlab_sys::effective_uid(), 0),
        Err(e) => {
            assert_ne!(jitterlab_sys::effective_uid(), 0, "{e:#}");
            assert_eq!(e.to_string(), NEEDS_RAW);
        }
    }
}

// The tests that bind a port `free_port` found run one at a time: another
// test's socket could take that port in between.
#[test]
#[serial_test::serial(loopback_ports)]
fn udp_unicast_over_loopback_with_receive_stamps() {
    let port = free_port();
    let sub =
        PubSubSocket::open(None, Role::Subscriber, &loopback(port), Options::default()).unwrap();
    let publisher =
        PubSubSocket::open(None, Role::Publisher, &loopback(port), Options::default()).unwrap();
    let mut buf = [0u8; 64];

    // Nothing queued: Poll returns at once, Timeout after its time.
    assert_eq!(sub.recv(&mut buf, Wait::Poll).unwrap(), None);
    let t0 = Instant::now();
    assert_eq!(
        sub.recv(&mut buf, Wait::Timeout(Duration::from_millis(5)))
            .unwrap(),
        None
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(5),
        "{:?}",
        t0.elapsed()
    );

    let before = rx_timestamp::realtime_ns();
    publisher.send(b"uadp-payload").unwrap();
    let got = sub.recv(&mut buf, Wait::Block).unwrap().unwrap();
    let after = rx_timestamp::realtime_ns();
    assert_eq!(&buf[..got.len], b"uadp-payload");
    let stamp = got.rx_realtime_ns.expect("a subscriber has receive stamps");
    assert!(
        before <= stamp && stamp <= after,
        "{before} <= {stamp} <= {after}"
    );
    assert_eq!(got.rx_hardware_ns, None);

    // Three queued, drained, then nothing.
    for _ in 0..3 {
        publisher.send(b"x").unwrap();
    }
    assert_eq!(sub.drain(&mut buf).unwrap(), 3);
    assert_eq!(sub.recv(&mut buf, Wait::Poll).unwrap(), None);

    // Not asked for: no transmit stamp, and no system call for one.
    assert_eq!(publisher.tx_stamp().unwrap(), None);
    assert!(sub.stamps().rx_software && !sub.stamps().tx_software);
    assert!(!publisher.stamps().rx_software && !publisher.stamps().tx_software);
    assert_eq!(
        sub.stamps().hardware,
        Hardware::Absent {
            reason: "lo offers no hardware time stamps".into()
        }
    );
    assert_eq!(sub.interface(), "lo");
}

#[test]
#[serial_test::serial(loopback_ports)]
fn two_subscribers_share_a_port() {
    let port = free_port();
    let a = PubSubSocket::open(None, Role::Subscriber, &loopback(port), Options::default());
    let b = PubSubSocket::open(None, Role::Subscriber, &loopback(port), Options::default());
    assert!(a.is_ok() && b.is_ok(), "{:?} {:?}", a.err(), b.err());
}

#[test]
fn stamp_support_reads_as_a_result_line() {
    let mut s = StampSupport {
        rx_software: true,
        tx_software: false,
        hardware: Hardware::Absent {
            reason: "veth (jl7p) offers no hardware time stamps".into(),
        },
        driver: Some("veth".into()),
    };
    assert_eq!(
        s.to_string(),
        "receive: software, transmit: none, hardware: absent (veth (jl7p) offers no hardware time stamps)"
    );
    s.tx_software = true;
    s.hardware = Hardware::Available { phc_index: 0 };
    assert_eq!(
        s.to_string(),
        "receive: software, transmit: software, hardware: available (/dev/ptp0), off"
    );
    s.hardware = Hardware::Enabled { phc_index: 2 };
    assert!(s.to_string().ends_with("hardware: on (/dev/ptp2)"));
}
