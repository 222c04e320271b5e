//! The transports of OPC UA PubSub: one socket type, [`PubSubSocket`], that
//! a real-time loop publishes and subscribes through, over UDP or raw
//! Ethernet, with the kernel's time stamps.
//!
//! The `roundtrip` probe's I/O simulator and controller each hold a
//! publisher and a subscriber. This module moves bytes and stamps only: a
//! UDP payload, or a whole Ethernet frame the caller built; the UADP codec
//! and the Ethernet header parser live in core.
//!
//! **Transports** ([`Transport`]):
//! - `Udp` (`opc.udp://224.0.0.22:4840`, multicast or unicast): the address
//!   is where messages go, as in the URL. A publisher binds the interface's
//!   own IPv4 address and connects to the address; for a group it sends out
//!   of that interface (`IP_MULTICAST_IF`, so no multicast route is needed),
//!   with TTL 1 (the reference's) and `IP_MULTICAST_LOOP` only when asked
//!   ([`Options::multicast_loop`]: both roles in one namespace). A subscriber
//!   binds the address itself (the group, or its own unicast address) with
//!   `SO_REUSEADDR`, so several subscribers can share the port, and joins the
//!   group on the interface.
//! - `Ethernet` (`opc.eth://01-00-5E-00-00-01`): a packet socket on the
//!   interface. A publisher's socket receives nothing (protocol 0), so no
//!   frame ever queues up unread on it; it sends the whole frame the caller
//!   built — EtherType 0xB62C (`jitterlab_core::ether::ETHERTYPE_UADP`), with or without an
//!   802.1Q tag — and the kernel reads the type from the frame. A subscriber
//!   takes **every** frame of the interface (`ETH_P_ALL`), because the
//!   reference implementation sends IEEE 802.3 length framing rather than
//!   0xB62C; the caller filters. It joins the destination's multicast
//!   address (and goes promiscuous when asked), ignores the frames this host
//!   sends (`PACKET_IGNORE_OUTGOING`), and puts back the 802.1Q tag the
//!   kernel took out of a tagged frame (`PACKET_AUXDATA`), so the caller gets
//!   the frame's exact bytes. Needs root or `CAP_NET_RAW`.
//!
//! **Namespaces.** [`PubSubSocket::open`] makes the socket in a named network
//! namespace, as the `response` probe does: a short thread enters it
//! (`setns`), makes the socket and ends; the socket stays in that namespace
//! wherever it is used. Without a name, the socket is made in the caller's
//! own namespace (one role per machine, `--interface IF`).
//!
//! **Stamps** ([`StampSupport`]): a subscriber has the kernel's software
//! receive stamp of every message (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`). A
//! publisher asked for transmit stamps ([`Options::tx_stamps`]) gets the
//! driver's software stamp of each send from the error queue
//! ([`PubSubSocket::tx_stamp`]), where the driver gives one. Hardware stamps
//! are the NIC's: [`Options::hardware_stamps`] turns them on where the
//! driver offers them (and a PTP clock), and puts the interface's previous
//! set-up back when the socket is dropped; elsewhere they are reported
//! absent, with the reason ("veth offers no hardware time stamps").
//!
//! **The hot path** (design rule 2): [`PubSubSocket::send`],
//! [`PubSubSocket::recv`] and [`PubSubSocket::tx_stamp`] allocate nothing,
//! print nothing and take no lock: each is one system call on the caller's
//! buffer (plus one `setsockopt` when a receive's timeout differs from the
//! previous one's). Opening allocates and may block; do it before the loop.
//!
//! The design rules cited here are in `docs/design.md`.

use std::fmt;
use std::fs::File;
use std::io;
use std::net::SocketAddrV4;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use jitterlab_sys::packet::{self, Membership};
use jitterlab_sys::tx_timestamp::{self, HwConfig, TxStamp};
use jitterlab_sys::{netns, rx_timestamp};
use socket2::{Domain, Protocol, Socket, Type};

use crate::error::bad;

/// The reference's UDP group and port: `opc.udp://224.0.0.22:4840`.
#[cfg(test)]
pub const DEFAULT_UDP: SocketAddrV4 =
    SocketAddrV4::new(std::net::Ipv4Addr::new(224, 0, 0, 22), 4840);
