//! The managing node's SDO client for one CN: the sequence layer
//! (connection set-up, numbering, acknowledgement, retransmission, close)
//! and a queue of WriteByIndex / ReadByIndex transfers over the command
//! layer, as openPOWERLINK's configuration manager drives them — so that
//! the MN can write a CN's object dictionary before it lets it go
//! Operational. Pure: the caller sends the frames [`SdoClient::next_frame`]
//! gives, hands over the CN's SDO frames ([`SdoClient::receive`]) and the
//! time ([`SdoClient::tick`]), and invites the CN while
//! [`SdoClient::awaiting`] says an answer is due.
//!
//! The exchange, as the reference capture shows it (frames 879–2675 of
//! `ref_mn_cn.pcap` for node 1):
//!
//! - **set-up**: the client sends `r0/NONE s0/INIT`; the server answers
//!   `r0/INIT s0/INIT`; the client confirms with `r<its>/INIT s0/VALID`;
//!   the server answers `…/VALID`, and the connection is valid;
//! - **a command**: each frame that carries one increments the sender's
//!   SendSequenceNumber; ReceiveSequenceNumber echoes the last number
//!   received. Transaction ids count from 0, one per transfer;
//! - **acknowledgement**: the reference sends a sequence-only frame after
//!   each response; this client carries it on its next request instead
//!   (the same ReceiveSequenceNumber), and sends a sequence-only one only
//!   when no request follows;
//! - **retransmission**: a frame not answered within the timeout is sent
//!   again, unchanged, up to the retries; then the transfer ends as timed
//!   out and the connection is set up afresh for the next one. A server
//!   frame with ReceiveCon ERROR asks for the last frame again;
//! - **close**: both connection fields NONE.
//!
//! Writes longer than one segment ([`MAX_SEGMENT_SIZE`]) go segmented
//! (Initiate, Segments, Complete), one frame per invitation, without
//! waiting for an acknowledgement between them. A read's answer must come
//! expedited: a segmented one ends the transfer as
//! [`Outcome::Failed`].

use std::collections::VecDeque;

use super::sdo::{
    segments, AbortCode, CommandId, CommandLayer, Con, IndexAddress, Sdo, Segmentation, SeqLayer,
    MAX_SEGMENT_SIZE,
};

/// How long the client waits for an answer before it sends its frame
/// again, by default, ns.
pub const DEFAULT_TIMEOUT_NS: u64 = 100_000_000;
/// How often it sends a frame again before the transfer times out, by
/// default.
pub const DEFAULT_RETRIES: u32 = 3;

/// One transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transfer {
    /// WriteByIndex of `value` to `addr`.
    Write {
        /// The object.
        addr: IndexAddress,
        /// Its new value, little-endian as the object dictionary holds it.
        value: Vec<u8>,
    },
    /// ReadByIndex of `addr`.
    Read {
        /// The object.
        addr: IndexAddress,
    },
}

impl Transfer {
    /// The object the transfer is about.
    pub fn addr(&self) -> IndexAddress {
        match self {
            Transfer::Write { addr, .. } | Transfer::Read { addr } => *addr,
        }
    }
}

/// How a transfer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The write was acknowledged.
    Written(IndexAddress),
    /// The read returned the value.
    Read(IndexAddress, Vec<u8>),
    /// The server aborted it with the code.
    Aborted(IndexAddress, AbortCode),
    /// No answer after every retry.
    TimedOut(IndexAddress),
    /// The answer was not one the client takes (the text says why).
    Failed(IndexAddress, &'static str),
}

impl Outcome {
    /// The object the transfer was about.
    pub fn addr(&self) -> IndexAddress {
        match self {
            Outcome::Written(a)
            | Outcome::Read(a, _)
            | Outcome::Aborted(a, _)
            | Outcome::TimedOut(a)
            | Outcome::Failed(a, _) => *a,
        }
    }
}

/// The connection's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conn {
    /// No connection.
    Closed,
    /// `s0/INIT` sent, the server's INIT awaited.
    Init,
    /// The confirmation sent, the server's VALID awaited.
    Confirm,
    /// Valid: commands go.
    Valid,
}

/// The frame the client sends next (or sent last, for retransmission).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Init,
    Confirm,
    /// Segment `k` of the current transfer.
    Segment(usize),
    Ack,
    Close,
}

/// The current transfer.
#[derive(Debug, Clone)]
struct Current {
    transfer: Transfer,
    transaction: u8,
    /// Segments of its request.
    segments: usize,
    /// Segments sent.
    sent: usize,
}

