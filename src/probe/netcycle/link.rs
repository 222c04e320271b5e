//! One POWERLINK node's raw Ethernet link: a packet socket bound to
//! EtherType 0x88AB on one interface, with the kernel's receive stamps,
//! and for the managing node a second, send-only socket for the SoC whose
//! every send is stamped by the driver.
//!
//! **Why two sockets on the MN.** The SoC's transmit stamp is the period
//! "as sent"; a transmit stamp is fetched from the socket's error queue
//! after the send, and a socket asked for stamps stamps *every* send. The
//! PReq, SoA and ASnd frames go out of the receiving socket, which asks for
//! none, so its error queue never fills and the SoC socket's queue holds
//! exactly one stamp per SoC, matched by its send number (`OPT_ID`).
//!
//! **Receiving.** The socket sees only POWERLINK frames of its interface,
//! not the ones this host sends (`PACKET_IGNORE_OUTGOING`), joins the four
//! POWERLINK multicast addresses (SoC, PRes, SoA, ASnd: a real NIC filters
//! multicast; a veth delivers everything anyway) and, for a CN emulator
//! on a real segment, turns promiscuous mode on (many CNs behind one MAC:
//! an MN configured with other MACs for them still reaches us). The kernel
//! drops the memberships when the socket closes. [`Link::wait`] blocks
//! with a nanosecond timeout (`ppoll`), [`Link::recv`] never blocks.
//!
//! **The receive ring, and what a PRes costs.** Unless the NIC's hardware
//! stamps are on, the receiving socket has a `PACKET_RX_RING`
//! (`jitterlab_sys::packet_ring`): a frame is taken from shared memory, so
//! taking a PRes, and finding the queue empty at a cycle's start, costs no
//! system call, and [`Link::wait`] returns at once, without `ppoll`, when
//! a frame is already there. (With hardware stamps a slot could hold only
//! one of the two stamps; such a link receives with `recvmsg`, both
//! stamps in its control data.) Why the wait stays a blocking one: on the
//! 2-vCPU VM of BENCHMARKS.md ("The managing node's load"), profiled with
//! `perf record -C 1 -g` at 1 ms × 10 CNs, the managing node's time went
//! 45 % to the inter-processor interrupt each send raises to wake the
//! emulated CNs' CPU (a VM exit: receive steering puts their work on their
//! own CPU), 20 % to the rest of the send path and 21 % to `ppoll`; a PRes came
//! about 50 µs after its PReq (the busy-poll run's completion ÷ CNs) while
//! a blocking wait cost about 9 µs of CPU, so spinning, inside any window,
//! costs more than sleeping here. Against a real CN answering within a
//! few µs the trade-off turns, which is what `--wait busy-poll` is for:
//! with the ring its spin reads memory, not the kernel.
//!
//! **Sending past the queueing discipline.** On a veth end (the emulated
//! pair, whose traffic the CN side's own capture records) both sockets
//! send with `PACKET_QDISC_BYPASS`, as a real-time stack's raw driver does:
//! less work per send. On a real interface sends keep the qdisc, so that a
//! sniffer on the host (`tcpdump -i IFACE`) still sees them.
//!
//! **Stamps.** Software receive stamps (`SO_TIMESTAMPNS`, CLOCK_REALTIME)
//! always; software transmit stamps of the SoC where the driver gives them
//! (veth does); hardware stamps only on a NIC that offers them with a PTP
//! clock, turned on for the run and put back when the link is dropped
//! (they are on the NIC's clock: only differences of them are used).
//!
//! Sending, receiving and reading a stamp allocate nothing (design rule 2).
//!
//! The design rules cited here are in `docs/design.md`.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result};
use jitterlab_core::powerlink::{ETHERTYPE_POWERLINK, MAC_ASND, MAC_PRES, MAC_SOA, MAC_SOC};
use jitterlab_sys::packet::{self, Membership};
use jitterlab_sys::packet_ring::{self, RxRing};
use jitterlab_sys::tx_timestamp::{self, HwConfig};
use jitterlab_sys::{poll, rx_timestamp};

