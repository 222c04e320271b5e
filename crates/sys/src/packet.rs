//! Raw Ethernet through packet sockets (`AF_PACKET`, `SOCK_RAW`), the
//! interface look-ups a transport needs, and the one receive call every
//! PubSub transport shares.
//!
//! **Packet sockets.** [`packet_socket`] opens a socket that sees whole
//! Ethernet frames, header included, on one interface: for one EtherType, for
//! every frame ([`ETH_P_ALL`]), or for none (protocol 0: a socket that only
//! sends). It is created with protocol 0 and only then bound to the interface
//! and protocol, so it never holds a frame of another interface. A frame is
//! sent as the caller built it ([`send_frame`]); the kernel adds nothing but
//! the frame check sequence (and, on a real NIC, the padding to 60 bytes).
//! [`add_membership`] joins a link-layer multicast address or turns on
//! promiscuous mode; the kernel drops both when the socket closes, so nothing
//! has to be undone by hand.
//!
//! **VLAN tags on receive.** The kernel takes an 802.1Q tag out of a received
//! frame before any packet socket sees it (`skb_vlan_untag`); with
//! [`enable_vlan_auxdata`] the tag comes back beside the frame
//! (`PACKET_AUXDATA`, [`Stamped::vlan`]) and the caller can put it back in
//! place. Only a socket for every frame sees it: for a socket of one
//! EtherType the kernel has dropped the tag before delivery.
//!
//! **One receive for all.** [`recv_stamped`] is `recvmsg(2)` with a control
//! buffer on the stack: the payload (a UDP datagram or a whole frame), the
//! kernel's software receive stamp (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`), a
//! hardware stamp when the NIC gives one (`SCM_TIMESTAMPING`), and the VLAN
//! tag. It allocates nothing, so a real-time loop can call it (design rule 2);
//! [`recv_with_control`] is the same call for the transmit stamps of the
//! error queue.
//!
//! The design rules cited here are in `docs/design.md`.

use crate::minus_one;
use crate::rx_timestamp::ns_from_timespec;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// The protocol of a packet socket that receives every frame, whatever its
/// EtherType or length field.
pub const ETH_P_ALL: u16 = libc::ETH_P_ALL as u16;

/// Control-message room of [`recv_stamped`]: a `timespec`, three more for
/// `SCM_TIMESTAMPING`, and `tpacket_auxdata`, each behind its header, with
/// margin (8-byte aligned, as `cmsghdr` requires).
const CONTROL_WORDS: usize = 32;

/// A kernel `ifreq` carrying `name` (NUL-terminated), everything else zero;
/// `EINVAL` for an empty name, one with a NUL byte, or one longer than the
/// kernel's 15 characters.
pub(crate) fn ifreq_named(name: &str) -> io::Result<libc::ifreq> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: ifreq is a plain C struct (a name array and a union of plain
    // integers, addresses and a pointer) for which all-zeroes is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(req)
}

/// The index of network interface `name` in the calling thread's network
/// namespace (`if_nametoindex(3)`): `ENODEV` when there is none of that
/// name, `EINVAL` when the name cannot be one (empty, a NUL byte, longer
/// than 15 characters).
pub fn if_index(name: &str) -> io::Result<u32> {
    let req = ifreq_named(name)?;
    // SAFETY: `ifr_name` is NUL-terminated (ifreq_named leaves at least the
    // last byte zero) and lives for the whole call.
    let index = unsafe { libc::if_nametoindex(req.ifr_name.as_ptr()) };
    if index == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(index)
    }
}

/// The IPv4 address of interface `name` (`ioctl(SIOCGIFADDR)`), asked
/// through `socket`, whose network namespace is the one looked in:
/// `ENODEV` when there is no such interface, `EADDRNOTAVAIL` when it has no
/// IPv4 address.
pub fn interface_ipv4(socket: BorrowedFd<'_>, name: &str) -> io::Result<Ipv4Addr> {
    let mut req = ifreq_named(name)?;
    // SAFETY: `req` is a valid ifreq, writable for the whole call, as
    // SIOCGIFADDR expects; the descriptor is borrowed, so open.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFADDR as _, &mut req) };
    minus_one(rc)?;
    // SAFETY: after a successful SIOCGIFADDR the union holds `ifru_addr`, an
    // AF_INET sockaddr, which has the size and layout of a sockaddr_in; both
    // are plain data, read unaligned.
    let addr: libc::sockaddr_in = unsafe {
        std::ptr::read_unaligned((&req.ifr_ifru.ifru_addr as *const libc::sockaddr).cast())
    };
    Ok(Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)))
}

