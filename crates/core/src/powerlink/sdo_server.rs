//! The SDO server of one emulated CN: the sequence layer's responder and
//! the command layer's WriteByIndex / ReadByIndex against the CN's object
//! dictionary ([`super::od`]), expedited and segmented, both ways — pure,
//! so that [`super::cn`] only hands it the SDO frames addressed to its CN
//! and asks for the next frame to send when the MN invites the CN.
//!
//! # The sequence layer (captures README, rule 22)
//!
//! The client (the MN) opens with SendCon 1 (initialisation); the server
//! answers `r<n>/1 s0/1` with the client's sequence number; the client
//! confirms with SendCon 2 (valid) and the server answers `r<n>/2 s0/2`.
//! From there every frame carrying a command advances its sender's
//! sequence number by one (6 bits, modulo 64), and ReceiveSequenceNumber
//! echoes the last number received. A frame whose number repeats the last
//! one is an acknowledgement (no command) or a repeat of a command whose
//! answer was lost: the server sends that answer again. SendCon 3 asks for
//! the last frame again; both Con fields 0 close the connection.
//!
//! # The command layer (rule 23)
//!
//! - **WriteByIndex**, expedited: address + value in one frame; the answer
//!   is a response with no data, or an abort with its code.
//! - **WriteByIndex**, segmented: Initiate (data size, address, first
//!   bytes), Segment…, Complete. Each segment is acknowledged by a
//!   sequence-only frame; the value is written, and answered, at Complete.
//! - **ReadByIndex**: the value in one response when it fits a frame
//!   ([`SEGMENT_MAX`]), else Initiate, Segment… and Complete responses, one
//!   per invitation.
//! - Anything else is aborted with 0x05040001 (command unknown); a
//!   client's abort drops the transfer in progress.
//!
//! A CN sends only when invited (SoA UnspecifiedInvite to its id): the
//! server keeps what it has to send ([`SdoServer::pending`] frames, which
//! the CN announces in RS/PR of its PRes and StatusResponse) and builds one
//! frame per invitation ([`SdoServer::next_frame`]). The frame and the transfer
//! buffers are made by [`SdoServer::new`]: nothing allocates afterwards.

use super::od::{Od, DOMAIN_MAX};
use super::sdo::{
    parse_read_by_index_request, parse_write_by_index_request, AbortCode, CommandId, CommandLayer,
    Con, IndexAddress, Sdo, Segmentation, SeqLayer, DATA_SIZE_LEN, SDO_HEADER_LEN,
};
use super::ASND_HEADER_LEN;

/// The command data one frame carries: the CN's asynchronous MTU less the
/// ASnd and SDO headers.
pub const SEGMENT_MAX: usize = super::od::ASYNC_MTU as usize - ASND_HEADER_LEN - SDO_HEADER_LEN;
/// The largest transfer: the scratch domain and its address.
const TRANSFER_MAX: usize = DOMAIN_MAX + IndexAddress::LEN;

/// Where the connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Closed,
    /// Initialisation answered, waiting for the client's "valid".
    Init,
    Valid,
}

/// What the server has counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdoCounts {
    /// Commands received, by command id (segments of one transfer count
    /// once, at their first).
    pub received: [u64; 256],
    /// Commands answered (a response or an abort sent), by command id.
    pub answered: [u64; 256],
    /// Aborts sent: (code, times), in the order first seen; at most 16
    /// codes, the others in `aborts_other`.
    pub aborts: [(u32, u64); 16],
    /// Aborts of codes beyond the first 16.
    pub aborts_other: u64,
    /// Connections opened (initialisations).
    pub connections: u64,
    /// Sequence-only frames received (acknowledgements, set-up, close).
    pub sequence_only: u64,
    /// Frames out of sequence, dropped.
    pub out_of_sequence: u64,
}

impl Default for SdoCounts {
    fn default() -> Self {
        SdoCounts {
            received: [0; 256],
            answered: [0; 256],
            aborts: [(0, 0); 16],
            aborts_other: 0,
            connections: 0,
            sequence_only: 0,
            out_of_sequence: 0,
        }
    }
}

impl SdoCounts {
    fn abort(&mut self, code: AbortCode) {
        match self
            .aborts
            .iter_mut()
            .find(|(c, n)| *c == code.0 || *n == 0)
        {
            Some(slot) => *slot = (code.0, slot.1 + 1),
            None => self.aborts_other += 1,
        }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &SdoCounts) {
        for i in 0..256 {
            self.received[i] += other.received[i];
            self.answered[i] += other.answered[i];
        }
        for &(code, n) in other.aborts.iter().filter(|(_, n)| *n > 0) {
            match self.aborts.iter_mut().find(|(c, m)| *c == code || *m == 0) {
                Some(slot) => *slot = (code, slot.1 + n),
                None => self.aborts_other += n,
            }
        }
        self.aborts_other += other.aborts_other;
        self.connections += other.connections;
        self.sequence_only += other.sequence_only;
        self.out_of_sequence += other.out_of_sequence;
    }