use crate::error::bad;
use crate::net::pubsub::in_namespace;

/// How a link is set up beyond its interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkOptions {
    /// Open the SoC socket with transmit stamps (the managing node).
    pub soc_socket: bool,
    /// Promiscuous mode (a CN emulator on a real segment).
    pub promiscuous: bool,
    /// Turn the NIC's hardware stamps on where it offers them.
    pub hardware: bool,
}

/// One frame [`Link::recv`] put in the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rx {
    /// Its length.
    pub len: usize,
    /// The kernel's software receive stamp, CLOCK_REALTIME ns.
    pub soft_ns: Option<u64>,
    /// The NIC's hardware receive stamp, ns of its PTP clock.
    pub hw_ns: Option<u64>,
}

/// The SoC's transmit stamps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocStamp {
    /// The driver's software stamp, CLOCK_REALTIME ns.
    pub soft_ns: Option<u64>,
    /// The NIC's hardware stamp, ns of its PTP clock.
    pub hw_ns: Option<u64>,
}

/// A POWERLINK node's link; see the module doc.
#[derive(Debug)]
pub struct Link {
    fd: OwnedFd,
    /// The receive ring, without hardware stamps (see the module doc).
    ring: Option<RxRing>,
    soc_fd: Option<OwnedFd>,
    if_index: u32,
    ifname: String,
    mac: [u8; 6],
    /// SoCs sent so far: the send number of the next SoC's stamp.
    soc_sends: u32,
    /// The driver gives software transmit stamps.
    tx_software: bool,
    /// Hardware stamps are on.
    hardware: bool,
    /// What stamps the link has, for the result.
    stamps: String,
    /// The interface's hardware stamping set-up to put back on drop.
    hw_restore: Option<HwConfig>,
}

impl Link {
    /// Opens the link on `ifname` (whose MAC address is `mac`) inside
    /// network namespace `netns`, or in this one when `None`.
    pub fn open(
        netns: Option<&str>,
        ifname: &str,
        mac: [u8; 6],
        options: LinkOptions,
    ) -> Result<Link> {
        let where_ = netns.map_or(String::new(), |ns| format!(" in namespace {ns}"));
        in_namespace(netns, || open_here(ifname, mac, options))
            .with_context(|| format!("opening the POWERLINK link on {ifname}{where_}"))
    }

    /// This node's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// The interface's name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Which stamps the link has: `receive: software; SoC transmit:
    /// software; hardware: absent (veth offers no hardware time stamps)`.
    pub fn stamps(&self) -> &str {
        &self.stamps
    }

    /// True when hardware stamps are on.
    pub fn hardware(&self) -> bool {
        self.hardware
    }

    /// True when frames are received through the ring (see the module
    /// doc), false when through `recvmsg`.
    #[cfg(test)]
    pub fn has_ring(&self) -> bool {
        self.ring.is_some()
    }

