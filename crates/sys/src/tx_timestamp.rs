//! Transmit time stamps (`SO_TIMESTAMPING`), and what an interface can stamp
//! (`ETHTOOL_GET_TS_INFO`) or be told to stamp in hardware (`SIOCSHWTSTAMP`).
//!
//! **Software transmit stamps.** With [`SOFTWARE_TX`] set on a socket, the
//! driver stamps each packet as it hands it to the device
//! (`skb_tx_timestamp`) and the kernel queues the stamp on the socket's
//! *error queue*; [`read_tx_timestamp`] fetches one
//! (`recvmsg(MSG_ERRQUEUE | MSG_DONTWAIT)`), without the packet's bytes
//! (`OPT_TSONLY`), with the send's number (`OPT_ID`, counted from 0 per
//! socket). The software stamp is `ts[0]` of `SCM_TIMESTAMPING`, on
//! `CLOCK_REALTIME`, the clock of the receive stamps. A driver that never
//! calls `skb_tx_timestamp` gives none: `Ok(None)`, every time. Read one
//! stamp per send: unread stamps count against the socket's receive buffer.
//!
//! **Capabilities and hardware stamps.** [`ts_info`] asks the driver which
//! stamps it offers and the index of its PTP hardware clock (PHC); veth, a
//! bridge or loopback offer software stamps only. On a NIC that offers them,
//! [`set_hw_timestamping`] turns hardware stamping on ([`HW_TX_ON`],
//! [`HW_FILTER_ALL`]) and [`HARDWARE`] asks the socket for the stamps, in the
//! NIC clock's time (`ts[2]`). That setting belongs to the interface, not the
//! socket, and outlives it: read the old one first ([`hw_timestamping`]) and
//! put it back.
//!
//! All of these allocate nothing (control buffers and ioctl structures live
//! on the stack), except [`driver_name`], which returns a `String`.

use crate::minus_one;
use crate::packet::{ifreq_named, recv_with_control, timespec_ns};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `SO_TIMESTAMPING` flags for software transmit stamps: stamp in the driver
/// (`TX_SOFTWARE`), report software stamps (`SOFTWARE`), stamps only without
/// the packet (`OPT_TSONLY`), each with its send's number (`OPT_ID`).
pub const SOFTWARE_TX: u32 = libc::SOF_TIMESTAMPING_TX_SOFTWARE
    | libc::SOF_TIMESTAMPING_SOFTWARE
    | libc::SOF_TIMESTAMPING_OPT_TSONLY
    | libc::SOF_TIMESTAMPING_OPT_ID;

/// `SO_TIMESTAMPING` flags for hardware stamps on transmit and receive, in
/// the NIC clock's time (`RAW_HARDWARE`), stamps only, numbered.
pub const HARDWARE: u32 = libc::SOF_TIMESTAMPING_TX_HARDWARE
    | libc::SOF_TIMESTAMPING_RX_HARDWARE
    | libc::SOF_TIMESTAMPING_RAW_HARDWARE
    | libc::SOF_TIMESTAMPING_OPT_TSONLY
    | libc::SOF_TIMESTAMPING_OPT_ID;

/// The capability bit of software transmit stamps in [`TsInfo::so_timestamping`].
pub const CAN_TX_SOFTWARE: u32 = libc::SOF_TIMESTAMPING_TX_SOFTWARE;
/// The capability bit of software receive stamps.
pub const CAN_RX_SOFTWARE: u32 = libc::SOF_TIMESTAMPING_RX_SOFTWARE;
/// The capability bits of hardware stamps: transmit, receive, raw (PHC) time.
pub const CAN_HARDWARE: u32 = libc::SOF_TIMESTAMPING_TX_HARDWARE
    | libc::SOF_TIMESTAMPING_RX_HARDWARE
    | libc::SOF_TIMESTAMPING_RAW_HARDWARE;