/// The reference's Ethernet destination: `opc.eth://01-00-5E-00-00-01`.
#[cfg(test)]
pub const DEFAULT_MAC: [u8; 6] = [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01];

/// What a socket does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends messages (network messages of its writer group).
    Publisher,
    /// Receives messages, with their receive stamps.
    Subscriber,
}

/// Where messages go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// UDP to a multicast group or a unicast address, through `interface`.
    Udp {
        /// The URL's address and port: the group, or the subscriber's own
        /// unicast address.
        address: SocketAddrV4,
        /// The interface messages go out of and come in on.
        interface: String,
    },
    /// Raw Ethernet frames on `interface`.
    Ethernet {
        /// The interface the frames go out of and come in on.
        interface: String,
        /// The URL's destination address; a subscriber joins it when it is
        /// a multicast address.
        destination: [u8; 6],
    },
}

impl Transport {
    /// The interface of either transport.
    pub fn interface(&self) -> &str {
        match self {
            Transport::Udp { interface, .. } | Transport::Ethernet { interface, .. } => interface,
        }
    }
}

/// How a socket is set up beyond its transport and role; all off by
/// default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// A publisher asks for software transmit stamps ([`PubSubSocket::tx_stamp`]).
    pub tx_stamps: bool,
    /// Turn the NIC's hardware stamps on where it offers them.
    pub hardware_stamps: bool,
    /// UDP publisher to a group: deliver its messages to subscribers in its
    /// own namespace too (both roles in one namespace).
    pub multicast_loop: bool,
    /// Ethernet subscriber: take every frame on the wire, also those to
    /// other hosts (promiscuous mode, released when the socket closes).
    pub promiscuous: bool,
}

/// How long [`PubSubSocket::recv`] waits for a message (the round trip's
/// loops poll; the other waits serve tools and tests).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until a message comes (or a signal interrupts the wait).
    Block,
    /// At most this long.
    Timeout(Duration),
    /// Not at all: what is queued, or nothing.
    Poll,
}

/// One message [`PubSubSocket::recv`] put in the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Its length in the buffer (a message longer than the buffer is cut).
    pub len: usize,
    /// The kernel's software receive stamp, `CLOCK_REALTIME` nanoseconds.
    pub rx_realtime_ns: Option<u64>,
    /// The NIC's hardware receive stamp, nanoseconds of its PTP clock, when
    /// hardware stamps are [`Hardware::Enabled`].
    pub rx_hardware_ns: Option<u64>,
}

/// Whether the NIC's hardware stamps are there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hardware {
    /// Not offered by the interface, and why.
    Absent {
        /// Why not, for a result ("veth offers no hardware time stamps (jl7p)").
        reason: String,
    },
    /// Offered, but not asked for.
    Available {
        /// The NIC's PTP clock, `/dev/ptpN`.
        phc_index: u32,
    },
    /// Turned on for this socket.
    Enabled {
        /// The NIC's PTP clock, `/dev/ptpN`, the clock of the stamps.
        phc_index: u32,
    },
}

/// Which stamps a socket's messages carry, so a result can say what it had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampSupport {
    /// Software receive stamps (every subscriber).
    pub rx_software: bool,
    /// Software transmit stamps: asked for, and the driver gives them.
    pub tx_software: bool,
    /// The NIC's hardware stamps.
    pub hardware: Hardware,
    /// The interface's driver (`veth`, `igb`, …), when it says.
    pub driver: Option<String>,
}

impl fmt::Display for StampSupport {
    /// `receive: software, transmit: none, hardware: absent (veth offers no
    /// hardware time stamps (jl7p))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes = |b: bool| if b { "software" } else { "none" };
        write!(
            f,
            "receive: {}, transmit: {}, hardware: ",
            yes(self.rx_software),
            yes(self.tx_software)
        )?;
        match &self.hardware {
            Hardware::Absent { reason } => write!(f, "absent ({reason})"),
            Hardware::Available { phc_index } => write!(f, "available (/dev/ptp{phc_index}), off"),
            Hardware::Enabled { phc_index } => write!(f, "on (/dev/ptp{phc_index})"),
        }
    }
}

