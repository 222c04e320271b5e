//! PubSub transport addresses, as Part 14 writes them in a connection's
//! `Address` (7.3.2 UDP, 7.3.3 Ethernet):
//!
//! - `opc.udp://HOST[:PORT]` — a UDP group or unicast address, HOST an IPv4
//!   address or a bracketed IPv6 address (`opc.udp://[ff02::1]:4840`); the
//!   port defaults to 4840, the IANA port of OPC UA UDP.
//! - `opc.eth://MAC[:VID[.PCP]]` — raw Ethernet to a MAC address (six groups
//!   of two hex digits separated by hyphens, as Part 14 writes them:
//!   `01-00-5E-00-00-01`; colons are accepted too), optionally on VLAN VID
//!   (0–4094; 0 tags the priority only) with priority PCP (one digit, 0–7,
//!   default 0).
//!
//! Part 14 also allows host names, and IP addresses for `opc.eth`, when the
//! system can resolve them; jitterlab's core does no I/O and its roles run
//! on lab networks, so a name is refused with a message asking for the
//! address itself.

use std::fmt;
use std::net::IpAddr;

/// The default port of OPC UA UDP (IANA).
pub const DEFAULT_UDP_PORT: u16 = 4840;

/// The largest VLAN id (4095 is reserved).
pub const MAX_VLAN_ID: u16 = 4094;

/// A VLAN tag for sending: id and priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vlan {
    /// VLAN id, 0–4094 (0: a priority tag only).
    pub id: u16,
    /// Priority code point, 0–7.
    pub pcp: u8,
}

/// A parsed PubSub address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Address {
    /// `opc.udp://`: a UDP address and port.
    Udp {
        /// The group (multicast) or host (unicast) address.
        ip: IpAddr,
        /// The port.
        port: u16,
    },
    /// `opc.eth://`: a destination MAC address, optionally tagged.
    Eth {
        /// The destination MAC address.
        mac: [u8; 6],
        /// The VLAN tag, when the address names one.
        vlan: Option<Vlan>,
    },
}

/// The forms the errors suggest.
const FORMS: &str = "expected opc.udp://HOST:PORT or opc.eth://MAC[:VID[.PCP]]";

impl Address {
    /// Reads an `opc.udp://` or `opc.eth://` address (see the module doc).
    pub fn parse(text: &str) -> Result<Address, String> {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("opc.udp://") {
            parse_udp(text, &text["opc.udp://".len()..])
        } else if lower.starts_with("opc.eth://") {
            parse_eth(text, &text["opc.eth://".len()..])
        } else {
            Err(format!("address `{text}`: {FORMS}"))
        }
    }

    /// Whether the destination is a group: an IP multicast address, or a
    /// MAC address with the group bit.
    pub fn is_multicast(&self) -> bool {
        match self {
            Address::Udp { ip, .. } => ip.is_multicast(),
            Address::Eth { mac, .. } => mac[0] & 1 != 0,
        }
    }
}

fn parse_udp(text: &str, rest: &str) -> Result<Address, String> {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("address `{text}`: `[` without `]` around an IPv6 address"))?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(|| {
                format!("address `{text}`: expected `:PORT` after the IPv6 address")
            })?),
        };
        (host, port)
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        }
    };
    if host.is_empty() {
        return Err(format!("address `{text}`: no host; {FORMS}"));
    }
    let ip: IpAddr = host.parse().map_err(|_| {
        format!("address `{text}`: `{host}` is not an IP address (names are not resolved); {FORMS}")
    })?;
    let port = match port {
        None => DEFAULT_UDP_PORT,
        Some(p) => match digits(p).map(str::parse::<u16>).unwrap_or(Ok(0)) {
            Ok(0) | Err(_) => {
                return Err(format!(
                    "address `{text}`: port `{p}` is not a number in 1..=65535"
                ))
            }
            Ok(port) => port,
        },
    };
    Ok(Address::Udp { ip, port })
}

fn parse_eth(text: &str, rest: &str) -> Result<Address, String> {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    // A MAC with colons (01:00:5e:00:00:01) has five of them; a VLAN makes
    // a sixth. With hyphens, the first colon starts the VLAN.
    let (mac_text, vlan_text) = if rest.contains('-') {
        match rest.split_once(':') {
            Some((mac, vlan)) => (mac, Some(vlan)),
            None => (rest, None),
        }
    } else if rest.matches(':').count() > 5 {
        let at = rest.rfind(':').expect("six colons");
        (&rest[..at], Some(&rest[at + 1..]))
    } else {
        (rest, None)
    };
    let mac = parse_mac(mac_text).ok_or_else(|| {
        format!(
            "address `{text}`: `{mac_text}` is not a MAC address like 01-00-5E-00-00-01; {FORMS}"
        )
    })?;
    let vlan = match vlan_text {
        None => None,
        Some(v) => {
            let (vid, pcp) = match v.split_once('.') {
                Some((vid, pcp)) => (vid, Some(pcp)),
                None => (v, None),
            };
            let id = digits(vid)
                .and_then(|d| d.parse::<u16>().ok())
                .filter(|&id| id <= MAX_VLAN_ID)
                .ok_or_else(|| {
                    format!(
                        "address `{text}`: VLAN id `{vid}` is not a number in 0..={MAX_VLAN_ID}"
                    )
                })?;
            let pcp = match pcp {
                None => 0,
                Some(p) => match p.as_bytes() {
                    [d @ b'0'..=b'7'] => d - b'0',
                    _ => {
                        return Err(format!(
                            "address `{text}`: priority `{p}` is not one digit 0-7"
                        ))
                    }
                },
            };
            Some(Vlan { id, pcp })
        }
    };
    Ok(Address::Eth { mac, vlan })
}

/// `text` when it is one or more ASCII digits (no sign, no space).
fn digits(text: &str) -> Option<&str> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then_some(text)
}

/// Six groups of two hex digits, all separated by `-` or all by `:`.
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let sep = if text.contains('-') { '-' } else { ':' };
    let mut mac = [0u8; 6];
    let mut parts = text.split(sep);
    for byte in &mut mac {
        let part = parts.next()?;
        if part.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Udp {
                ip: IpAddr::V6(ip),
                port,
            } => write!(f, "opc.udp://[{ip}]:{port}"),
            Address::Udp { ip, port } => write!(f, "opc.udp://{ip}:{port}"),
            Address::Eth { mac, vlan } => {
                write!(
                    f,
                    "opc.eth://{:02X}-{:02X}-{:02X}-{:02X}-{:02X}-{:02X}",
                    mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
                )?;
                if let Some(v) = vlan {
                    write!(f, ":{}.{}", v.id, v.pcp)?;
                }
                Ok(())
            }
        }
    }
}