/// `hwtstamp_config.tx_type`: no hardware transmit stamps.
pub const HW_TX_OFF: i32 = libc::HWTSTAMP_TX_OFF as i32;
/// `hwtstamp_config.tx_type`: stamp every transmitted packet.
pub const HW_TX_ON: i32 = libc::HWTSTAMP_TX_ON as i32;
/// `hwtstamp_config.rx_filter`: stamp no received packet.
pub const HW_FILTER_NONE: i32 = libc::HWTSTAMP_FILTER_NONE as i32;
/// `hwtstamp_config.rx_filter`: stamp every received packet.
pub const HW_FILTER_ALL: i32 = libc::HWTSTAMP_FILTER_ALL as i32;

/// `ETHTOOL_GET_TS_INFO` (linux/ethtool.h), which libc does not define.
const ETHTOOL_GET_TS_INFO: u32 = 0x41;
/// `ETHTOOL_GDRVINFO` (linux/ethtool.h).
const ETHTOOL_GDRVINFO: u32 = 0x03;

/// Sets the socket's `SO_TIMESTAMPING` flags ([`SOFTWARE_TX`], [`HARDWARE`],
/// or both or'ed; 0 turns them off).
pub fn set_timestamping(socket: BorrowedFd<'_>, flags: u32) -> io::Result<()> {
    crate::packet::set_int_option(
        socket,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        flags as libc::c_int,
    )
}

/// One transmit stamp from the error queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxStamp {
    /// The software stamp, `CLOCK_REALTIME` nanoseconds (`ts[0]`).
    pub software_ns: Option<u64>,
    /// The hardware stamp, nanoseconds of the NIC's clock (`ts[2]`).
    pub hardware_ns: Option<u64>,
    /// The number of the send it belongs to (`OPT_ID`: 0 for the socket's
    /// first send after the flags were set).
    pub id: Option<u32>,
}