/// The socket of one transport.
#[derive(Debug)]
enum Io {
    /// A UDP socket, connected to the address when publishing.
    Udp(Socket),
    /// A packet socket on one interface.
    Ethernet {
        fd: OwnedFd,
        if_index: u32,
        /// Put back the VLAN tag the kernel took out (subscribers).
        reinsert_vlan: bool,
    },
}

/// A publisher or subscriber socket of one transport; see the module doc.
/// Shareable between threads (`&self` everywhere), though one receiving
/// thread is the intended use.
#[derive(Debug)]
pub struct PubSubSocket {
    io: Io,
    interface: String,
    stamps: StampSupport,
    /// Transmit stamps were asked for: [`PubSubSocket::tx_stamp`] reads them.
    tx_stamps: bool,
    /// The receive timeout set on the socket, ns; 0 for none (block).
    timeout_ns: AtomicU64,
    /// The interface's hardware stamping set-up before this socket turned it
    /// on, put back on drop.
    hw_restore: Option<HwConfig>,
}

impl PubSubSocket {
    /// Opens a `role` socket of `transport` inside network namespace
    /// `netns` (by name, `/run/netns/NAME`), or in the caller's own
    /// namespace when `None`.
    ///
    /// Bad input (an interface that does not exist, one without an IPv4
    /// address for UDP, no `CAP_NET_RAW` for Ethernet) is refused with a
    /// message naming what to fix.
    pub fn open(
        netns: Option<&str>,
        role: Role,
        transport: &Transport,
        options: Options,
    ) -> Result<PubSubSocket> {
        in_namespace(netns, || open_here(netns, role, transport, options))
    }