/// A link-layer address of the `AF_PACKET` family.
fn link_address(protocol: u16, if_index: u32, destination: Option<&[u8]>) -> libc::sockaddr_ll {
    // SAFETY: sockaddr_ll is a plain C struct for which all-zeroes is valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = protocol.to_be();
    addr.sll_ifindex = if_index as libc::c_int;
    if let Some(mac) = destination {
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(mac);
    }
    addr
}

/// Opens a raw packet socket (`AF_PACKET`, `SOCK_RAW`, close-on-exec) bound
/// to interface `if_index` for frames of EtherType `protocol` ([`ETH_P_ALL`]
/// for every frame, 0 for none: a socket that only sends).
///
/// Needs `CAP_NET_RAW` (`EPERM` without it); `ENODEV` when the index names
/// no interface of the calling thread's network namespace.
pub fn packet_socket(protocol: u16, if_index: u32) -> io::Result<OwnedFd> {
    // Protocol 0 here: nothing is queued before the bind below narrows the
    // socket to one interface.
    // SAFETY: plain integer arguments.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    minus_one(fd)?;
    // SAFETY: `fd` is a new descriptor that nothing else owns; the OwnedFd
    // closes it, also on the error path below.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let addr = link_address(protocol, if_index, None);
    // SAFETY: `addr` is a valid sockaddr_ll for the whole call and its size
    // is passed; `fd` is open (owned above).
    let rc = unsafe {
        libc::bind(
            fd,
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    minus_one(rc)?;
    Ok(socket)
}

/// Sends one whole Ethernet `frame` (destination, source, type or length,
/// payload) out of interface `if_index` (`sendto(2)` with a `sockaddr_ll`),
/// and returns the bytes sent. `protocol` is the frame's EtherType as the
/// sending stack sees it; 0 lets the kernel read it from the frame.
/// Allocates nothing.
pub fn send_frame(
    socket: BorrowedFd<'_>,
    if_index: u32,
    protocol: u16,
    frame: &[u8],
) -> io::Result<usize> {
    let addr = link_address(protocol, if_index, frame.get(..6));
    // SAFETY: `frame` is readable for its length and `addr` is a valid
    // sockaddr_ll of the size passed, both for the whole call; the
    // descriptor is borrowed, so open.
    let n = unsafe {
        libc::sendto(
            socket.as_raw_fd(),
            frame.as_ptr().cast(),
            frame.len(),
            0,
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// What [`add_membership`] makes an interface accept for a packet socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    /// Frames to this link-layer multicast address (`PACKET_MR_MULTICAST`).
    Multicast([u8; 6]),
    /// Every frame on the wire (`PACKET_MR_PROMISC`).
    Promiscuous,
}

/// Makes interface `if_index` accept what `membership` names for as long as
/// `socket` is open (`setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP)`); the
/// kernel undoes it when the socket closes.
pub fn add_membership(
    socket: BorrowedFd<'_>,
    if_index: u32,
    membership: Membership,
) -> io::Result<()> {
    // SAFETY: packet_mreq is a plain C struct for which all-zeroes is valid.
    let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mreq.mr_ifindex = if_index as libc::c_int;
    match membership {
        Membership::Multicast(mac) => {
            mreq.mr_type = libc::PACKET_MR_MULTICAST as libc::c_ushort;
            mreq.mr_alen = 6;
            mreq.mr_address[..6].copy_from_slice(&mac);
        }
        Membership::Promiscuous => mreq.mr_type = libc::PACKET_MR_PROMISC as libc::c_ushort,
    }
    // SAFETY: `mreq` is a valid packet_mreq for the whole call and its size
    // is passed; the descriptor is borrowed, so open.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            (&mreq as *const libc::packet_mreq).cast(),
            std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    };
    minus_one(rc).map(drop)
}

/// Sets an integer socket option to `value` (`setsockopt(2)`).
pub(crate) fn set_int_option(
    socket: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` is a valid c_int for the whole call and its size is
    // passed; the descriptor is borrowed, so open.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    minus_one(rc).map(drop)
}

/// Asks for each received frame's VLAN tag beside it (`PACKET_AUXDATA`):
/// [`recv_stamped`] returns it in [`Stamped::vlan`].
pub fn enable_vlan_auxdata(socket: BorrowedFd<'_>) -> io::Result<()> {
    set_int_option(socket, libc::SOL_PACKET, libc::PACKET_AUXDATA, 1)
}

/// Stops a packet socket for every frame from seeing the frames this host
/// sends (`PACKET_IGNORE_OUTGOING`, Linux 4.20): a subscriber on the
/// interface it also publishes on receives only what comes in.
pub fn ignore_outgoing(socket: BorrowedFd<'_>) -> io::Result<()> {
    set_int_option(socket, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)
}

/// Sets how long a blocking receive on `socket` waits before it fails with
/// `WouldBlock` (`SO_RCVTIMEO`); `None` waits for ever. A zero or
/// sub-microsecond duration is rounded up to 1 µs (the kernel reads 0 as
/// "for ever").
pub fn set_receive_timeout(socket: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<()> {
    let tv = timeval_of(timeout);
    // SAFETY: `tv` is a valid timeval for the whole call and its size is
    // passed; the descriptor is borrowed, so open.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    minus_one(rc).map(drop)
}

/// The `SO_RCVTIMEO` value of a timeout: zero for none, else at least 1 µs,
/// rounded up to whole microseconds.
fn timeval_of(timeout: Option<Duration>) -> libc::timeval {
    let micros = timeout.map_or(0, |d| d.as_nanos().div_ceil(1000).max(1));
    libc::timeval {
        tv_sec: (micros / 1_000_000).min(libc::time_t::MAX as u128) as libc::time_t,
        tv_usec: (micros % 1_000_000) as libc::suseconds_t,
    }
}

/// `recvmsg(2)` into `buf` with `control` (on the caller's stack) for the
/// control messages; calls `each(level, type, data)` for every control
/// message the kernel wrote, then returns the payload's length, at most
/// `buf.len()` (a longer datagram or frame is cut). Allocates nothing.
pub(crate) fn recv_with_control(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
    flags: libc::c_int,
    control: &mut [u64],
    mut each: impl FnMut(libc::c_int, libc::c_int, &[u8]),
) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is a plain C struct for which all-zeroes is valid (null
    // pointers, zero lengths); the fields that matter are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(control) as _;
    // SAFETY: `msg` points at `iov` (which points at `buf`) and at
    // `control`; all three outlive the call and are writable for the
    // lengths given. The descriptor is borrowed, so open.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // The kernel sets msg_controllen to what it wrote, never more than given.
    let end = control.as_ptr() as usize
        + (msg.msg_controllen as usize).min(std::mem::size_of_val(control));
    // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR/NXTHDR only follow
    // lengths inside `msg_control`/`msg_controllen` and return null at the
    // end.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and points at a header inside `control`.
        let hdr = unsafe { &*cmsg };
        // SAFETY: CMSG_DATA and CMSG_LEN are pointer and length arithmetic
        // on a header inside `control`.
        let (data, header_len) = unsafe { (libc::CMSG_DATA(cmsg), libc::CMSG_LEN(0) as usize) };
        let len = (hdr.cmsg_len as usize)
            .saturating_sub(header_len)
            .min(end.saturating_sub(data as usize));
        // SAFETY: `data .. data + len` lies inside `control` (bounded by
        // `end` above), which the kernel initialised, and is not written to
        // while the slice lives.
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        each(hdr.cmsg_level, hdr.cmsg_type, bytes);
        // SAFETY: as for CMSG_FIRSTHDR above.
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    Ok((n as usize).min(buf.len()))
}

/// The `index`-th `timespec` of a control message's data as nanoseconds;
/// `None` when the data is too short or the stamp is zero (the kernel's
/// "no stamp").
pub(crate) fn timespec_ns(data: &[u8], index: usize) -> Option<u64> {
    let size = std::mem::size_of::<libc::timespec>();
    let bytes = data.get(index * size..(index + 1) * size)?;
    // SAFETY: `bytes` holds exactly one timespec's worth of initialised
    // bytes; timespec is plain integers, valid for any bit pattern; read
    // unaligned because control data need not be aligned for it.
    let ts: libc::timespec = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
    // `time_t` and `c_long` are `i32` on 32-bit targets: the casts are needed there.
    #[allow(clippy::unnecessary_cast)]
    let (sec, nsec) = (ts.tv_sec as i64, ts.tv_nsec as i64);
    (sec != 0 || nsec != 0).then(|| ns_from_timespec(sec, nsec))
}

/// An 802.1Q (or 802.1ad) tag the kernel took out of a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    /// The tag protocol identifier (0x8100 for 802.1Q).
    pub tpid: u16,
    /// The tag control information: priority (3 bits), drop eligible (1),
    /// VLAN id (12).
    pub tci: u16,
}

/// What [`recv_stamped`] received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamped {
    /// Bytes written to the caller's buffer.
    pub len: usize,
    /// The kernel's software receive stamp, `CLOCK_REALTIME` nanoseconds
    /// (`SO_TIMESTAMPNS`).
    pub realtime_ns: Option<u64>,
    /// The NIC's hardware receive stamp, nanoseconds of its clock (PHC),
    /// when hardware stamps are on (`SCM_TIMESTAMPING`, `ts[2]`).
    pub hardware_ns: Option<u64>,
    /// The VLAN tag the kernel took out of the frame, with
    /// [`enable_vlan_auxdata`] on a packet socket for every frame.
    pub vlan: Option<VlanTag>,
}

/// Receives one datagram or frame into `buf` with its stamps and VLAN tag
/// (`recvmsg(2)`). Blocks (up to the socket's receive timeout), or, with
/// `nonblocking`, returns at once (`MSG_DONTWAIT`); `WouldBlock` when
/// nothing came. Allocates nothing: the control buffer is on the stack.
pub fn recv_stamped(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
    nonblocking: bool,
) -> io::Result<Stamped> {
    let mut control = [0u64; CONTROL_WORDS];
    let mut out = Stamped {
        len: 0,
        realtime_ns: None,
        hardware_ns: None,
        vlan: None,
    };
    let flags = if nonblocking { libc::MSG_DONTWAIT } else { 0 };
    out.len = recv_with_control(
        socket,
        buf,
        flags,
        &mut control,
        |level, kind, data| match (level, kind) {
            (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => out.realtime_ns = timespec_ns(data, 0),
            (libc::SOL_SOCKET, libc::SCM_TIMESTAMPING) => out.hardware_ns = timespec_ns(data, 2),
            (libc::SOL_PACKET, libc::PACKET_AUXDATA) => out.vlan = vlan_of(data),
            _ => {}
        },
    )?;
    Ok(out)
}

/// The VLAN tag of a `tpacket_auxdata`, when it says there is one.
fn vlan_of(data: &[u8]) -> Option<VlanTag> {
    if data.len() < std::mem::size_of::<libc::tpacket_auxdata>() {
        return None;
    }
    // SAFETY: `data` holds at least one tpacket_auxdata's worth of
    // initialised bytes; the struct is plain integers, valid for any bit
    // pattern; read unaligned because control data need not be aligned.
    let aux: libc::tpacket_auxdata = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
    if aux.tp_status & libc::TP_STATUS_VLAN_VALID == 0 {
        return None;
    }
    let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
        aux.tp_vlan_tpid
    } else {
        libc::ETH_P_8021Q as u16
    };
    Some(VlanTag {
        tpid,
        tci: aux.tp_vlan_tci,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn interface_names_are_checked_before_the_kernel_is_asked() {
        for bad in ["", "sixteen-chars-xx", "a\0b"] {
            assert_eq!(
                if_index(bad).unwrap_err().raw_os_error(),
                Some(libc::EINVAL),
                "{bad:?}"
            );
        }
        assert_eq!(
            if_index("jlnosuchif0").unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        assert_eq!(if_index("lo").unwrap(), 1);
    }

    #[test]
    fn loopback_has_127_0_0_1() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(
            interface_ipv4(s.as_fd(), "lo").unwrap(),
            Ipv4Addr::LOCALHOST
        );
        assert_eq!(
            interface_ipv4(s.as_fd(), "jlnosuchif0")
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENODEV)
        );
    }

    #[test]
    fn stamps_and_tags_are_read_from_control_data() {
        let size = std::mem::size_of::<libc::timespec>();
        let mut data = vec![0u8; 3 * size];
        assert_eq!(timespec_ns(&data, 0), None, "a zero stamp is no stamp");
        data[2 * size..2 * size + 8].copy_from_slice(&7i64.to_ne_bytes());
        data[2 * size + 8..3 * size].copy_from_slice(&5i64.to_ne_bytes());
        assert_eq!(timespec_ns(&data, 2), Some(7_000_000_005));
        assert_eq!(timespec_ns(&data, 3), None, "beyond the data");

        let mut aux = [0u8; 20];
        aux[16..18].copy_from_slice(&0x6000u16.to_ne_bytes());
        assert_eq!(vlan_of(&aux), None, "no VLAN_VALID bit");
        aux[..4].copy_from_slice(&libc::TP_STATUS_VLAN_VALID.to_ne_bytes());
        assert_eq!(
            vlan_of(&aux),
            Some(VlanTag {
                tpid: 0x8100,
                tci: 0x6000
            })
        );
        let both = libc::TP_STATUS_VLAN_VALID | libc::TP_STATUS_VLAN_TPID_VALID;
        aux[..4].copy_from_slice(&both.to_ne_bytes());
        aux[18..20].copy_from_slice(&0x88a8u16.to_ne_bytes());
        assert_eq!(vlan_of(&aux).unwrap().tpid, 0x88a8);
        assert_eq!(vlan_of(&aux[..19]), None, "too short");
    }

    #[test]
    fn nonblocking_receive_of_an_empty_socket_would_block_and_a_timeout_too() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(
            recv_stamped(rx.as_fd(), &mut buf, true).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        let tv = |t| {
            let tv = timeval_of(t);
            (tv.tv_sec, tv.tv_usec)
        };
        assert_eq!(tv(None), (0, 0));
        assert_eq!(tv(Some(Duration::ZERO)), (0, 1));
        assert_eq!(tv(Some(Duration::from_nanos(1_500_001))), (0, 1501));
        assert_eq!(tv(Some(Duration::from_millis(2500))), (2, 500_000));
        // The kernel keeps the timeout in clock ticks: it reads back rounded up.
        set_receive_timeout(rx.as_fd(), Some(Duration::from_micros(1501))).unwrap();
        let back = rx.read_timeout().unwrap().unwrap();
        assert!(back >= Duration::from_micros(1501), "{back:?}");
        assert_eq!(
            recv_stamped(rx.as_fd(), &mut buf, false)
                .unwrap_err()
                .kind(),
            io::ErrorKind::WouldBlock
        );
        set_receive_timeout(rx.as_fd(), None).unwrap();
        assert_eq!(rx.read_timeout().unwrap(), None);
    }

    #[test]
    fn a_datagram_comes_with_its_stamp_and_no_tag() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        crate::rx_timestamp::enable_rx_timestamps(rx.as_fd()).unwrap();
        let before = crate::rx_timestamp::realtime_ns();
        tx.send_to(b"stamped", rx.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 4];
        let got = recv_stamped(rx.as_fd(), &mut buf, false).unwrap();
        let after = crate::rx_timestamp::realtime_ns();
        assert_eq!((got.len, &buf), (4, b"stam"), "a longer datagram is cut");
        let stamp = got.realtime_ns.unwrap();
        assert!(
            before <= stamp && stamp <= after,
            "{before} <= {stamp} <= {after}"
        );
        assert_eq!((got.hardware_ns, got.vlan), (None, None));
    }

    #[test]
    fn packet_sockets_need_cap_net_raw() {
        match packet_socket(ETH_P_ALL, 1) {
            Ok(_) => assert_eq!(crate::effective_uid(), 0),
            Err(e) => {
                assert_ne!(crate::effective_uid(), 0, "root was refused: {e}");
                assert_eq!(e.raw_os_error(), Some(libc::EPERM));
            }
        }
    }
}