    /// The aborts sent, (code, times), codes in the order first seen.
    pub fn abort_codes(&self) -> impl Iterator<Item = (AbortCode, u64)> + '_ {
        self.aborts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|&(c, n)| (AbortCode(c), n))
    }
}

/// One command-layer frame to send: header fields and data.
#[derive(Debug, Clone)]
struct Out {
    transaction: u8,
    abort: bool,
    segmentation: Segmentation,
    command: CommandId,
    data_size: Option<u32>,
    data: Vec<u8>,
    len: usize,
    /// A command layer (else a sequence-only frame).
    command_layer: bool,
}

impl Out {
    fn new() -> Out {
        Out {
            transaction: 0,
            abort: false,
            segmentation: Segmentation::Expedited,
            command: CommandId::NIL,
            data_size: None,
            data: vec![0; SEGMENT_MAX],
            len: 0,
            command_layer: false,
        }
    }

    /// Becomes a copy of `other` in its own buffer (no allocation).
    fn copy_from(&mut self, other: &Out) {
        self.transaction = other.transaction;
        self.abort = other.abort;
        self.segmentation = other.segmentation;
        self.command = other.command;
        self.data_size = other.data_size;
        self.data[..other.len].copy_from_slice(&other.data[..other.len]);
        self.len = other.len;
        self.command_layer = other.command_layer;
    }
}

/// A transfer in progress: the command's data gathered (download) or to
/// send (upload).
#[derive(Debug, Clone)]
struct Transfer {
    active: bool,
    transaction: u8,
    command: CommandId,
    buf: Vec<u8>,
    len: usize,
    /// Upload: bytes already sent.
    sent: usize,
}

/// One CN's SDO server; see the module doc.
#[derive(Debug, Clone)]
pub struct SdoServer {
    link: Link,
    /// The client's last sequence number.
    recv_seq: u8,
    /// Our last sequence number.
    send_seq: u8,
    /// A sequence-only frame is owed (set-up, segment acknowledgement).
    ack: bool,
    /// A command response is owed.
    response: bool,
    reply: Out,
    /// The frame [`SdoServer::next_frame`] built last (sent again on request).
    sent: Out,
    sent_seq: SeqLayer,
    download: Transfer,
    upload: Transfer,
    counts: SdoCounts,
}

impl Default for SdoServer {
    fn default() -> Self {
        SdoServer::new()
    }
}

impl SdoServer {
    /// A closed server, its buffers made.
    pub fn new() -> SdoServer {
        let transfer = || Transfer {
            active: false,
            transaction: 0,
            command: CommandId::NIL,
            buf: vec![0; TRANSFER_MAX],
            len: 0,
            sent: 0,
        };
        SdoServer {
            link: Link::Closed,
            recv_seq: 0,
            send_seq: 0,
            ack: false,
            response: false,
            reply: Out::new(),
            sent: Out::new(),
            sent_seq: SeqLayer::default(),
            download: transfer(),
            upload: transfer(),
            counts: SdoCounts::default(),
        }
    }

    /// What it counted.
    pub fn counts(&self) -> &SdoCounts {
        &self.counts
    }

    /// True when the connection is open and valid.
    pub fn is_open(&self) -> bool {
        self.link == Link::Valid
    }

    /// Closes the connection and drops every transfer (a reset of the CN).
    pub fn close(&mut self) {
        self.link = Link::Closed;
        self.ack = false;
        self.response = false;
        self.download.active = false;
        self.upload.active = false;
    }

    /// Frames waiting for an invitation (0–7, as RS carries it).
    pub fn pending(&self) -> u8 {
        let upload = match self.upload.active && !self.response {
            true => (self.upload.len - self.upload.sent).div_ceil(SEGMENT_MAX),
            false => 0,
        };
        let n = usize::from(self.ack) * usize::from(!self.response && upload == 0)
            + usize::from(self.response)
            + upload;
        n.min(7) as u8
    }

