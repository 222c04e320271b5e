//! From the bytes of a perf ring to [`Event`]s: the records the kernel
//! writes ([`Records`]), and one tracepoint's raw payload turned into an
//! [`EventKind`] by its fields' names ([`Decoder`], over the layout its
//! `format` file gives, [`super::format`]).
//!
//! **Records.** The tracer opens every event with `sample_type = TID |
//! TIME | CPU | RAW` and `sample_id_all`, so the ring holds, each record
//! behind an 8-byte header (`u32 type, u16 misc, u16 size`, the size
//! counting the header):
//!
//! - `PERF_RECORD_SAMPLE` (9): `u32 pid, u32 tid, u64 time, u32 cpu, u32
//!   reserved, u32 raw_size, u8 raw[raw_size]` (padded to 8 bytes);
//! - `PERF_RECORD_LOST` (2): `u64 id, u64 lost`, then the sample id (`u32
//!   pid, u32 tid, u64 time, u32 cpu, u32 reserved`);
//! - anything else (none is asked for) is skipped by its size.
//!
//! **Which tracepoint.** All tracepoints of a CPU share its ring, and a
//! raw payload starts with `common_type`, the tracepoint's id: a
//! [`Decoders`] set finds the decoder by it, without a per-sample id.
//!
//! **By name.** [`Decoder::new`] looks up, once, the fields a kind needs
//! and refuses a format without one (naming it); decoding is then reading
//! at the offsets the kernel gave. What a field holds is taken from its
//! size and sign (`prev_state` as `long` or `unsigned int` alike), and
//! optional fields are optional (`hrtimer_start`'s `softexpires`, absent on
//! old kernels, falls back to `expires`; its `function` and `mode` are not
//! read).

use std::fmt;

use super::event::{Event, EventKind};
use super::format::{Field, Format};

/// The tracepoints jitterlab reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TracePoint {
    /// `sched:sched_waking`.
    SchedWaking,
    /// `sched:sched_wakeup`.
    SchedWakeup,
    /// `sched:sched_switch`.
    SchedSwitch,
    /// `timer:hrtimer_start`.
    HrtimerStart,
    /// `timer:hrtimer_expire_entry`.
    HrtimerExpireEntry,
    /// `irq:irq_handler_entry`.
    IrqHandlerEntry,
    /// `irq:irq_handler_exit`.
    IrqHandlerExit,
    /// `irq:softirq_entry`.
    SoftirqEntry,
    /// `irq:softirq_exit`.
    SoftirqExit,
}

impl TracePoint {
    /// Every tracepoint, in the order the issue lists them.
    pub const ALL: [TracePoint; 9] = [
        TracePoint::SchedWaking,
        TracePoint::SchedWakeup,
        TracePoint::SchedSwitch,
        TracePoint::HrtimerStart,
        TracePoint::HrtimerExpireEntry,
        TracePoint::IrqHandlerEntry,
        TracePoint::IrqHandlerExit,
        TracePoint::SoftirqEntry,
        TracePoint::SoftirqExit,
    ];

    /// Its subsystem: the directory under tracefs' `events/`.
    pub fn system(self) -> &'static str {
        match self {
            TracePoint::SchedWaking | TracePoint::SchedWakeup | TracePoint::SchedSwitch => "sched",
            TracePoint::HrtimerStart | TracePoint::HrtimerExpireEntry => "timer",
            _ => "irq",
        }
    }

    /// Its name within the subsystem.
    pub fn name(self) -> &'static str {
        match self {
            TracePoint::SchedWaking => "sched_waking",
            TracePoint::SchedWakeup => "sched_wakeup",
            TracePoint::SchedSwitch => "sched_switch",
            TracePoint::HrtimerStart => "hrtimer_start",
            TracePoint::HrtimerExpireEntry => "hrtimer_expire_entry",
            TracePoint::IrqHandlerEntry => "irq_handler_entry",
            TracePoint::IrqHandlerExit => "irq_handler_exit",
            TracePoint::SoftirqEntry => "softirq_entry",
            TracePoint::SoftirqExit => "softirq_exit",
        }
    }

    /// The fields its decoding needs, in the order [`Decoder`] keeps them.
    fn needs(self) -> &'static [&'static str] {
        match self {
            TracePoint::SchedWaking | TracePoint::SchedWakeup => &["pid", "prio", "target_cpu"],
            TracePoint::SchedSwitch => &[
                "prev_pid",
                "prev_comm",
                "prev_prio",
                "prev_state",
                "next_pid",
                "next_comm",
                "next_prio",
            ],
            TracePoint::HrtimerStart => &["common_pid", "hrtimer", "expires", "common_flags"],
            TracePoint::HrtimerExpireEntry => &["hrtimer", "now"],
            TracePoint::IrqHandlerEntry => &["irq", "name"],
            TracePoint::IrqHandlerExit => &["irq"],
            TracePoint::SoftirqEntry | TracePoint::SoftirqExit => &["vec"],
        }
    }
}