    /// Sends one message: a UDP payload, or a whole Ethernet frame. A signal
    /// does not interrupt it. Allocates nothing.
    pub fn send(&self, bytes: &[u8]) -> io::Result<()> {
        loop {
            let sent = match &self.io {
                Io::Udp(socket) => socket.send(bytes),
                Io::Ethernet { fd, if_index, .. } => {
                    packet::send_frame(fd.as_fd(), *if_index, 0, bytes)
                }
            };
            match sent {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The software transmit stamp (`CLOCK_REALTIME` ns) of the oldest send
    /// whose stamp is still queued; `Ok(None)` when none is, or when
    /// transmit stamps were not asked for. Read one per send. Allocates
    /// nothing.
    pub fn tx_stamp(&self) -> io::Result<Option<u64>> {
        Ok(self.tx_stamp_full()?.and_then(|s| s.software_ns))
    }

    /// The oldest queued transmit stamp with its hardware time and send
    /// number; `Ok(None)` as for [`PubSubSocket::tx_stamp`].
    pub fn tx_stamp_full(&self) -> io::Result<Option<TxStamp>> {
        if !self.tx_stamps && !matches!(self.stamps.hardware, Hardware::Enabled { .. }) {
            return Ok(None);
        }
        tx_timestamp::read_tx_timestamp(self.fd())
    }

    /// Receives one message into `buf`, waiting as `wait` says; `Ok(None)`
    /// when nothing came in time (with [`Wait::Poll`]: nothing was queued)
    /// or a signal interrupted the wait, so a loop can check its stop flag.
    /// Allocates nothing.
    pub fn recv(&self, buf: &mut [u8], wait: Wait) -> io::Result<Option<Received>> {
        let nonblocking = match wait {
            Wait::Poll => true,
            Wait::Block => {
                self.set_timeout(None)?;
                false
            }
            Wait::Timeout(d) => {
                self.set_timeout(Some(d))?;
                false
            }
        };
        let got = match packet::recv_stamped(self.fd(), buf, nonblocking) {
            Ok(got) => got,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        let len = match (&self.io, got.vlan) {
            (
                Io::Ethernet {
                    reinsert_vlan: true,
                    ..
                },
                Some(tag),
            ) => reinsert_tag(buf, got.len, tag.tpid, tag.tci),
            _ => got.len,
        };
        Ok(Some(Received {
            len,
            rx_realtime_ns: got.realtime_ns,
            rx_hardware_ns: got.hardware_ns,
        }))
    }

    /// Throws away every message queued now and returns how many there were
    /// (before a measurement starts, or after a stall).
    pub fn drain(&self, buf: &mut [u8]) -> io::Result<u64> {
        let mut n = 0;
        while self.recv(buf, Wait::Poll)?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    /// Which stamps this socket's messages carry.
    pub fn stamps(&self) -> &StampSupport {
        &self.stamps
    }

    /// The interface the socket sends and receives on.
    #[allow(dead_code)]
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The socket's descriptor.
    fn fd(&self) -> BorrowedFd<'_> {
        match &self.io {
            Io::Udp(socket) => socket.as_fd(),
            Io::Ethernet { fd, .. } => fd.as_fd(),
        }
    }

    /// Sets the socket's receive timeout when it differs from the one set.
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        let want = timeout.map_or(0, |d| d.as_nanos().clamp(1, u64::MAX as u128) as u64);
        if self.timeout_ns.load(Ordering::Relaxed) != want {
            packet::set_receive_timeout(self.fd(), timeout)?;
            self.timeout_ns.store(want, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Drop for PubSubSocket {
    /// Puts the interface's hardware stamping set-up back, when this socket
    /// changed it.
    fn drop(&mut self) {
        if let Some(old) = self.hw_restore.take() {
            let _ = tx_timestamp::set_hw_timestamping(self.fd(), &self.interface, old);
        }
    }
}

/// Runs `make` inside network namespace `netns` on a short thread that
/// enters it and ends (no thread of jitterlab stays in it), or here when
/// `None`.
pub(crate) fn in_namespace<T: Send>(
    netns: Option<&str>,
    make: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    let Some(name) = netns else {
        return make();
    };
    let path = format!("/run/netns/{name}");
    std::thread::scope(|s| {
        s.spawn(|| -> Result<T> {
            let ns = match File::open(&path) {
                Ok(ns) => ns,
                Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
                    "network namespace {name} does not exist ({path} is missing); `ip netns list` lists the ones there are"
                ),
                Err(e) => return Err(e).with_context(|| format!("opening {path}")),
            };
            netns::enter_net_namespace(ns.as_fd()).map_err(|e| {
                if e.raw_os_error() == Some(libc::EPERM) {
                    bad(format!(
                        "entering network namespace {name} needs root (CAP_SYS_ADMIN); run as root"
                    ))
                } else {
                    anyhow::Error::new(e)
                        .context(format!("entering network namespace {name}"))
                }
            })?;
            make()
        })
        .join()
        .unwrap_or_else(|_| bail!("the thread making a socket in network namespace {name} panicked"))
    })
}

/// " in network namespace NS", or nothing for the caller's own.
fn where_(netns: Option<&str>) -> String {
    netns.map_or(String::new(), |ns| format!(" in network namespace {ns}"))
}

/// The command that lists the interfaces of `netns`.
fn ip_link(netns: Option<&str>) -> String {
    netns.map_or("ip link".to_string(), |ns| format!("ip -n {ns} link"))
}

/// The error of looking up interface `iface`: a missing or impossible name
/// is bad input naming it; anything else says what was being done.
fn interface_error(e: io::Error, iface: &str, netns: Option<&str>) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::ENODEV) => bad(format!(
            "network interface {iface} does not exist{}; `{}` lists the interfaces there are",
            where_(netns),
            ip_link(netns)
        )),
        Some(libc::EINVAL) => bad(format!(
            "{iface:?} cannot be a network interface name: it has 1 to 15 characters and no NUL"
        )),
        _ => anyhow::Error::new(e).context(format!(
            "looking up network interface {iface}{}",
            where_(netns)
        )),
    }
}

/// The refusal when a packet socket is not allowed.
const NEEDS_RAW: &str = "raw Ethernet (opc.eth) needs root or CAP_NET_RAW to open a packet socket; run as root, or use the UDP transport (opc.udp)";

/// The error of opening a packet socket.
fn packet_error(e: io::Error, iface: &str, netns: Option<&str>) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => bad(NEEDS_RAW),
        _ => anyhow::Error::new(e).context(format!(
            "opening a packet socket on {iface}{}",
            where_(netns)
        )),
    }
}

/// [`PubSubSocket::open`] in the namespace the calling thread is in.
fn open_here(
    netns: Option<&str>,
    role: Role,
    transport: &Transport,
    options: Options,
) -> Result<PubSubSocket> {
    let iface = transport.interface();
    let io = match transport {
        Transport::Udp { address, .. } => {
            Io::Udp(udp_socket(netns, role, *address, iface, options)?)
        }
        Transport::Ethernet { destination, .. } => {
            let if_index = packet::if_index(iface).map_err(|e| interface_error(e, iface, netns))?;
            let protocol = match role {
                Role::Publisher => 0,
                Role::Subscriber => packet::ETH_P_ALL,
            };
            let fd = packet::packet_socket(protocol, if_index)
                .map_err(|e| packet_error(e, iface, netns))?;
            if role == Role::Subscriber {
                subscribe_frames(fd.as_fd(), if_index, *destination, options).with_context(
                    || format!("setting up the subscriber on {iface}{}", where_(netns)),
                )?;
            }
            Io::Ethernet {
                fd,
                if_index,
                reinsert_vlan: role == Role::Subscriber,
            }
        }
    };
    let tx_stamps = role == Role::Publisher && options.tx_stamps;
    let fd = match &io {
        Io::Udp(socket) => socket.as_fd(),
        Io::Ethernet { fd, .. } => fd.as_fd(),
    };
    let (stamps, hw_restore) = set_up_stamps(fd, iface, role, tx_stamps, options)
        .with_context(|| format!("setting up time stamps on {iface}{}", where_(netns)))?;
    Ok(PubSubSocket {
        io,
        interface: iface.to_string(),
        stamps,
        tx_stamps,
        timeout_ns: AtomicU64::new(0),
        hw_restore,
    })
}

/// A UDP socket of `role` for `address` through interface `iface`.
fn udp_socket(
    netns: Option<&str>,
    role: Role,
    address: SocketAddrV4,
    iface: &str,
    options: Options,
) -> Result<Socket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .context("opening a UDP socket")?;
    let local = packet::interface_ipv4(socket.as_fd(), iface).map_err(|e| {
        if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
            bad(format!(
                "network interface {iface}{} has no IPv4 address for UDP; give it one (ip addr add ADDR/LEN dev {iface}) or use the Ethernet transport (opc.eth)",
                where_(netns)
            ))
        } else {
            interface_error(e, iface, netns)
        }
    })?;
    let multicast = address.ip().is_multicast();
    let at = where_(netns);
    match role {
        Role::Publisher => {
            if multicast {
                socket
                    .set_multicast_if_v4(&local)
                    .with_context(|| format!("sending to {address} out of {iface}{at}"))?;
                socket
                    .set_multicast_ttl_v4(1)
                    .context("setting the multicast TTL to 1")?;
                socket
                    .set_multicast_loop_v4(options.multicast_loop)
                    .context("setting IP_MULTICAST_LOOP")?;
            }
            let from = SocketAddrV4::new(local, 0);
            socket
                .bind(&from.into())
                .with_context(|| format!("binding {from}{at}"))?;
            socket
                .connect(&address.into())
                .with_context(|| format!("connecting to {address}{at}"))?;
        }
        Role::Subscriber => {
            socket
                .set_reuse_address(true)
                .context("setting SO_REUSEADDR")?;
            socket.bind(&address.into()).with_context(|| {
                format!("binding {address}{at} (a unicast address must be one of this host's)")
            })?;
            if multicast {
                socket
                    .join_multicast_v4(address.ip(), &local)
                    .with_context(|| format!("joining {} on {iface}{at}", address.ip()))?;
            }
            rx_timestamp::enable_rx_timestamps(socket.as_fd())
                .context("asking for receive stamps (SO_TIMESTAMPNS)")?;
        }
    }
    Ok(socket)
}