    /// Takes one SDO frame from the client, with `od` the CN's dictionary.
    pub fn receive(&mut self, sdo: &Sdo<'_>, od: &mut Od) {
        let s = sdo.seq;
        match s.send_con {
            Con::NONE => {
                self.counts.sequence_only += 1;
                self.close();
            }
            Con::INIT => {
                self.counts.sequence_only += 1;
                self.counts.connections += 1;
                self.close();
                self.link = Link::Init;
                self.recv_seq = s.send_seq;
                self.send_seq = 0;
                self.ack = true;
            }
            Con::ERROR => {
                // Retransmission request: the last frame again.
                self.reply.copy_from(&self.sent);
                if self.reply.command_layer {
                    self.send_seq = self.sent_seq.send_seq.wrapping_sub(1) & 63;
                    self.response = true;
                } else {
                    self.ack = true;
                }
            }
            _ => match self.link {
                Link::Closed => self.counts.out_of_sequence += 1,
                Link::Init => {
                    self.link = Link::Valid;
                    self.recv_seq = s.send_seq;
                    self.ack = true;
                    if !sdo.command.is_nil() {
                        self.command(&sdo.command, od);
                    }
                }
                Link::Valid => {
                    if s.send_seq == (self.recv_seq + 1) & 63 {
                        self.recv_seq = s.send_seq;
                        if sdo.command.is_nil() {
                            self.counts.sequence_only += 1;
                        } else {
                            self.command(&sdo.command, od);
                        }
                    } else if s.send_seq == self.recv_seq {
                        if sdo.command.is_nil() {
                            // An acknowledgement of ours.
                            self.counts.sequence_only += 1;
                        } else if self.sent.command_layer
                            && self.sent.transaction == sdo.command.transaction
                        {
                            // Our answer was lost: send it again.
                            self.reply.copy_from(&self.sent);
                            self.send_seq = self.sent_seq.send_seq.wrapping_sub(1) & 63;
                            self.response = true;
                        }
                    } else {
                        self.counts.out_of_sequence += 1;
                    }
                }
            },
        }
    }

    /// Runs one command-layer frame from the client.
    fn command(&mut self, c: &CommandLayer<'_>, od: &mut Od) {
        if c.response {
            return;
        }
        if c.abort {
            self.download.active = false;
            self.upload.active = false;
            return;
        }
        match c.segmentation {
            Segmentation::Segment | Segmentation::Complete => {
                if !self.download.active || c.transaction != self.download.transaction {
                    return self.abort_reply(c.transaction, c.command, AbortCode::INVALID_SEQUENCE);
                }
                let d = &mut self.download;
                let end = d.len + c.data.len();
                if end > d.buf.len() {
                    d.active = false;
                    return self.abort_reply(c.transaction, c.command, AbortCode::LENGTH_TOO_HIGH);
                }
                d.buf[d.len..end].copy_from_slice(c.data);
                d.len = end;
                if c.segmentation == Segmentation::Segment {
                    self.ack = true;
                } else {
                    d.active = false;
                    self.finish_write(od);
                }
                return;
            }
            _ => {}
        }
        self.counts.received[usize::from(c.command.0)] += 1;
        match (c.command, c.segmentation) {
            (CommandId::WRITE_BY_INDEX, Segmentation::Expedited) => {
                match parse_write_by_index_request(c.data) {
                    Ok((a, value)) => match od.write(a.index, a.subindex, value) {
                        Ok(()) => self.reply(c.transaction, c.command, &[]),
                        Err(code) => self.abort_reply(c.transaction, c.command, code),
                    },
                    Err(_) => self.abort_reply(c.transaction, c.command, AbortCode::LENGTH_TOO_LOW),
                }
            }
            (CommandId::WRITE_BY_INDEX, Segmentation::Initiate) => {
                if c.data.len() < IndexAddress::LEN {
                    return self.abort_reply(c.transaction, c.command, AbortCode::LENGTH_TOO_LOW);
                }
                let d = &mut self.download;
                let n = c.data.len().min(d.buf.len());
                d.buf[..n].copy_from_slice(&c.data[..n]);
                d.len = n;
                d.active = true;
                d.transaction = c.transaction;
                d.command = c.command;
                self.ack = true;
            }
            (CommandId::READ_BY_INDEX, Segmentation::Expedited) => {
                let a = match parse_read_by_index_request(c.data) {
                    Ok(a) => a,
                    Err(_) => {
                        return self.abort_reply(
                            c.transaction,
                            c.command,
                            AbortCode::LENGTH_MISMATCH,
                        )
                    }
                };
                let u = &mut self.upload;
                match od.read(a.index, a.subindex, &mut u.buf) {
                    Ok(n) if n <= SEGMENT_MAX => {
                        self.reply.data[..n].copy_from_slice(&u.buf[..n]);
                        self.reply_len(c.transaction, c.command, n);
                    }
                    Ok(n) => {
                        u.len = n;
                        u.sent = 0;
                        u.active = true;
                        u.transaction = c.transaction;
                        u.command = c.command;
                    }
                    Err(code) => self.abort_reply(c.transaction, c.command, code),
                }
            }
            _ => self.abort_reply(c.transaction, c.command, AbortCode::COMMAND_UNKNOWN),
        }
    }