/// Fetches the oldest queued transmit stamp of `socket`
/// (`recvmsg(MSG_ERRQUEUE | MSG_DONTWAIT)`); `Ok(None)` when none is queued.
/// Works for UDP (`IP_RECVERR`) and packet sockets (`PACKET_TX_TIMESTAMP`).
pub fn read_tx_timestamp(socket: BorrowedFd<'_>) -> io::Result<Option<TxStamp>> {
    let mut control = [0u64; 24];
    let mut stamp = TxStamp {
        software_ns: None,
        hardware_ns: None,
        id: None,
    };
    let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
    let got = recv_with_control(
        socket,
        &mut [],
        flags,
        &mut control,
        |level, kind, data| match (level, kind) {
            (libc::SOL_SOCKET, libc::SCM_TIMESTAMPING) => {
                stamp.software_ns = timespec_ns(data, 0);
                stamp.hardware_ns = timespec_ns(data, 2);
            }
            (libc::SOL_IP, libc::IP_RECVERR)
            | (libc::SOL_IPV6, libc::IPV6_RECVERR)
            | (libc::SOL_PACKET, libc::PACKET_TX_TIMESTAMP) => stamp.id = stamp_id(data),
            _ => {}
        },
    );
    match got {
        Ok(_) => Ok(Some(stamp)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// The send number of a `sock_extended_err` that carries a time stamp.
fn stamp_id(data: &[u8]) -> Option<u32> {
    if data.len() < std::mem::size_of::<libc::sock_extended_err>() {
        return None;
    }
    // SAFETY: `data` holds at least one sock_extended_err's worth of
    // initialised bytes; the struct is plain integers, valid for any bit
    // pattern; read unaligned because control data need not be aligned.
    let err: libc::sock_extended_err = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
    (err.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING).then_some(err.ee_data)
}

/// `struct ethtool_ts_info` (linux/ethtool.h).
#[repr(C)]
#[derive(Default)]
struct EthtoolTsInfo {
    cmd: u32,
    so_timestamping: u32,
    phc_index: i32,
    tx_types: u32,
    tx_reserved: [u32; 3],
    rx_filters: u32,
    rx_reserved: [u32; 3],
}

/// What an interface's driver can stamp (`ETHTOOL_GET_TS_INFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsInfo {
    /// `SOF_TIMESTAMPING_*` capability bits ([`CAN_TX_SOFTWARE`],
    /// [`CAN_RX_SOFTWARE`], [`CAN_HARDWARE`], …).
    pub so_timestamping: u32,
    /// The PTP hardware clock, `/dev/ptpN`; `None` when there is none.
    pub phc_index: Option<u32>,
    /// Bit `n` set: `hwtstamp_config.tx_type` `n` is supported.
    pub tx_types: u32,
    /// Bit `n` set: `hwtstamp_config.rx_filter` `n` is supported.
    pub rx_filters: u32,
}

impl TsInfo {
    /// True when the driver stamps transmitted packets in software.
    pub fn tx_software(&self) -> bool {
        self.so_timestamping & CAN_TX_SOFTWARE != 0
    }

    /// True when the NIC stamps both ways in hardware, on a clock of its own.
    pub fn hardware(&self) -> bool {
        self.so_timestamping & CAN_HARDWARE == CAN_HARDWARE && self.phc_index.is_some()
    }
}

/// Asks the driver of interface `name` what it can stamp
/// (`ioctl(SIOCETHTOOL, ETHTOOL_GET_TS_INFO)`), through `socket`, whose
/// network namespace is the one looked in: `ENODEV` when there is no such
/// interface, `EOPNOTSUPP` when its driver does not say.
pub fn ts_info(socket: BorrowedFd<'_>, name: &str) -> io::Result<TsInfo> {
    let mut info = EthtoolTsInfo {
        cmd: ETHTOOL_GET_TS_INFO,
        ..EthtoolTsInfo::default()
    };
    ethtool(socket, name, (&mut info as *mut EthtoolTsInfo).cast())?;
    Ok(TsInfo {
        so_timestamping: info.so_timestamping,
        phc_index: u32::try_from(info.phc_index).ok(),
        tx_types: info.tx_types,
        rx_filters: info.rx_filters,
    })
}

/// `struct ethtool_drvinfo` (linux/ethtool.h).
#[repr(C)]
struct EthtoolDrvInfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

/// The name of the driver of interface `name` (`ETHTOOL_GDRVINFO`): `veth`,
/// `igb`, …, so a report can say whose stamps it had.
pub fn driver_name(socket: BorrowedFd<'_>, name: &str) -> io::Result<String> {
    let mut info = EthtoolDrvInfo {
        cmd: ETHTOOL_GDRVINFO,
        driver: [0; 32],
        version: [0; 32],
        fw_version: [0; 32],
        bus_info: [0; 32],
        erom_version: [0; 32],
        reserved2: [0; 12],
        n_priv_flags: 0,
        n_stats: 0,
        testinfo_len: 0,
        eedump_len: 0,
        regdump_len: 0,
    };
    ethtool(socket, name, (&mut info as *mut EthtoolDrvInfo).cast())?;
    let end = info.driver.iter().position(|&b| b == 0).unwrap_or(32);
    Ok(String::from_utf8_lossy(&info.driver[..end]).into_owned())
}

/// `ioctl(SIOCETHTOOL)` on interface `name` with the command structure at
/// `data`, which must start with its `cmd` and be writable for its size.
fn ethtool(socket: BorrowedFd<'_>, name: &str, data: *mut libc::c_char) -> io::Result<()> {
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_data = data;
    // SAFETY: `req` is a valid ifreq whose data pointer points at an ethtool
    // command structure of the layout its `cmd` names (both callers pass
    // their own #[repr(C)] copy of the kernel's struct), writable and alive
    // for the whole call; the descriptor is borrowed, so open.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req) };
    minus_one(rc).map(drop)
}

/// An interface's hardware time-stamping set-up (`struct hwtstamp_config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwConfig {
    /// Must be 0 (no flags are defined for setting).
    pub flags: i32,
    /// [`HW_TX_OFF`], [`HW_TX_ON`], or another `HWTSTAMP_TX_*`.
    pub tx_type: i32,
    /// [`HW_FILTER_NONE`], [`HW_FILTER_ALL`], or another `HWTSTAMP_FILTER_*`.
    pub rx_filter: i32,
}

/// Reads interface `name`'s hardware time-stamping set-up
/// (`ioctl(SIOCGHWTSTAMP)`); `EOPNOTSUPP` when it has none (veth).
pub fn hw_timestamping(socket: BorrowedFd<'_>, name: &str) -> io::Result<HwConfig> {
    hwtstamp(
        socket,
        name,
        libc::SIOCGHWTSTAMP as _,
        HwConfig {
            flags: 0,
            tx_type: 0,
            rx_filter: 0,
        },
    )
}

/// Sets interface `name`'s hardware time-stamping (`ioctl(SIOCSHWTSTAMP)`,
/// needs `CAP_NET_ADMIN`) and returns what the driver applied (it may stamp
/// more than asked for); `EOPNOTSUPP` when it cannot (veth), `ERANGE` when
/// it cannot do what was asked.
pub fn set_hw_timestamping(
    socket: BorrowedFd<'_>,
    name: &str,
    config: HwConfig,
) -> io::Result<HwConfig> {
    hwtstamp(socket, name, libc::SIOCSHWTSTAMP as _, config)
}

/// One `SIOC[GS]HWTSTAMP` call with `config` in and the kernel's answer out.
fn hwtstamp(
    socket: BorrowedFd<'_>,
    name: &str,
    request: libc::Ioctl,
    config: HwConfig,
) -> io::Result<HwConfig> {
    let mut raw = libc::hwtstamp_config {
        flags: config.flags,
        tx_type: config.tx_type,
        rx_filter: config.rx_filter,
    };
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_data = (&mut raw as *mut libc::hwtstamp_config).cast();
    // SAFETY: `req` is a valid ifreq whose data pointer points at `raw`, a
    // hwtstamp_config that is writable and alive for the whole call, as
    // SIOC[GS]HWTSTAMP expect; the descriptor is borrowed, so open.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), request, &mut req) };
    minus_one(rc)?;
    Ok(HwConfig {
        flags: raw.flags,
        tx_type: raw.tx_type,
        rx_filter: raw.rx_filter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn loopback_offers_software_stamps_and_no_hardware() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let info = ts_info(s.as_fd(), "lo").unwrap();
        assert!(info.so_timestamping & CAN_RX_SOFTWARE != 0, "{info:?}");
        assert_eq!(info.so_timestamping & CAN_HARDWARE, 0, "{info:?}");
        assert_eq!(info.phc_index, None);
        assert!(!info.hardware());
        assert_eq!(
            ts_info(s.as_fd(), "jlnosuchif0")
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENODEV)
        );
        assert_eq!(
            hw_timestamping(s.as_fd(), "lo").unwrap_err().raw_os_error(),
            Some(libc::EOPNOTSUPP)
        );
    }

    #[test]
    fn an_empty_error_queue_has_no_stamp() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_timestamping(s.as_fd(), SOFTWARE_TX).unwrap();
        assert_eq!(read_tx_timestamp(s.as_fd()).unwrap(), None);
    }

    #[test]
    fn a_send_number_is_read_only_from_a_time_stamp_error() {
        let mut err = [0u8; 16];
        err[4] = libc::SO_EE_ORIGIN_TIMESTAMPING;
        err[12..16].copy_from_slice(&9u32.to_ne_bytes());
        assert_eq!(stamp_id(&err), Some(9));
        err[4] = libc::SO_EE_ORIGIN_ICMP;
        assert_eq!(stamp_id(&err), None);
        assert_eq!(stamp_id(&err[..15]), None);
    }

    #[test]
    fn capabilities_need_both_the_bits_and_a_clock_for_hardware() {
        let info = |bits, phc| TsInfo {
            so_timestamping: bits,
            phc_index: phc,
            tx_types: 0,
            rx_filters: 0,
        };
        assert!(info(CAN_HARDWARE, Some(0)).hardware());
        assert!(!info(CAN_HARDWARE, None).hardware());
        assert!(!info(CAN_HARDWARE & !libc::SOF_TIMESTAMPING_RAW_HARDWARE, Some(0)).hardware());
        assert!(info(CAN_TX_SOFTWARE, None).tx_software());
        assert!(!info(CAN_RX_SOFTWARE, None).tx_software());
    }
}