    /// Sends one whole frame (PReq, PRes, SoA, ASnd) out of the receiving
    /// socket. Allocates nothing.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        send_on(self.fd.as_fd(), self.if_index, frame)
    }

    /// Sends a SoC out of the stamped socket (the receiving one when the
    /// link has none). Allocates nothing.
    pub fn send_soc(&mut self, frame: &[u8]) -> io::Result<()> {
        match &self.soc_fd {
            Some(fd) => {
                send_on(fd.as_fd(), self.if_index, frame)?;
                self.soc_sends = self.soc_sends.wrapping_add(1);
                Ok(())
            }
            None => self.send(frame),
        }
    }

    /// The transmit stamps of the last SoC sent, when the driver gave
    /// them: older stamps still queued are read past. Allocates nothing.
    pub fn soc_stamp(&self) -> SocStamp {
        let Some(fd) = &self.soc_fd else {
            return SocStamp::default();
        };
        if !self.tx_software && !self.hardware {
            return SocStamp::default();
        }
        let want = self.soc_sends.wrapping_sub(1);
        // A handful of reads at most: one stamp per SoC, read every cycle.
        for _ in 0..8 {
            match tx_timestamp::read_tx_timestamp(fd.as_fd()) {
                Ok(Some(s)) if s.id.is_none_or(|id| id == want) => {
                    return SocStamp {
                        soft_ns: s.software_ns,
                        hw_ns: s.hardware_ns,
                    }
                }
                Ok(Some(_)) => continue,
                _ => break,
            }
        }
        SocStamp::default()
    }

    /// Waits until a frame is queued or `timeout_ns` passed (`None`: for
    /// ever); true when one is (see `jitterlab_sys::poll::wait_readable`).
    /// A frame already in the ring returns at once, without a system call.
    pub fn wait(&self, timeout_ns: Option<u64>) -> io::Result<bool> {
        if self.ring.as_ref().is_some_and(RxRing::ready) {
            return Ok(true);
        }
        poll::wait_readable(self.fd.as_fd(), timeout_ns)
    }

    /// True when a frame is queued, without waiting: one load from the
    /// ring, else a `ppoll` that only looks.
    pub fn ready(&self) -> bool {
        match &self.ring {
            Some(ring) => ring.ready(),
            None => poll::wait_readable(self.fd.as_fd(), Some(0)).unwrap_or(true),
        }
    }

    /// Takes one queued frame into `buf` with its stamps, without waiting;
    /// `Ok(None)` when none is queued. From the ring, no system call.
    /// Allocates nothing.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Rx>> {
        if let Some(ring) = &mut self.ring {
            return Ok(ring.take(buf).map(|f| Rx {
                len: f.len,
                soft_ns: f.realtime_ns,
                hw_ns: None,
            }));
        }
        match packet::recv_stamped(self.fd.as_fd(), buf, true) {
            Ok(s) => Ok(Some(Rx {
                len: s.len,
                soft_ns: s.realtime_ns,
                hw_ns: s.hardware_ns,
            })),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for Link {
    /// Puts the interface's hardware stamping set-up back, when this link
    /// changed it.
    fn drop(&mut self) {
        if let Some(old) = self.hw_restore.take() {
            let _ = tx_timestamp::set_hw_timestamping(self.fd.as_fd(), &self.ifname, old);
        }
    }
}

/// Sends `frame` out of `if_index` through `fd`, again after a signal.
fn send_on(fd: BorrowedFd<'_>, if_index: u32, frame: &[u8]) -> io::Result<()> {
    loop {
        match packet::send_frame(fd, if_index, ETHERTYPE_POWERLINK, frame) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The refusal when a packet socket is not allowed.
const NEEDS_RAW: &str =
    "POWERLINK frames need root or CAP_NET_RAW to open a packet socket; run as root";

/// A packet socket of `protocol` on `ifname`, in the calling thread's
/// namespace.
fn socket_on(ifname: &str, protocol: u16) -> Result<(OwnedFd, u32)> {
    let if_index = packet::if_index(ifname).map_err(|e| match e.raw_os_error() {
        Some(libc::ENODEV) => bad(format!(
            "--interface {ifname}: no such network interface; list them with `ip link`"
        )),
        _ => anyhow::Error::new(e).context(format!("looking up interface {ifname}")),
    })?;
    let fd = packet::packet_socket(protocol, if_index).map_err(|e| match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => bad(NEEDS_RAW),
        _ => anyhow::Error::new(e).context("opening a packet socket"),
    })?;
    Ok((fd, if_index))
}

/// [`Link::open`] in the namespace the calling thread is in.
fn open_here(ifname: &str, mac: [u8; 6], options: LinkOptions) -> Result<Link> {
    let (fd, if_index) = socket_on(ifname, ETHERTYPE_POWERLINK)?;
    for group in [MAC_SOC, MAC_PRES, MAC_SOA, MAC_ASND] {
        packet::add_membership(fd.as_fd(), if_index, Membership::Multicast(group))
            .context("joining the POWERLINK multicast addresses")?;
    }
    if options.promiscuous {
        packet::add_membership(fd.as_fd(), if_index, Membership::Promiscuous)
            .context("turning promiscuous mode on")?;
    }
    packet::ignore_outgoing(fd.as_fd())
        .context("ignoring outgoing frames (PACKET_IGNORE_OUTGOING, Linux 4.20)")?;
    rx_timestamp::enable_rx_timestamps(fd.as_fd())
        .context("asking for receive stamps (SO_TIMESTAMPNS)")?;
    let soc_fd = match options.soc_socket {
        true => Some(socket_on(ifname, 0)?.0),
        false => None,
    };
    let driver = tx_timestamp::driver_name(fd.as_fd(), ifname).ok();
    let who = match &driver {
        Some(d) => format!("{d} ({ifname})"),
        None => ifname.to_string(),
    };
    let info = tx_timestamp::ts_info(fd.as_fd(), ifname);
    let mut hw_restore = None;
    let hardware_line = match &info {
        Err(e) => format!("absent ({who} does not say which time stamps it offers: {e})"),
        Ok(i) if i.hardware() && options.hardware => {
            let old = tx_timestamp::hw_timestamping(fd.as_fd(), ifname).unwrap_or(HwConfig {
                flags: 0,
                tx_type: tx_timestamp::HW_TX_OFF,
                rx_filter: tx_timestamp::HW_FILTER_NONE,
            });
            let on = HwConfig {
                flags: 0,
                tx_type: tx_timestamp::HW_TX_ON,
                rx_filter: tx_timestamp::HW_FILTER_ALL,
            };
            tx_timestamp::set_hw_timestamping(fd.as_fd(), ifname, on)
                .with_context(|| format!("turning hardware time stamps on ({who} offers them)"))?;
            hw_restore = Some(old);
            format!("on (/dev/ptp{})", i.phc_index.unwrap_or(0))
        }
        Ok(i) if i.hardware() => "available, off".to_string(),
        Ok(_) => format!("absent ({who} offers no hardware time stamps)"),
    };
    let hardware = hw_restore.is_some();
    let ring = match hardware {
        true => None,
        false => {
            let ring = RxRing::new(fd.as_fd())
                .context("mapping a receive ring (PACKET_RX_RING, TPACKET_V2)")?;
            // Frames that came before the ring sit in the ordinary queue.
            let mut scrap = [0u8; 64];
            while packet::recv_stamped(fd.as_fd(), &mut scrap, true).is_ok() {}
            Some(ring)
        }
    };
    if driver.as_deref() == Some("veth") {
        for s in std::iter::once(&fd).chain(soc_fd.as_ref()) {
            packet_ring::bypass_qdisc(s.as_fd())
                .context("sending past the queueing discipline (PACKET_QDISC_BYPASS)")?;
        }
    }
    let tx_software = soc_fd.is_some() && info.as_ref().is_ok_and(|i| i.tx_software());
    if hardware {
        // Receive stamps only: this socket's sends (PReq, SoA, ASnd) must
        // queue no transmit stamp.
        let rx_only = libc::SOF_TIMESTAMPING_RX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
        tx_timestamp::set_timestamping(fd.as_fd(), rx_only)
            .context("asking for hardware receive stamps (SO_TIMESTAMPING)")?;
    }
    if let Some(s) = &soc_fd {
        let mut flags = 0;
        if tx_software {
            flags |= tx_timestamp::SOFTWARE_TX;
        }
        if hardware {
            flags |= tx_timestamp::HARDWARE;
        }
        if flags != 0 {
            tx_timestamp::set_timestamping(s.as_fd(), flags)
                .context("asking for the SoC's transmit stamps (SO_TIMESTAMPING)")?;
        }
    }
    let soc_line = match (&soc_fd, tx_software) {
        (None, _) => String::new(),
        (Some(_), true) => "; SoC transmit: software".into(),
        (Some(_), false) => format!("; SoC transmit: none ({who} gives no software transmit stamps: the clock read after the send)"),
    };
    Ok(Link {
        fd,
        ring,
        soc_fd,
        if_index,
        ifname: ifname.to_string(),
        mac,
        soc_sends: 0,
        tx_software,
        hardware,
        stamps: format!("receive: software{soc_line}; hardware: {hardware_line}"),
        hw_restore,
    })
}