    /// Writes the gathered segmented download and answers it.
    fn finish_write(&mut self, od: &mut Od) {
        let d = &self.download;
        let (t, cmd) = (d.transaction, d.command);
        let result = match parse_write_by_index_request(&d.buf[..d.len]) {
            Ok((a, value)) => od.write(a.index, a.subindex, value),
            Err(_) => Err(AbortCode::LENGTH_TOO_LOW),
        };
        match result {
            Ok(()) => self.reply(t, cmd, &[]),
            Err(code) => self.abort_reply(t, cmd, code),
        }
    }

    fn reply(&mut self, transaction: u8, command: CommandId, data: &[u8]) {
        self.reply.data[..data.len()].copy_from_slice(data);
        self.reply_len(transaction, command, data.len());
    }

    fn reply_len(&mut self, transaction: u8, command: CommandId, len: usize) {
        let r = &mut self.reply;
        r.transaction = transaction;
        r.abort = false;
        r.segmentation = Segmentation::Expedited;
        r.command = command;
        r.data_size = None;
        r.len = len;
        r.command_layer = true;
        self.response = true;
    }

    fn abort_reply(&mut self, transaction: u8, command: CommandId, code: AbortCode) {
        self.reply(transaction, command, &code.to_bytes());
        self.reply.abort = true;
    }

    /// Builds the next frame to send (the CN was invited) and returns it,
    /// or `None` when nothing is owed.
    pub fn next_frame(&mut self) -> Option<Sdo<'_>> {
        let con = match self.link {
            Link::Closed => return None,
            Link::Init => Con::INIT,
            Link::Valid => Con::VALID,
        };
        if std::mem::take(&mut self.response) {
            self.sent.copy_from(&self.reply);
            self.count_answer();
        } else if self.upload.active {
            let u = &mut self.upload;
            let first = u.sent == 0;
            let room = SEGMENT_MAX - if first { DATA_SIZE_LEN } else { 0 };
            let n = (u.len - u.sent).min(room);
            let last = u.sent + n == u.len;
            let s = &mut self.sent;
            s.transaction = u.transaction;
            s.abort = false;
            s.command = u.command;
            s.segmentation = match (first, last) {
                (true, _) => Segmentation::Initiate,
                (false, false) => Segmentation::Segment,
                (false, true) => Segmentation::Complete,
            };
            // openPOWERLINK counts the data size's own 4 bytes in it.
            s.data_size = first.then_some((u.len + DATA_SIZE_LEN) as u32);
            s.data[..n].copy_from_slice(&u.buf[u.sent..u.sent + n]);
            s.len = n;
            s.command_layer = true;
            u.sent += n;
            if last {
                u.active = false;
                self.counts.answered[usize::from(u.command.0)] += 1;
            }
        } else if self.ack {
            self.sent.command_layer = false;
        } else {
            return None;
        }
        self.ack = false;
        if self.sent.command_layer {
            self.send_seq = (self.send_seq + 1) & 63;
        }
        self.sent_seq = SeqLayer {
            receive_seq: self.recv_seq,
            receive_con: con,
            send_seq: self.send_seq,
            send_con: con,
        };
        Some(self.sent_frame())
    }

    /// The frame [`SdoServer::next_frame`] built last.
    pub fn sent_frame(&self) -> Sdo<'_> {
        let s = &self.sent;
        if !s.command_layer {
            return Sdo::sequence_only(self.sent_seq);
        }
        let data = &s.data[..s.len];
        Sdo {
            seq: self.sent_seq,
            command: CommandLayer {
                transaction: s.transaction,
                response: true,
                abort: s.abort,
                segmentation: s.segmentation,
                command: s.command,
                segment_size: (data.len() + s.data_size.map_or(0, |_| DATA_SIZE_LEN)) as u16,
                data_size: s.data_size,
                data,
            },
        }
    }

    fn count_answer(&mut self) {
        let r = &self.reply;
        if r.segmentation == Segmentation::Expedited {
            self.counts.answered[usize::from(r.command.0)] += 1;
        }
        if r.abort {
            let code = u32::from_le_bytes([r.data[0], r.data[1], r.data[2], r.data[3]]);
            self.counts.abort(AbortCode(code));
        }
    }
}