/// Sets up an Ethernet subscriber's packet socket: the destination's
/// multicast address (and promiscuous mode when asked), only incoming
/// frames, VLAN tags beside the frame, receive stamps.
fn subscribe_frames(
    fd: BorrowedFd<'_>,
    if_index: u32,
    destination: [u8; 6],
    options: Options,
) -> Result<()> {
    if destination[0] & 1 == 1 {
        packet::add_membership(fd, if_index, Membership::Multicast(destination))
            .context("joining the destination's multicast address")?;
    }
    if options.promiscuous {
        packet::add_membership(fd, if_index, Membership::Promiscuous)
            .context("turning promiscuous mode on")?;
    }
    packet::ignore_outgoing(fd)
        .context("ignoring outgoing frames (PACKET_IGNORE_OUTGOING, Linux 4.20)")?;
    packet::enable_vlan_auxdata(fd).context("asking for VLAN tags (PACKET_AUXDATA)")?;
    rx_timestamp::enable_rx_timestamps(fd).context("asking for receive stamps (SO_TIMESTAMPNS)")?;
    Ok(())
}

/// Asks for the stamps `options` wants on `fd` (interface `iface`) and
/// returns which ones the interface gives, with the hardware stamping set-up
/// to put back on drop when this turned it on.
fn set_up_stamps(
    fd: BorrowedFd<'_>,
    iface: &str,
    role: Role,
    tx_stamps: bool,
    options: Options,
) -> Result<(StampSupport, Option<HwConfig>)> {
    let mut hw_restore = None;
    let driver = tx_timestamp::driver_name(fd, iface).ok();
    // "veth (jl7p)", or the interface alone when its driver does not say.
    let who = match &driver {
        Some(d) => format!("{d} ({iface})"),
        None => iface.to_string(),
    };
    let info = tx_timestamp::ts_info(fd, iface);
    let mut flags = 0;
    if tx_stamps {
        flags |= tx_timestamp::SOFTWARE_TX;
    }
    let hardware = match &info {
        Err(e) => Hardware::Absent {
            reason: format!("{who} does not say which time stamps it offers: {e}"),
        },
        Ok(i) => match i.phc_index {
            Some(phc_index) if i.hardware() && options.hardware_stamps => {
                let old = tx_timestamp::hw_timestamping(fd, iface).unwrap_or(HwConfig {
                    flags: 0,
                    tx_type: tx_timestamp::HW_TX_OFF,
                    rx_filter: tx_timestamp::HW_FILTER_NONE,
                });
                let on = HwConfig {
                    flags: 0,
                    tx_type: tx_timestamp::HW_TX_ON,
                    rx_filter: tx_timestamp::HW_FILTER_ALL,
                };
                tx_timestamp::set_hw_timestamping(fd, iface, on).with_context(|| {
                    format!("turning hardware time stamps on ({who} offers them); run as root, or go without --hardware-stamps")
                })?;
                hw_restore = Some(old);
                flags |= tx_timestamp::HARDWARE;
                Hardware::Enabled { phc_index }
            }
            Some(phc_index) if i.hardware() => Hardware::Available { phc_index },
            _ => Hardware::Absent {
                reason: format!("{who} offers no hardware time stamps"),
            },
        },
    };
    if flags != 0 {
        tx_timestamp::set_timestamping(fd, flags)
            .context("asking for time stamps (SO_TIMESTAMPING)")?;
    }
    let stamps = StampSupport {
        rx_software: role == Role::Subscriber,
        tx_software: tx_stamps && info.as_ref().is_ok_and(|i| i.tx_software()),
        hardware,
        driver,
    };
    Ok((stamps, hw_restore))
}

/// Puts an 802.1Q tag (`tpid`, `tci`) back after the two addresses of the
/// untagged frame in `buf[..len]`, moving the rest 4 bytes on (cut at the
/// buffer's end), and returns the new length. A frame too short to have
/// addresses, or a buffer with no room for them and a tag, is left alone.
fn reinsert_tag(buf: &mut [u8], len: usize, tpid: u16, tci: u16) -> usize {
    if len < 12 || buf.len() < 16 {
        return len;
    }
    let new_len = (len + 4).min(buf.len());
    buf.copy_within(12..new_len - 4, 16);
    buf[12..14].copy_from_slice(&tpid.to_be_bytes());
    buf[14..16].copy_from_slice(&tci.to_be_bytes());
    new_len
}

#[cfg(test)]
#[path = "pubsub/tests.rs"]
mod tests;
