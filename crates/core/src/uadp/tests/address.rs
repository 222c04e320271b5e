//! `opc.udp://` and `opc.eth://` addresses (Part 14, 7.3.2 and 7.3.3).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::uadp::*;

const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(224, 0, 0, 22));
const MAC: [u8; 6] = [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01];

#[test]
fn udp_addresses_take_an_ip_and_a_port_defaulting_to_4840() {
    for (text, ip, port, shown) in [
        (
            "opc.udp://224.0.0.22:4840",
            GROUP,
            4840,
            "opc.udp://224.0.0.22:4840",
        ),
        (
            "opc.udp://224.0.0.22",
            GROUP,
            4840,
            "opc.udp://224.0.0.22:4840",
        ),
        (
            "OPC.UDP://224.0.0.22:4841/",
            GROUP,
            4841,
            "opc.udp://224.0.0.22:4841",
        ),
        (
            "opc.udp://10.0.0.2:5000",
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            5000,
            "opc.udp://10.0.0.2:5000",
        ),
        (
            "opc.udp://[ff02::1]:4840",
            IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1)),
            4840,
            "opc.udp://[ff02::1]:4840",
        ),
        (
            "opc.udp://[fe80::2]",
            IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2)),
            4840,
            "opc.udp://[fe80::2]:4840",
        ),
    ] {
        let a = Address::parse(text).unwrap();
        assert_eq!(a, Address::Udp { ip, port }, "{text}");
        assert_eq!(a.to_string(), shown);
        assert_eq!(Address::parse(shown), Ok(a));
    }
    assert!(Address::parse("opc.udp://224.0.0.22")
        .unwrap()
        .is_multicast());
    assert!(!Address::parse("opc.udp://10.0.0.2").unwrap().is_multicast());
}

#[test]
fn ethernet_addresses_take_a_mac_and_an_optional_vlan_and_priority() {
    for (text, mac, vlan, shown) in [
        (
            "opc.eth://01-00-5E-00-00-01",
            MAC,
            None,
            "opc.eth://01-00-5E-00-00-01",
        ),
        (
            "opc.eth://01-00-5e-00-00-01",
            MAC,
            None,
            "opc.eth://01-00-5E-00-00-01",
        ),
        (
            "opc.eth://01:00:5e:00:00:01",
            MAC,
            None,
            "opc.eth://01-00-5E-00-00-01",
        ),
        (
            "opc.eth://01-00-5E-00-00-01:100",
            MAC,
            Some(Vlan { id: 100, pcp: 0 }),
            "opc.eth://01-00-5E-00-00-01:100.0",
        ),
        (
            "opc.eth://01-00-5E-00-00-01:4094.7",
            MAC,
            Some(Vlan { id: 4094, pcp: 7 }),
            "opc.eth://01-00-5E-00-00-01:4094.7",
        ),
        (
            "opc.eth://01:00:5e:00:00:01:0.3",
            MAC,
            Some(Vlan { id: 0, pcp: 3 }),
            "opc.eth://01-00-5E-00-00-01:0.3",
        ),
        (
            "opc.eth://7a-14-ff-69-e5-c7",
            [0x7a, 0x14, 0xff, 0x69, 0xe5, 0xc7],
            None,
            "opc.eth://7A-14-FF-69-E5-C7",
        ),
    ] {
        let a = Address::parse(text).unwrap();
        assert_eq!(a, Address::Eth { mac, vlan }, "{text}");
        assert_eq!(a.to_string(), shown);
        assert_eq!(Address::parse(shown), Ok(a));
    }
    assert!(Address::parse("opc.eth://01-00-5E-00-00-01")
        .unwrap()
        .is_multicast());
    assert!(!Address::parse("opc.eth://7a-14-ff-69-e5-c7")
        .unwrap()
        .is_multicast());
}

#[test]
fn anything_else_is_refused_with_the_expected_forms() {
    for (text, error) in [
        ("udp://224.0.0.22:4840", "address `udp://224.0.0.22:4840`: expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("224.0.0.22", "address `224.0.0.22`: expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.tcp://host:4840", "address `opc.tcp://host:4840`: expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.udp://", "address `opc.udp://`: no host; expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.udp://plc.local:4840", "address `opc.udp://plc.local:4840`: `plc.local` is not an IP address (names are not resolved); expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.udp://224.0.0.22:0", "address `opc.udp://224.0.0.22:0`: port `0` is not a number in 1..=65535"),
        ("opc.udp://224.0.0.22:70000", "address `opc.udp://224.0.0.22:70000`: port `70000` is not a number in 1..=65535"),
        ("opc.udp://224.0.0.22:+80", "address `opc.udp://224.0.0.22:+80`: port `+80` is not a number in 1..=65535"),
        ("opc.udp://[ff02::1", "address `opc.udp://[ff02::1`: `[` without `]` around an IPv6 address"),
        ("opc.udp://[ff02::1]4840", "address `opc.udp://[ff02::1]4840`: expected `:PORT` after the IPv6 address"),
        ("opc.eth://01-00-5E-00-00", "address `opc.eth://01-00-5E-00-00`: `01-00-5E-00-00` is not a MAC address like 01-00-5E-00-00-01; expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.eth://01-00-5E-00-00-1", "address `opc.eth://01-00-5E-00-00-1`: `01-00-5E-00-00-1` is not a MAC address like 01-00-5E-00-00-01; expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.eth://01-00-5E-00-00-0g", "address `opc.eth://01-00-5E-00-00-0g`: `01-00-5E-00-00-0g` is not a MAC address like 01-00-5E-00-00-01; expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.eth://plc", "address `opc.eth://plc`: `plc` is not a MAC address like 01-00-5E-00-00-01; expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]"),
        ("opc.eth://01-00-5E-00-00-01:4095", "address `opc.eth://01-00-5E-00-00-01:4095`: VLAN id `4095` is not a number in 0..=4094"),
        ("opc.eth://01-00-5E-00-00-01:x", "address `opc.eth://01-00-5E-00-00-01:x`: VLAN id `x` is not a number in 0..=4094"),
        ("opc.eth://01-00-5E-00-00-01:5.8", "address `opc.eth://01-00-5E-00-00-01:5.8`: priority `8` is not one digit 0-7"),
        ("opc.eth://01-00-5E-00-00-01:5.07", "address `opc.eth://01-00-5E-00-00-01:5.07`: priority `07` is not one digit 0-7"),
    ] {
        assert_eq!(Address::parse(text), Err(error.to_string()), "{text}");
    }
}