impl fmt::Display for TracePoint {
    /// `sched:sched_switch`, as `perf list` names it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.system(), self.name())
    }
}

/// A format that lacks a field a tracepoint's decoding needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingField {
    /// The tracepoint.
    pub point: TracePoint,
    /// The field.
    pub field: &'static str,
}

impl fmt::Display for MissingField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the format of tracepoint {} has no field {}",
            self.point, self.field
        )
    }
}

impl std::error::Error for MissingField {}

/// The bits of a record's `common_flags` that say it was written in an
/// interrupt's context: `TRACE_FLAG_HARDIRQ` (0x08), `TRACE_FLAG_SOFTIRQ`
/// (0x10) and `TRACE_FLAG_NMI` (0x40), stable since Linux 2.6 and 3.14.
pub const IRQ_CONTEXT: u64 = 0x08 | 0x10 | 0x40;

/// Turns one tracepoint's raw payloads into [`EventKind`]s.
#[derive(Debug, Clone)]
pub struct Decoder {
    point: TracePoint,
    /// The fields of [`TracePoint::needs`], in its order.
    fields: Vec<Field>,
    /// `hrtimer_start`'s `softexpires`, when the kernel records it.
    softexpires: Option<Field>,
}

impl Decoder {
    /// The decoder of `point` over its `format`; an error names the first
    /// field it needs that the format lacks.
    pub fn new(point: TracePoint, format: &Format) -> Result<Decoder, MissingField> {
        let fields = point
            .needs()
            .iter()
            .map(|&name| {
                format
                    .field(name)
                    .cloned()
                    .ok_or(MissingField { point, field: name })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let softexpires = (point == TracePoint::HrtimerStart)
            .then(|| format.field("softexpires").cloned())
            .flatten();
        Ok(Decoder {
            point,
            fields,
            softexpires,
        })
    }

    /// The tracepoint it decodes.
    pub fn point(&self) -> TracePoint {
        self.point
    }

    /// The event of one raw payload; `None` when the payload is too short
    /// for its fields.
    pub fn decode(&self, raw: &[u8]) -> Option<EventKind> {
        let f = &self.fields;
        let u32_of = |i: usize| f[i].int(raw).map(|v| v as u32);
        let i32_of = |i: usize| f[i].int(raw).map(|v| v as i32);
        Some(match self.point {
            TracePoint::SchedWaking => EventKind::Waking {
                pid: u32_of(0)?,
                prio: i32_of(1)?,
                target_cpu: u32_of(2)?,
            },
            TracePoint::SchedWakeup => EventKind::Wakeup {
                pid: u32_of(0)?,
                prio: i32_of(1)?,
                target_cpu: u32_of(2)?,
            },
            TracePoint::SchedSwitch => EventKind::Switch {
                prev_pid: u32_of(0)?,
                prev_comm: f[1].string(raw)?,
                prev_prio: i32_of(2)?,
                prev_state: f[3].bits(raw)?,
                next_pid: u32_of(4)?,
                next_comm: f[5].string(raw)?,
                next_prio: i32_of(6)?,
            },
            TracePoint::HrtimerStart => {
                let expires_ns = f[2].int(raw)? as u64;
                let softexpires_ns = match &self.softexpires {
                    Some(s) => s.int(raw)? as u64,
                    None => expires_ns,
                };
                // Armed in an interrupt's context: not by the thread.
                let irq = f[3].bits(raw)? & IRQ_CONTEXT != 0;
                EventKind::HrtimerStart {
                    pid: if irq { 0 } else { u32_of(0)? },
                    timer: f[1].bits(raw)?,
                    expires_ns,
                    softexpires_ns,
                }
            }
            TracePoint::HrtimerExpireEntry => EventKind::HrtimerExpire {
                timer: f[0].bits(raw)?,
                now_ns: f[1].int(raw)? as u64,
            },
            TracePoint::IrqHandlerEntry => EventKind::IrqEntry {
                irq: u32_of(0)?,
                name: f[1].string(raw)?,
            },
            TracePoint::IrqHandlerExit => EventKind::IrqExit { irq: u32_of(0)? },
            TracePoint::SoftirqEntry => EventKind::SoftirqEntry { vec: u32_of(0)? },
            TracePoint::SoftirqExit => EventKind::SoftirqExit { vec: u32_of(0)? },
        })
    }
}

/// The decoders of every tracepoint a tracer opened, found by the
/// `common_type` a payload starts with (its tracepoint's id).
#[derive(Debug, Clone, Default)]
pub struct Decoders {
    by_id: Vec<(u16, Decoder)>,
}

impl Decoders {
    /// Adds the decoder of the tracepoint whose id is `id`.
    pub fn add(&mut self, id: u32, decoder: Decoder) {
        self.by_id.push((id as u16, decoder));
    }

    /// The event of one raw payload: `None` when its `common_type` is none
    /// of ours, or it is too short.
    pub fn decode(&self, raw: &[u8]) -> Option<EventKind> {
        let id = u16::from_ne_bytes(raw.get(0..2)?.try_into().ok()?);
        let (_, d) = self.by_id.iter().find(|(i, _)| *i == id)?;
        d.decode(raw)
    }

    /// The [`Event`] of one record: a sample of ours decoded, a lost
    /// record as [`EventKind::Lost`]; `None` for anything else.
    pub fn event(&self, record: &Record<'_>) -> Option<Event> {
        match *record {
            Record::Sample {
                time_ns, cpu, raw, ..
            } => Some(Event {
                time_ns,
                cpu,
                kind: self.decode(raw)?,
            }),
            Record::Lost {
                time_ns,
                cpu,
                count,
            } => Some(Event {
                time_ns,
                cpu,
                kind: EventKind::Lost { count },
            }),
            Record::Other { .. } => None,
        }
    }
}

/// `PERF_RECORD_LOST`.
const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`.
const RECORD_SAMPLE: u32 = 9;

/// One record of a perf ring (module doc, **Records**).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A tracepoint sample.
    Sample {
        /// The process of the task that was running.
        pid: u32,
        /// The task (thread) that was running.
        tid: u32,
        /// When, ns of the event's clock.
        time_ns: u64,
        /// Where.
        cpu: u32,
        /// The tracepoint's raw record.
        raw: &'a [u8],
    },
    /// The kernel dropped `count` records.
    Lost {
        /// When it wrote this record (after the loss).
        time_ns: u64,
        /// Where.
        cpu: u32,
        /// How many were lost.
        count: u64,
    },
    /// A record of another type, skipped.
    Other {
        /// Its `type`.
        kind: u32,
    },
}

/// A record that does not fit the bytes it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadRecord {
    /// Where it starts.
    pub at: usize,
    /// Its type.
    pub kind: u32,
    /// The size its header or its raw size claims.
    pub size: usize,
    /// The bytes there are.
    pub left: usize,
}

impl fmt::Display for BadRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a perf record of type {} at byte {} claims {} bytes, {} are there",
            self.kind, self.at, self.size, self.left
        )
    }
}

impl std::error::Error for BadRecord {}

/// The records in a run of ring bytes, in order; the iteration ends after
/// the first record that does not fit.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Records<'a> {
    /// The records of `bytes`, whole records as a perf ring holds them.
    pub fn new(bytes: &'a [u8]) -> Records<'a> {
        Records { bytes, at: 0 }
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, BadRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.bytes.get(self.at..)?;
        if rest.is_empty() {
            return None;
        }
        let at = self.at;
        let bad = |kind, size| {
            Some(Err(BadRecord {
                at,
                kind,
                size,
                left: rest.len(),
            }))
        };
        let Some(kind) = u32_at(rest, 0) else {
            self.at = self.bytes.len();
            return bad(0, 8);
        };
        let size = rest
            .get(6..8)
            .map_or(0, |b| usize::from(u16::from_ne_bytes([b[0], b[1]])));
        if size < 8 || size > rest.len() {
            self.at = self.bytes.len();
            return bad(kind, size);
        }
        let rec = &rest[..size];
        self.at += size;
        let parsed = match kind {
            RECORD_SAMPLE => (|| {
                let raw_size = u32_at(rec, 32)? as usize;
                Some(Record::Sample {
                    pid: u32_at(rec, 8)?,
                    tid: u32_at(rec, 12)?,
                    time_ns: u64_at(rec, 16)?,
                    cpu: u32_at(rec, 24)?,
                    raw: rec.get(36..36 + raw_size)?,
                })
            })(),
            RECORD_LOST => (|| {
                Some(Record::Lost {
                    count: u64_at(rec, 16)?,
                    time_ns: u64_at(rec, 32)?,
                    cpu: u32_at(rec, 40)?,
                })
            })(),
            _ => Some(Record::Other { kind }),
        };
        match parsed {
            Some(r) => Some(Ok(r)),
            None => {
                self.at = self.bytes.len();
                bad(kind, size)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This kernel's (Linux 6.18) format file of `point`.
    fn fixture(point: TracePoint) -> Format {
        let text = match point {
            TracePoint::SchedWaking => {
                include_str!("../../../../tests/fixtures/tracefs/events/sched/sched_waking/format")
            }
            TracePoint::SchedWakeup => {
                include_str!("../../../../tests/fixtures/tracefs/events/sched/sched_wakeup/format")
            }
            TracePoint::SchedSwitch => {
                include_str!("../../../../tests/fixtures/tracefs/events/sched/sched_switch/format")
            }
            TracePoint::HrtimerStart => {
                include_str!("../../../../tests/fixtures/tracefs/events/timer/hrtimer_start/format")
            }
            TracePoint::HrtimerExpireEntry => include_str!(
                "../../../../tests/fixtures/tracefs/events/timer/hrtimer_expire_entry/format"
            ),
            TracePoint::IrqHandlerEntry => include_str!(
                "../../../../tests/fixtures/tracefs/events/irq/irq_handler_entry/format"
            ),
            TracePoint::IrqHandlerExit => include_str!(
                "../../../../tests/fixtures/tracefs/events/irq/irq_handler_exit/format"
            ),
            TracePoint::SoftirqEntry => {
                include_str!("../../../../tests/fixtures/tracefs/events/irq/softirq_entry/format")
            }
            TracePoint::SoftirqExit => {
                include_str!("../../../../tests/fixtures/tracefs/events/irq/softirq_exit/format")
            }
        };
        Format::parse(text).unwrap()
    }

    /// A raw payload of `len` bytes with `common_type` and `common_pid`,
    /// written at the offsets of the kernel's common header.
    fn payload(len: usize, id: u16, pid: i32) -> Vec<u8> {
        let mut raw = vec![0u8; len];
        raw[0..2].copy_from_slice(&id.to_ne_bytes());
        raw[4..8].copy_from_slice(&pid.to_ne_bytes());
        raw
    }

    fn put(raw: &mut [u8], at: usize, bytes: &[u8]) {
        raw[at..at + bytes.len()].copy_from_slice(bytes);
    }

    fn decode(point: TracePoint, raw: &[u8]) -> Option<EventKind> {
        Decoder::new(point, &fixture(point)).unwrap().decode(raw)
    }

    #[test]
    fn every_tracepoint_has_this_kernels_id_in_the_fixture() {
        let ids: Vec<(String, Option<u32>)> = TracePoint::ALL
            .iter()
            .map(|&p| (p.to_string(), fixture(p).id))
            .collect();
        assert_eq!(
            ids,
            [
                ("sched:sched_waking", 375),
                ("sched:sched_wakeup", 374),
                ("sched:sched_switch", 372),
                ("timer:hrtimer_start", 460),
                ("timer:hrtimer_expire_entry", 459),
                ("irq:irq_handler_entry", 225),
                ("irq:irq_handler_exit", 224),
                ("irq:softirq_entry", 223),
                ("irq:softirq_exit", 222),
            ]
            .map(|(n, id)| (n.to_string(), Some(id)))
        );
    }

    #[test]
    fn sched_switch_decodes_names_priorities_and_state() {
        // Offsets of Linux 6.18, written by hand (not from the parser).
        let mut raw = payload(64, 372, 4242);
        put(&mut raw, 8, b"cyclictest\0");
        put(&mut raw, 24, &4242i32.to_ne_bytes());
        put(&mut raw, 28, &4i32.to_ne_bytes());
        put(&mut raw, 32, &1i64.to_ne_bytes());
        put(&mut raw, 40, b"swapper/1\0");
        put(&mut raw, 56, &0i32.to_ne_bytes());
        put(&mut raw, 60, &120i32.to_ne_bytes());
        assert_eq!(
            decode(TracePoint::SchedSwitch, &raw),
            Some(EventKind::Switch {
                prev_pid: 4242,
                prev_comm: "cyclictest".to_string(),
                prev_prio: 4,
                prev_state: 1,
                next_pid: 0,
                next_comm: "swapper/1".to_string(),
                next_prio: 120,
            })
        );
        // Preempted while running, with the kernel's "+" bit (0x100).
        put(&mut raw, 32, &0x100i64.to_ne_bytes());
        let Some(EventKind::Switch { prev_state, .. }) = decode(TracePoint::SchedSwitch, &raw)
        else {
            panic!("not a switch");
        };
        assert_eq!(prev_state, 0x100);
        // Too short for next_prio.
        assert_eq!(decode(TracePoint::SchedSwitch, &raw[..62]), None);
    }

    #[test]
    fn a_kernel_with_an_unsigned_int_prev_state_decodes_alike() {
        let text = "name: sched_switch\nID: 316\nformat:\n\
            \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
            \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
            \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
            \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;\n\
            \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
            \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
            \tfield:unsigned int prev_state;\toffset:32;\tsize:4;\tsigned:0;\n\
            \tfield:char next_comm[16];\toffset:36;\tsize:16;\tsigned:1;\n\
            \tfield:pid_t next_pid;\toffset:52;\tsize:4;\tsigned:1;\n\
            \tfield:int next_prio;\toffset:56;\tsize:4;\tsigned:1;\n";
        let format = Format::parse(text).unwrap();
        let mut raw = payload(60, 316, 7);
        put(&mut raw, 8, b"plc_task\0");
        put(&mut raw, 24, &7i32.to_ne_bytes());
        put(&mut raw, 28, &9i32.to_ne_bytes());
        put(&mut raw, 32, &2u32.to_ne_bytes());
        put(&mut raw, 36, b"kworker/0:1\0");
        put(&mut raw, 52, &31i32.to_ne_bytes());
        put(&mut raw, 56, &120i32.to_ne_bytes());
        let d = Decoder::new(TracePoint::SchedSwitch, &format).unwrap();
        assert_eq!(
            d.decode(&raw),
            Some(EventKind::Switch {
                prev_pid: 7,
                prev_comm: "plc_task".to_string(),
                prev_prio: 9,
                prev_state: 2,
                next_pid: 31,
                next_comm: "kworker/0:1".to_string(),
                next_prio: 120,
            })
        );
    }

    #[test]
    fn waking_and_wakeup_decode_pid_priority_and_target() {
        let mut raw = payload(36, 375, 17);
        put(&mut raw, 8, b"cyclictest\0");
        put(&mut raw, 24, &4242i32.to_ne_bytes());
        put(&mut raw, 28, &4i32.to_ne_bytes());
        put(&mut raw, 32, &1i32.to_ne_bytes());
        assert_eq!(
            decode(TracePoint::SchedWaking, &raw),
            Some(EventKind::Waking {
                pid: 4242,
                prio: 4,
                target_cpu: 1
            })
        );
        assert_eq!(
            decode(TracePoint::SchedWakeup, &raw),
            Some(EventKind::Wakeup {
                pid: 4242,
                prio: 4,
                target_cpu: 1
            })
        );
    }

    #[test]
    fn hrtimer_start_and_expiry_decode_the_timer_and_its_times() {
        let mut raw = payload(48, 460, 4242);
        put(&mut raw, 8, &0xffff_8880_1234_5678u64.to_ne_bytes());
        put(&mut raw, 16, &0xffff_ffff_8100_0000u64.to_ne_bytes());
        put(&mut raw, 24, &1_000_050_000i64.to_ne_bytes());
        put(&mut raw, 32, &1_000_000_000i64.to_ne_bytes());
        put(&mut raw, 40, &1u32.to_ne_bytes());
        assert_eq!(
            decode(TracePoint::HrtimerStart, &raw),
            Some(EventKind::HrtimerStart {
                pid: 4242,
                timer: 0xffff_8880_1234_5678,
                expires_ns: 1_000_050_000,
                softexpires_ns: 1_000_000_000,
            })
        );
        // The same record written in a hard IRQ (a tick re-armed in its
        // handler, in 4242's context), in a softirq, in an NMI: not 4242's.
        for flags in [0x08u8, 0x10, 0x40, 0x09] {
            raw[2] = flags;
            assert_eq!(
                decode(TracePoint::HrtimerStart, &raw),
                Some(EventKind::HrtimerStart {
                    pid: 0,
                    timer: 0xffff_8880_1234_5678,
                    expires_ns: 1_000_050_000,
                    softexpires_ns: 1_000_000_000,
                }),
                "flags {flags:#x}"
            );
        }
        // IRQs off, a resched pending, bottom halves off: still its own.
        raw[2] = 0x01 | 0x04 | 0x80;
        assert!(matches!(
            decode(TracePoint::HrtimerStart, &raw),
            Some(EventKind::HrtimerStart { pid: 4242, .. })
        ));
        let mut raw = payload(32, 459, 0);
        put(&mut raw, 8, &0xffff_8880_1234_5678u64.to_ne_bytes());
        put(&mut raw, 16, &1_000_052_345i64.to_ne_bytes());
        assert_eq!(
            decode(TracePoint::HrtimerExpireEntry, &raw),
            Some(EventKind::HrtimerExpire {
                timer: 0xffff_8880_1234_5678,
                now_ns: 1_000_052_345,
            })
        );
    }

    #[test]
    fn hrtimer_start_without_function_nor_softexpires_decodes_by_name() {
        let text = "name: hrtimer_start\nID: 90\nformat:\n\
            \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
            \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
            \tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\
            \tfield:s64 expires;\toffset:16;\tsize:8;\tsigned:1;\n\
            \tfield:enum hrtimer_mode mode;\toffset:24;\tsize:4;\tsigned:0;\n";
        let format = Format::parse(text).unwrap();
        let mut raw = payload(28, 90, 55);
        put(&mut raw, 8, &0xabcdu64.to_ne_bytes());
        put(&mut raw, 16, &777i64.to_ne_bytes());
        let d = Decoder::new(TracePoint::HrtimerStart, &format).unwrap();
        assert_eq!(
            d.decode(&raw),
            Some(EventKind::HrtimerStart {
                pid: 55,
                timer: 0xabcd,
                expires_ns: 777,
                softexpires_ns: 777,
            })
        );
    }

    #[test]
    fn irq_and_softirq_events_decode_line_name_and_vector() {
        // "virtio0-input.0" behind the __data_loc word at 12: offset 16,
        // 16 bytes with its NUL.
        let mut raw = payload(16, 225, 0);
        put(&mut raw, 8, &24i32.to_ne_bytes());
        put(&mut raw, 12, &((16u32 << 16) | 16).to_ne_bytes());
        raw.extend_from_slice(b"virtio0-input.0\0");
        assert_eq!(
            decode(TracePoint::IrqHandlerEntry, &raw),
            Some(EventKind::IrqEntry {
                irq: 24,
                name: "virtio0-input.0".to_string()
            })
        );
        let mut raw = payload(16, 224, 0);
        put(&mut raw, 8, &24i32.to_ne_bytes());
        put(&mut raw, 12, &1i32.to_ne_bytes());
        assert_eq!(
            decode(TracePoint::IrqHandlerExit, &raw),
            Some(EventKind::IrqExit { irq: 24 })
        );
        let mut raw = payload(12, 223, 0);
        put(&mut raw, 8, &3u32.to_ne_bytes());
        assert_eq!(
            decode(TracePoint::SoftirqEntry, &raw),
            Some(EventKind::SoftirqEntry { vec: 3 })
        );
        assert_eq!(
            decode(TracePoint::SoftirqExit, &raw),
            Some(EventKind::SoftirqExit { vec: 3 })
        );
    }

    #[test]
    fn a_format_without_a_needed_field_is_refused_by_name() {
        let text = "format:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n";
        let format = Format::parse(text).unwrap();
        let err = Decoder::new(TracePoint::IrqHandlerEntry, &format).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the format of tracepoint irq:irq_handler_entry has no field name"
        );
    }

    /// A ring's bytes: a sample with `raw` (padded to 8 bytes).
    fn sample(pid: u32, time: u64, cpu: u32, raw: &[u8]) -> Vec<u8> {
        let size = (36 + raw.len()).div_ceil(8) * 8;
        let mut r = Vec::with_capacity(size);
        r.extend_from_slice(&9u32.to_ne_bytes());
        r.extend_from_slice(&0u16.to_ne_bytes());
        r.extend_from_slice(&(size as u16).to_ne_bytes());
        r.extend_from_slice(&pid.to_ne_bytes());
        r.extend_from_slice(&pid.to_ne_bytes());
        r.extend_from_slice(&time.to_ne_bytes());
        r.extend_from_slice(&cpu.to_ne_bytes());
        r.extend_from_slice(&0u32.to_ne_bytes());
        r.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
        r.extend_from_slice(raw);
        r.resize(size, 0);
        r
    }

    #[test]
    fn ring_bytes_become_events_in_order_with_losses() {
        let mut decoders = Decoders::default();
        for p in [TracePoint::SoftirqEntry, TracePoint::IrqHandlerExit] {
            let f = fixture(p);
            decoders.add(f.id.unwrap(), Decoder::new(p, &f).unwrap());
        }
        let mut softirq = payload(12, 223, 0);
        put(&mut softirq, 8, &9u32.to_ne_bytes());
        let mut irq_exit = payload(16, 224, 0);
        put(&mut irq_exit, 8, &11i32.to_ne_bytes());
        let unknown = payload(12, 999, 0);
        let mut ring = sample(0, 1_000, 1, &softirq);
        // PERF_RECORD_LOST: id, lost, then pid/tid, time, cpu/res.
        for w in [2u32, 48 << 16, 0, 0, 7, 0, 0, 0, 2_000, 0, 1, 0] {
            ring.extend_from_slice(&w.to_ne_bytes());
        }
        // PERF_RECORD_COMM (3), 16 bytes: skipped.
        for w in [3u32, 16 << 16, 0, 0] {
            ring.extend_from_slice(&w.to_ne_bytes());
        }
        ring.extend(sample(0, 3_000, 1, &unknown));
        ring.extend(sample(0, 4_000, 1, &irq_exit));
        let records: Vec<Record> = Records::new(&ring).map(Result::unwrap).collect();
        assert_eq!(records.len(), 5);
        assert_eq!(records[2], Record::Other { kind: 3 });
        let events: Vec<Event> = records.iter().filter_map(|r| decoders.event(r)).collect();
        assert_eq!(
            events,
            vec![
                Event {
                    time_ns: 1_000,
                    cpu: 1,
                    kind: EventKind::SoftirqEntry { vec: 9 }
                },
                Event {
                    time_ns: 2_000,
                    cpu: 1,
                    kind: EventKind::Lost { count: 7 }
                },
                Event {
                    time_ns: 4_000,
                    cpu: 1,
                    kind: EventKind::IrqExit { irq: 11 }
                },
            ]
        );
    }

    #[test]
    fn a_record_that_does_not_fit_ends_the_iteration_with_an_error() {
        let mut softirq = payload(12, 223, 0);
        put(&mut softirq, 8, &9u32.to_ne_bytes());
        let whole = sample(5, 1_000, 0, &softirq);
        let mut ring = whole.clone();
        ring.extend_from_slice(&whole[..20]);
        let mut it = Records::new(&ring);
        assert!(matches!(it.next(), Some(Ok(Record::Sample { tid: 5, .. }))));
        let err = it.next().unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "a perf record of type 9 at byte 48 claims 48 bytes, 20 are there"
        );
        assert_eq!(it.next(), None);
        // A raw size past the record's end.
        let mut lying = whole.clone();
        put(&mut lying, 32, &100u32.to_ne_bytes());
        let err = Records::new(&lying).next().unwrap().unwrap_err();
        assert_eq!(
            err,
            BadRecord {
                at: 0,
                kind: 9,
                size: 48,
                left: 48
            }
        );
    }
}