/// The SDO client of one CN; see the module doc.
#[derive(Debug, Clone)]
pub struct SdoClient {
    conn: Conn,
    /// The last SendSequenceNumber this client used.
    send_seq: u8,
    /// The last SendSequenceNumber received from the server.
    recv_seq: u8,
    /// The next transaction id.
    transaction: u8,
    queue: VecDeque<Transfer>,
    current: Option<Current>,
    /// The command data of the current transfer's request.
    data: Vec<u8>,
    next: Option<Next>,
    /// The last frame that expects an answer, when it went and how often.
    waiting: Option<(Next, u64, u32)>,
    /// A server frame is to be acknowledged.
    ack_due: bool,
    closing: bool,
    timeout_ns: u64,
    retries: u32,
}

impl Default for SdoClient {
    fn default() -> Self {
        SdoClient::new(DEFAULT_TIMEOUT_NS, DEFAULT_RETRIES)
    }
}

impl SdoClient {
    /// A client that waits `timeout_ns` for each answer and sends a frame
    /// up to `retries` more times.
    pub fn new(timeout_ns: u64, retries: u32) -> SdoClient {
        SdoClient {
            conn: Conn::Closed,
            send_seq: 0,
            recv_seq: 0,
            transaction: 0,
            queue: VecDeque::new(),
            current: None,
            data: Vec::with_capacity(MAX_SEGMENT_SIZE),
            next: None,
            waiting: None,
            ack_due: false,
            closing: false,
            timeout_ns,
            retries,
        }
    }

    /// Queues a transfer; it starts when the ones before it ended.
    pub fn push(&mut self, t: Transfer) {
        self.queue.push_back(t);
        self.plan();
    }

    /// Transfers queued or running.
    pub fn pending(&self) -> usize {
        self.queue.len() + usize::from(self.current.is_some())
    }

    /// Whether the client has a frame to send now.
    pub fn wants_to_send(&self) -> bool {
        self.next.is_some()
    }

    /// Whether it awaits a frame from the server (the MN should invite the
    /// CN).
    pub fn awaiting(&self) -> bool {
        self.waiting.is_some() && self.next.is_none()
    }

    /// Whether nothing is queued, running, awaited or to be sent.
    pub fn idle(&self) -> bool {
        self.pending() == 0 && self.next.is_none() && self.waiting.is_none()
    }

    /// Closes the connection once the running transfer ended (a frame with
    /// both connection fields NONE); queued transfers are dropped.
    pub fn close(&mut self) {
        self.queue.clear();
        self.closing = true;
        self.plan();
    }

