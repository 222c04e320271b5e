//! Kernel receive timestamps of datagrams (`SO_TIMESTAMPNS`, `recvmsg`) and
//! the wall clock those stamps are read on.
//!
//! **Receive timestamps.** With `SO_TIMESTAMPNS` set, the kernel stamps each
//! datagram when it enters the network stack (for a veth pair: when the
//! sender's `sendmsg` hands it to the peer) and `recvmsg` returns the stamp
//! as an `SCM_TIMESTAMPNS` control message. The stamp is on
//! `CLOCK_REALTIME`, not `CLOCK_MONOTONIC`: compare it only with a
//! [`realtime_ns`] read, never with [`monotonic_ns`](crate::monotonic_ns).

use crate::{minus_one, NS_PER_SEC};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Asks the kernel to stamp every datagram the socket receives
/// (`setsockopt(SOL_SOCKET, SO_TIMESTAMPNS, 1)`); [`recv_with_timestamp`]
/// returns the stamps.
pub fn enable_rx_timestamps(socket: BorrowedFd<'_>) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a valid c_int for the whole call and its size is
    // passed; the descriptor is borrowed, so open.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    minus_one(rc).map(drop)
}

/// Receives one datagram into `buf` (`recvmsg(2)`, blocking, or until the
/// socket's receive timeout: `WouldBlock`) and returns its length — at most
/// `buf.len()`, a longer datagram is cut — and the kernel's receive stamp
/// in `CLOCK_REALTIME` nanoseconds, when [`enable_rx_timestamps`] asked for
/// one and the kernel gave it.
///
/// Allocates nothing: the control-message buffer is on the stack.
#[inline(always)]
pub fn recv_with_timestamp(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
) -> io::Result<(usize, Option<u64>)> {
    // Room for one `cmsghdr` and a `timespec` with margin, 8-byte aligned
    // as `cmsghdr` requires.
    let mut control = [0u64; 8];
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
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: `msg` points at `iov` (which points at `buf`) and at
    // `control`; all three outlive the call and are writable for the
    // lengths given. The descriptor is borrowed, so open.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR/NXTHDR only follow
    // lengths inside `msg_control`/`msg_controllen` (the kernel bounds
    // msg_controllen by what it wrote), and return null at the end.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and points at a header inside `control`.
        let hdr = unsafe { &*cmsg };
        let want = std::mem::size_of::<libc::timespec>();
        if hdr.cmsg_level == libc::SOL_SOCKET
            && hdr.cmsg_type == libc::SCM_TIMESTAMPNS
            // SAFETY: CMSG_LEN is pure arithmetic on its argument.
            && hdr.cmsg_len >= unsafe { libc::CMSG_LEN(want as libc::c_uint) } as usize
        {
            // SAFETY: the header says its data holds at least a timespec;
            // CMSG_DATA points inside `control`, which may not be aligned for
            // timespec, so read it unaligned.
            let ts: libc::timespec =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            stamp = Some(ns_from_libc(&ts));
        }
        // SAFETY: as for CMSG_FIRSTHDR above.
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    Ok(((n as usize).min(buf.len()), stamp))
}

/// Reads `CLOCK_REALTIME` (the wall clock, vDSO) in nanoseconds since the
/// epoch: the clock of the kernel's receive stamps. A clock set before
/// 1970 reads as 0.
#[inline(always)]
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call;
    // CLOCK_REALTIME always exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ns_from_libc(&ts)
}

/// [`ns_from_timespec`] of a libc `timespec`.
#[inline(always)]
// `time_t` and `c_long` are `i32` on 32-bit targets: the casts are needed there.
#[allow(clippy::unnecessary_cast)]
fn ns_from_libc(ts: &libc::timespec) -> u64 {
    ns_from_timespec(ts.tv_sec as i64, ts.tv_nsec as i64)
}

/// A `timespec` as nanoseconds since its clock's zero; a time before zero
/// is 0, and a sum beyond `u64` saturates.
#[inline(always)]
pub fn ns_from_timespec(sec: i64, nsec: i64) -> u64 {
    if sec < 0 {
        return 0;
    }
    (sec as u64)
        .saturating_mul(NS_PER_SEC)
        .saturating_add(nsec.clamp(0, NS_PER_SEC as i64 - 1) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn timespec_conversion() {
        assert_eq!(ns_from_timespec(0, 0), 0);
        assert_eq!(ns_from_timespec(1, 5), 1_000_000_005);
        assert_eq!(
            ns_from_timespec(1_700_000_000, 999_999_999),
            1_700_000_000_999_999_999
        );
        assert_eq!(ns_from_timespec(-1, 5), 0);
        assert_eq!(ns_from_timespec(i64::MAX, 0), u64::MAX);
    }

    #[test]
    fn realtime_is_the_wall_clock() {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let ours = realtime_ns();
        // Read after SystemTime on the same clock: never earlier.
        assert!(ours >= wall, "{ours} < {wall}");
    }

    #[test]
    fn loopback_datagram_comes_with_a_kernel_stamp_between_send_and_receive() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();

        // Without SO_TIMESTAMPNS: the payload, no stamp; a long datagram is cut.
        tx.send(b"plain-datagram").unwrap();
        let mut buf = [0u8; 5];
        assert_eq!(
            recv_with_timestamp(rx.as_fd(), &mut buf).unwrap(),
            (5, None)
        );
        assert_eq!(&buf, b"plain");

        enable_rx_timestamps(rx.as_fd()).unwrap();
        let before = realtime_ns();
        tx.send(b"stamped").unwrap();
        let mut buf = [0u8; 64];
        let (n, stamp) = recv_with_timestamp(rx.as_fd(), &mut buf).unwrap();
        let after = realtime_ns();
        assert_eq!(&buf[..n], b"stamped");
        let stamp = stamp.expect("the kernel stamps a datagram after SO_TIMESTAMPNS");
        assert!(
            before <= stamp && stamp <= after,
            "{before} <= {stamp} <= {after}"
        );
    }

    #[test]
    fn receive_timeout_is_would_block() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(1)))
            .unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(
            recv_with_timestamp(rx.as_fd(), &mut buf)
                .unwrap_err()
                .kind(),
            io::ErrorKind::WouldBlock
        );
    }
}
