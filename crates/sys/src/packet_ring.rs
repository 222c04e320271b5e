//! A packet socket's receive ring (`PACKET_RX_RING`, `TPACKET_V2`), and
//! the send option that skips the interface's queueing discipline
//! (`PACKET_QDISC_BYPASS`).
//!
//! **Why a ring.** With a ring the kernel copies each frame the socket
//! takes into memory shared with the process (`mmap(2)`) and flags its slot
//! ready; the process reads it there and hands the slot back. Taking a
//! frame, or finding that none is queued, is then a load from memory, not
//! a `recvmsg(2)`: a POWERLINK managing node that takes one PRes per poll
//! saves a system call per PRes and one per cycle for the empty queue at
//! its start. `poll(2)` on the socket still says when a slot is ready, so
//! a blocking wait works as before.
//!
//! **Layout.** `TPACKET_V2`: [`RING_FRAMES`] slots of [`SLOT_BYTES`], each
//! a `tpacket2_hdr` (status, lengths, the frame's offset, the receive
//! stamp) then the frame. The kernel fills the slots in order and the
//! reader takes them in the same order, so the next slot to read is the
//! only one to look at. A slot belongs to the reader while its status has
//! `TP_STATUS_USER` (read with acquire ordering: the kernel writes the
//! frame before it), and goes back with `TP_STATUS_KERNEL` (a release
//! store: the reader is done with it).
//!
//! **Stamps.** A slot holds one receive stamp: the kernel's software stamp
//! (CLOCK_REALTIME, as `SO_TIMESTAMPNS` gives it) unless the socket asks for
//! hardware ones (`PACKET_TIMESTAMP`), which this module does not: a link
//! that needs the NIC's stamps receives with `recvmsg` instead.
//!
//! Taking a frame copies it into the caller's buffer and allocates nothing
//! (design rule 2); the ring is mapped once, when it is made, and unmapped
//! when it is dropped.
//!
//! The design rules cited here are in `docs/design.md`.

use crate::mapping::SharedMapping;
use crate::minus_one;
use crate::packet::set_int_option;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// The bytes of one slot: a header, the link-layer address the kernel puts
/// after it, and a whole Ethernet frame (1518 bytes with a VLAN tag).
pub const SLOT_BYTES: usize = 2048;
/// Slots in the ring: six cycles of 40 CNs' frames (a SoC, 40 PReq or
/// PRes, a SoA, an ASnd), at least what the default socket queue
/// (`net.core.rmem_default`, 208 KiB) holds of such small frames.
pub const RING_FRAMES: usize = 256;
/// Bytes of one block of slots (the kernel's unit of allocation).
const BLOCK_BYTES: usize = 8192;

/// One frame [`RxRing::take`] copied out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingFrame {
    /// Bytes copied into the caller's buffer.
    pub len: usize,
    /// The kernel's receive stamp, CLOCK_REALTIME ns.
    pub realtime_ns: Option<u64>,
}

/// A mapped receive ring; see the module doc.
#[derive(Debug)]
pub struct RxRing {
    map: SharedMapping,
    /// The next slot to read.
    next: usize,
}

impl RxRing {
    /// Gives packet socket `socket` a receive ring and maps it. Set it up
    /// before any frame can arrive that must go through it: frames queued
    /// before stay in the socket's ordinary queue (read them with
    /// `recvmsg`). `EBUSY` when the socket already has a ring.
    pub fn new(socket: BorrowedFd<'_>) -> io::Result<RxRing> {
        set_int_option(
            socket,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            libc::tpacket_versions::TPACKET_V2 as libc::c_int,
        )?;
        let req = libc::tpacket_req {
            tp_block_size: BLOCK_BYTES as libc::c_uint,
            tp_block_nr: (RING_FRAMES * SLOT_BYTES / BLOCK_BYTES) as libc::c_uint,
            tp_frame_size: SLOT_BYTES as libc::c_uint,
            tp_frame_nr: RING_FRAMES as libc::c_uint,
        };
        // SAFETY: `req` is a valid tpacket_req for the whole call and its
        // size is passed; the descriptor is borrowed, so open.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_RX_RING,
                (&req as *const libc::tpacket_req).cast(),
                std::mem::size_of::<libc::tpacket_req>() as libc::socklen_t,
            )
        };
        minus_one(rc)?;
        let map = SharedMapping::map(socket, RING_FRAMES * SLOT_BYTES)?;
        Ok(RxRing { map, next: 0 })
    }

    /// The status word of slot `i` (< [`RING_FRAMES`]).
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: slot `i` lies inside the mapping (i < RING_FRAMES), starts
        // on a 2048-byte boundary of a page-aligned mapping, so its first
        // four bytes are an aligned u32 the kernel and this ring share;
        // they are only ever accessed atomically from this side, and the
        // mapping lives as long as `self`.
        unsafe { AtomicU32::from_ptr(self.map.as_ptr().add(i * SLOT_BYTES).cast()) }
    }

    /// True when a frame is ready to take: one load, no system call.
    pub fn ready(&self) -> bool {
        self.status(self.next).load(Ordering::Acquire) & libc::TP_STATUS_USER != 0
    }

    /// Takes the next frame into `buf` (cut to its length) with its stamp,
    /// and hands its slot back; `None` when none is ready. No system call;
    /// allocates nothing.
    pub fn take(&mut self, buf: &mut [u8]) -> Option<RingFrame> {
        let i = self.next;
        let status = self.status(i).load(Ordering::Acquire);
        if status & libc::TP_STATUS_USER == 0 {
            return None;
        }
        let slot = self.slot(i);
        let hdr = read_header(slot);
        let start = usize::from(hdr.tp_mac);
        let end = start
            .saturating_add(hdr.tp_snaplen as usize)
            .min(SLOT_BYTES);
        let frame = slot.get(start..end).unwrap_or(&[]);
        let len = frame.len().min(buf.len());
        buf[..len].copy_from_slice(&frame[..len]);
        let ns = u64::from(hdr.tp_sec) * 1_000_000_000 + u64::from(hdr.tp_nsec);
        self.status(i)
            .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        self.next = (i + 1) % RING_FRAMES;
        Some(RingFrame {
            len,
            realtime_ns: (ns != 0).then_some(ns),
        })
    }

    /// Slot `i`'s bytes, while the reader owns it.
    fn slot(&self, i: usize) -> &[u8] {
        // SAFETY: slot `i` lies inside the mapping; the caller saw
        // TP_STATUS_USER with acquire ordering, so the kernel has written
        // the slot and does not touch it until the status goes back, which
        // only `take` does after its last use of the slice.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(i * SLOT_BYTES), SLOT_BYTES) }
    }
}