    /// The frame to send now, if any, sent at `now` (monotonic ns).
    pub fn next_frame(&mut self, now: u64) -> Option<Sdo<'_>> {
        let next = self.next.take()?;
        let valid = SeqLayer {
            receive_seq: self.recv_seq,
            receive_con: Con::VALID,
            send_seq: self.send_seq,
            send_con: Con::VALID,
        };
        let retry = self.waiting.is_some_and(|(n, ..)| n == next);
        let seq = match next {
            Next::Init => SeqLayer {
                receive_seq: 0,
                receive_con: Con::NONE,
                send_seq: self.send_seq,
                send_con: Con::INIT,
            },
            Next::Confirm => SeqLayer {
                receive_con: Con::INIT,
                ..valid
            },
            Next::Segment(_) if !retry => {
                self.send_seq = (self.send_seq + 1) % 64;
                SeqLayer {
                    send_seq: self.send_seq,
                    ..valid
                }
            }
            Next::Segment(_) | Next::Ack => valid,
            Next::Close => SeqLayer {
                receive_con: Con::NONE,
                send_con: Con::NONE,
                ..valid
            },
        };
        match next {
            Next::Init => {
                self.conn = Conn::Init;
                self.wait(next, now, retry);
            }
            Next::Confirm => self.wait(next, now, retry),
            Next::Segment(k) => {
                self.ack_due = false;
                let c = self.current.as_mut().expect("a segment of a transfer");
                c.sent = c.sent.max(k + 1);
                if c.sent < c.segments {
                    self.next = Some(Next::Segment(c.sent));
                }
                self.wait(next, now, retry);
            }
            Next::Ack => self.ack_due = false,
            Next::Close => {
                self.conn = Conn::Closed;
                self.closing = false;
                self.waiting = None;
            }
        }
        let command = match next {
            Next::Segment(k) => {
                let c = self.current.as_ref().expect("a segment of a transfer");
                let command = match c.transfer {
                    Transfer::Write { .. } => CommandId::WRITE_BY_INDEX,
                    Transfer::Read { .. } => CommandId::READ_BY_INDEX,
                };
                segments(c.transaction, command, false, &self.data, MAX_SEGMENT_SIZE)
                    .nth(k)
                    .expect("the segment exists")
            }
            _ => CommandLayer::NIL,
        };
        Some(Sdo { seq, command })
    }

    fn wait(&mut self, next: Next, now: u64, retry: bool) {
        let tries = match self.waiting {
            Some((_, _, t)) if retry => t + 1,
            _ => 0,
        };
        self.waiting = Some((next, now, tries));
    }

    /// Takes the server's frame, received at `now`; the outcome of the
    /// transfer it ended, if any.
    pub fn receive(&mut self, sdo: &Sdo<'_>, now: u64) -> Option<Outcome> {
        let s = sdo.seq;
        let _ = now;
        match self.conn {
            Conn::Closed => return None,
            Conn::Init => {
                if s.receive_con == Con::INIT && s.send_con == Con::INIT {
                    self.recv_seq = s.send_seq;
                    self.waiting = None;
                    self.conn = Conn::Confirm;
                    self.next = Some(Next::Confirm);
                }
                return None;
            }
            Conn::Confirm => {
                if s.receive_con == Con::VALID {
                    self.recv_seq = s.send_seq;
                    self.waiting = None;
                    self.conn = Conn::Valid;
                    self.plan();
                }
                return None;
            }
            Conn::Valid => {}
        }
        if s.receive_con == Con::ERROR {
            // The server asks for the last frame again.
            if let Some((n, ..)) = self.waiting {
                self.next = Some(n);
            }
            return None;
        }
        if s.send_con == Con::NONE {
            // The server closed the connection: start afresh.
            self.conn = Conn::Closed;
            self.waiting = None;
            self.restart_current();
            self.plan();
            return None;
        }
        let c = &sdo.command;
        if c.is_nil() {
            self.recv_seq = s.send_seq;
            return None;
        }
        if s.send_seq == self.recv_seq {
            // A frame seen already (our acknowledgement was lost).
            self.ack_due = true;
            self.plan();
            return None;
        }
        self.recv_seq = s.send_seq;
        self.ack_due = true;
        let cur = match &self.current {
            Some(cur) if c.response && c.transaction == cur.transaction => cur,
            _ => {
                self.plan();
                return None;
            }
        };
        let addr = cur.transfer.addr();
        let outcome = if let Some(code) = c.abort_code() {
            Outcome::Aborted(addr, code)
        } else if c.abort {
            Outcome::Failed(addr, "an abort without a 4-byte code")
        } else {
            match (&cur.transfer, c.segmentation) {
                (Transfer::Write { .. }, _) => Outcome::Written(addr),
                (Transfer::Read { .. }, Segmentation::Expedited) => {
                    Outcome::Read(addr, c.data.to_vec())
                }
                (Transfer::Read { .. }, _) => {
                    Outcome::Failed(addr, "a segmented read response (not taken)")
                }
            }
        };
        self.current = None;
        self.waiting = None;
        self.next = None;
        self.plan();
        Some(outcome)
    }

    /// Checks the timeout at `now`: the frame goes again, or the transfer
    /// ends as timed out.
    pub fn tick(&mut self, now: u64) -> Option<Outcome> {
        let (n, since, tries) = self.waiting?;
        if self.next.is_some() || now < since + self.timeout_ns {
            return None;
        }
        if tries < self.retries {
            self.next = Some(n);
            return None;
        }
        // Given up: the connection is set up afresh for the next transfer.
        self.waiting = None;
        self.conn = Conn::Closed;
        self.next = None;
        let addr = self.current.take().map(|c| c.transfer.addr());
        self.plan();
        addr.map(Outcome::TimedOut)
    }

    fn restart_current(&mut self) {
        if let Some(c) = self.current.take() {
            self.queue.push_front(c.transfer);
        }
    }

    /// Decides the next frame from the state.
    fn plan(&mut self) {
        if self.next.is_some() {
            return;
        }
        if self.current.is_none() && !self.closing {
            if let Some(t) = self.queue.pop_front() {
                self.start(t);
            }
        }
        let running = self.current.is_some();
        self.next = match self.conn {
            Conn::Closed if running => {
                self.send_seq = 0;
                self.recv_seq = 0;
                Some(Next::Init)
            }
            Conn::Valid if running => {
                let c = self.current.as_ref().expect("running");
                (c.sent < c.segments).then_some(Next::Segment(c.sent))
            }
            Conn::Valid if self.ack_due => Some(Next::Ack),
            Conn::Valid if self.closing && self.waiting.is_none() => Some(Next::Close),
            _ => None,
        };
        if self.next.is_none() && self.closing && self.conn == Conn::Closed {
            self.closing = false;
        }
    }

    fn start(&mut self, t: Transfer) {
        self.data.clear();
        self.data.extend_from_slice(&t.addr().to_bytes());
        if let Transfer::Write { value, .. } = &t {
            self.data.extend_from_slice(value);
        }
        let command = CommandId::WRITE_BY_INDEX;
        let n = segments(0, command, false, &self.data, MAX_SEGMENT_SIZE).count();
        self.current = Some(Current {
            transfer: t,
            transaction: self.transaction,
            segments: n,
            sent: 0,
        });
        self.transaction = self.transaction.wrapping_add(1);
    }
}

#[cfg(test)]
#[path = "sdo_client_tests.rs"]
mod tests;