/// The `tpacket2_hdr` at the start of `slot`.
fn read_header(slot: &[u8]) -> libc::tpacket2_hdr {
    assert!(slot.len() >= std::mem::size_of::<libc::tpacket2_hdr>());
    // SAFETY: `slot` holds at least one header's worth of bytes (checked
    // above); the struct is plain integers, valid for any bit pattern.
    unsafe { std::ptr::read_unaligned(slot.as_ptr().cast()) }
}

/// Sends of `socket` go straight to the driver, past the interface's
/// queueing discipline (`PACKET_QDISC_BYPASS`, Linux 3.14), as a real-time
/// stack's raw-socket driver does: no queue to wait in, less work per send.
/// Sniffers on the interface no longer see these sends (they are handed
/// to the driver without passing the taps).
pub fn bypass_qdisc(socket: BorrowedFd<'_>) -> io::Result<()> {
    set_int_option(socket, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{if_index, packet_socket, send_frame};
    use std::os::fd::AsFd;

    /// IEEE 802's local experimental EtherType: nothing else on loopback.
    const TEST_ETHERTYPE: u16 = 0x88b5;

    #[test]
    fn frames_sent_on_loopback_come_out_of_the_ring_in_order_with_stamps() {
        let lo = if_index("lo").unwrap();
        let rx = match packet_socket(TEST_ETHERTYPE, lo) {
            Ok(s) => s,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                eprintln!("skipped: packet sockets need root or CAP_NET_RAW");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let mut ring = RxRing::new(rx.as_fd()).unwrap();
        assert_eq!(
            RxRing::new(rx.as_fd()).unwrap_err().raw_os_error(),
            Some(libc::EBUSY),
            "one ring per socket"
        );
        let mut buf = [0u8; 64];
        assert!(!ring.ready());
        assert_eq!(ring.take(&mut buf), None);
        let tx = packet_socket(0, lo).unwrap();
        bypass_qdisc(tx.as_fd()).unwrap();
        let before = crate::rx_timestamp::realtime_ns();
        // More frames than slots: the ring wraps.
        for k in 0..RING_FRAMES + 5 {
            let mut frame = [0u8; 60];
            frame[..6].copy_from_slice(&[0xff; 6]);
            frame[12..14].copy_from_slice(&TEST_ETHERTYPE.to_be_bytes());
            frame[14..16].copy_from_slice(&(k as u16).to_be_bytes());
            send_frame(tx.as_fd(), lo, TEST_ETHERTYPE, &frame).unwrap();
            assert!(crate::poll::wait_readable(rx.as_fd(), Some(1_000_000_000)).unwrap());
            assert!(ring.ready());
            let got = ring.take(&mut buf).unwrap();
            let after = crate::rx_timestamp::realtime_ns();
            assert_eq!(got.len, 60);
            assert_eq!(buf[..60], frame, "frame {k}");
            let stamp = got.realtime_ns.unwrap();
            assert!(
                before <= stamp && stamp <= after,
                "{before} <= {stamp} <= {after}"
            );
            assert_eq!(ring.take(&mut buf), None, "frame {k} was the only one");
        }
        // A short buffer takes the frame's start.
        let mut frame = [0x5au8; 60];
        frame[12..14].copy_from_slice(&TEST_ETHERTYPE.to_be_bytes());
        send_frame(tx.as_fd(), lo, TEST_ETHERTYPE, &frame).unwrap();
        assert!(crate::poll::wait_readable(rx.as_fd(), Some(1_000_000_000)).unwrap());
        let mut short = [0u8; 8];
        assert_eq!(ring.take(&mut short).unwrap().len, 8);
        assert_eq!(short, [0x5a; 8]);
        assert!(!crate::poll::wait_readable(rx.as_fd(), Some(0)).unwrap());
    }
}
