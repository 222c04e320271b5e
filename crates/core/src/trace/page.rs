//! Parsing one page of the kernel's ftrace ring buffer, as a read of
//! `per_cpu/cpuN/trace_pipe_raw` returns it, into its tracepoint records
//! and their times.
//!
//! The tracer reads tracepoints from a private tracefs instance's raw
//! buffers (where perf events miss what an idle CPU's interrupts trace),
//! so the page format is checked against what the kernel describes in
//! `events/header_page` ([`PageLayout::parse`]) and `events/header_event`
//! ([`check_header_event`]) before any page is trusted.
//!
//! A page: a u64 time stamp, a `commit` word (the bytes of data in its
//! low bits, [`MISSED_EVENTS`] and [`MISSED_STORED`] in its high bits),
//! then the events. Each event starts with a u32: `type_len` in its low 5
//! bits, `time_delta` in the other 27.
//!
//! | `type_len` | meaning |
//! |---|---|
//! | 0 | data; its length in the next u32 (which it counts), data after |
//! | 1..=28 | data of `type_len * 4` bytes |
//! | 29 | padding; its length in the next u32, 0 = the rest of the page |
//! | 30 | time extend: `time_delta + (next u32 << 27)`, 8 bytes |
//! | 31 | absolute time stamp, the same way; 8 bytes |
//!
//! An event's time is the page's time stamp plus the running sum of the
//! deltas. A data event's bytes are one tracepoint's raw record
//! (`common_type` first), what [`crate::trace::decode::Decoders`]
//! decodes.

use std::fmt;

/// `commit`'s flag: events were lost before this page.
pub const MISSED_EVENTS: u64 = 1 << 31;
/// `commit`'s flag: how many is stored as a `long` after the data.
pub const MISSED_STORED: u64 = 1 << 30;

/// The largest `type_len` of a data event whose length it gives.
const DATA_MAX: u32 = 28;
const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;
/// Bits of `time_delta` in the header (and the shift of an extend).
const TS_SHIFT: u32 = 27;

/// Where the parts of a page are, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Size of `commit` in bytes (8 on 64-bit kernels).
    pub commit_size: usize,
    /// Offset of the first event.
    pub data_offset: usize,
    /// Bytes of data a page holds at most.
    pub data_size: usize,
}

/// A page or header that is not as this parser knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPage(pub String);

impl fmt::Display for BadPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadPage {}

/// One field line of `header_page`: name, offset, size.
fn field(text: &str, name: &str) -> Option<(usize, usize)> {
    text.lines().find_map(|line| {
        let line = line.trim();
        let decl = line.strip_prefix("field:")?;
        let (decl, rest) = decl.split_once(';')?;
        if decl.split_whitespace().last()? != name {
            return None;
        }
        let mut offset = None;
        let mut size = None;
        for part in rest.split(';') {
            let part = part.trim();
            if let Some(v) = part.strip_prefix("offset:") {
                offset = v.trim().parse().ok();
            } else if let Some(v) = part.strip_prefix("size:") {
                size = v.trim().parse().ok();
            }
        }
        Some((offset?, size?))
    })
}

impl PageLayout {
    /// The layout `header_page` describes; refused unless `timestamp` is a
    /// u64 at 0 and `commit` follows it, 4 or 8 bytes, before `data`.
    pub fn parse(header_page: &str) -> Result<PageLayout, BadPage> {
        let get = |name: &str| {
            field(header_page, name)
                .ok_or_else(|| BadPage(format!("header_page has no field {name}")))
        };
        let ts = get("timestamp")?;
        let commit = get("commit")?;
        let data = get("data")?;
        if ts != (0, 8) || commit.0 != 8 || !matches!(commit.1, 4 | 8) || data.0 < 8 + commit.1 {
            return Err(BadPage(format!(
                "header_page has an unknown layout (timestamp at {}/{} bytes, commit at {}/{}, data at {})",
                ts.0, ts.1, commit.0, commit.1, data.0
            )));
        }
        Ok(PageLayout {
            commit_size: commit.1,
            data_offset: data.0,
            data_size: data.1,
        })
    }
}

/// Checks that `header_event` describes the event header this parser
/// reads (5-bit `type_len`, 27-bit `time_delta`, types 29, 30, 31, 28).
pub fn check_header_event(text: &str) -> Result<(), BadPage> {
    let squash: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "type_len : 5 bits",
        "time_delta : 27 bits",
        "padding : type == 29",
        "time_extend : type == 30",
        "data max type_len == 28",
    ] {
        if !squash.contains(want) {
            return Err(BadPage(format!(
                "header_event does not say \"{want}\"; this kernel's ring buffer format is unknown"
            )));
        }
    }
    Ok(())
}

/// A CPU buffer's own counters, as its `per_cpu/cpuN/stats` gives them:
/// what the tracer's count of records is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferStats {
    /// Events in the buffer, not read yet (`entries`).
    pub entries: u64,
    /// Events overwritten before they were read (`overrun`).
    pub overrun: u64,
    /// Events lost while the buffer was being written (`commit overrun`).
    pub commit_overrun: u64,
    /// Events dropped because the buffer was full (`dropped events`).
    pub dropped: u64,
    /// Events read out of it (`read events`).
    pub read: u64,
}

impl BufferStats {
    /// Parses a `stats` file; a counter it lacks is refused by name.
    pub fn parse(text: &str) -> Result<BufferStats, BadPage> {
        let get = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| BadPage(format!("the buffer's stats have no counter {name:?}")))
        };
        Ok(BufferStats {
            entries: get("entries")?,
            overrun: get("overrun")?,
            commit_overrun: get("commit overrun")?,
            dropped: get("dropped events")?,
            read: get("read events")?,
        })
    }

    /// Every event the kernel accepted: read, still there, or lost.
    pub fn written(&self) -> u64 {
        self.read + self.entries + self.overrun + self.commit_overrun + self.dropped
    }
}

/// What a page holds, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// One tracepoint's raw record, at `time_ns`.
    Data {
        /// The event's time (the page's clock: `trace_clock`).
        time_ns: u64,
        /// The raw record, `common_type` first.
        data: &'a [u8],
    },
    /// Events lost before this page (the ring was full): `count`, or 1
    /// where the kernel did not store how many. At the page's time stamp.
    Lost {
        /// The page's time stamp.
        time_ns: u64,
        /// How many were lost (at least).
        count: u64,
    },
}

fn u32_at(page: &[u8], at: usize) -> Result<u32, BadPage> {
    page.get(at..at + 4)
        .map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
        .ok_or_else(|| BadPage(format!("event header at byte {at} past the page's end")))
}

fn u64_at(page: &[u8], at: usize) -> Option<u64> {
    page.get(at..at + 8)
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
}

/// The items of one page (see the module doc).
pub fn parse<'a>(layout: &PageLayout, page: &'a [u8]) -> Result<Vec<Item<'a>>, BadPage> {
    let base = u64_at(page, 0).ok_or_else(|| BadPage(format!("a page of {} bytes", page.len())))?;
    let commit = match layout.commit_size {
        4 => page
            .get(8..12)
            .map(|b| u64::from(u32::from_ne_bytes(b.try_into().unwrap()))),
        _ => u64_at(page, 8),
    }
    .ok_or_else(|| BadPage(format!("a page of {} bytes", page.len())))?;
    let len = (commit & !(MISSED_EVENTS | MISSED_STORED) & 0xffff_ffff) as usize;
    let start = layout.data_offset;
    if len > layout.data_size || start + len > page.len() {
        return Err(BadPage(format!(
            "a page says it holds {len} bytes of data; it has room for {}",
            layout.data_size.min(page.len().saturating_sub(start))
        )));
    }
    let mut items = Vec::new();
    if commit & MISSED_EVENTS != 0 {
        let count = if commit & MISSED_STORED != 0 {
            match layout.commit_size {
                4 => page
                    .get(start + len..start + len + 4)
                    .map(|b| u64::from(u32::from_ne_bytes(b.try_into().unwrap()))),
                _ => u64_at(page, start + len),
            }
            .unwrap_or(1)
        } else {
            1
        };
        items.push(Item::Lost {
            time_ns: base,
            count: count.max(1),
        });
    }
    let end = start + len;
    let mut at = start;
    let mut time = base;
    while at < end {
        let header = u32_at(page, at)?;
        let type_len = header & 0x1f;
        let delta = u64::from(header >> 5);
        match type_len {
            0..=DATA_MAX => {
                // The data's size in bytes after the header word, and where
                // the payload starts: a length word first when the type is
                // 0 (the size counts it), else the size in words is the type.
                let (size, from) = match type_len {
                    0 => (u32_at(page, at + 4)? as usize, at + 8),
                    n => (n as usize * 4, at + 4),
                };
                // A length word must count itself at least.
                let short = type_len == 0 && size < 4;
                if short || at + 4 + size > end {
                    return Err(BadPage(format!(
                        "an event at byte {at} of {size} bytes past the data's end ({end})"
                    )));
                }
                time += delta;
                items.push(Item::Data {
                    time_ns: time,
                    data: &page[from..at + 4 + size],
                });
                at += 4 + size;
            }
            PADDING => {
                let size = u32_at(page, at + 4)? as usize;
                if size == 0 {
                    break;
                }
                time += delta;
                at += 4 + size;
            }
            TIME_EXTEND => {
                time += delta + (u64::from(u32_at(page, at + 4)?) << TS_SHIFT);
                at += 8;
            }
            TIME_STAMP => {
                let stamp = delta + (u64::from(u32_at(page, at + 4)?) << TS_SHIFT);
                // The stamp holds the low 59 bits; the rest are the page's.
                time = (base & !((1u64 << 59) - 1)) | stamp;
                at += 8;
            }
            _ => unreachable!("type_len has 5 bits"),
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
    const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

    #[test]
    fn a_buffer_s_stats_give_its_counters() {
        let text = "entries: 11\noverrun: 2\ncommit overrun: 3\nbytes: 540\noldest event ts: 41705.660441\nnow ts: 41705.662336\ndropped events: 4\nread events: 49321\n";
        let s = BufferStats::parse(text).unwrap();
        assert_eq!(
            s,
            BufferStats {
                entries: 11,
                overrun: 2,
                commit_overrun: 3,
                dropped: 4,
                read: 49321,
            }
        );
        assert_eq!(s.written(), 49341);
        assert_eq!(
            BufferStats::parse("entries: 1\noverrun: 0\n")
                .unwrap_err()
                .to_string(),
            "the buffer's stats have no counter \"commit overrun\""
        );
    }

    fn layout() -> PageLayout {
        PageLayout::parse(HEADER_PAGE).unwrap()
    }

    /// A page under construction: time stamp, commit flags, events.
    struct Builder {
        ts: u64,
        flags: u64,
        data: Vec<u8>,
        tail: Vec<u8>,
    }

    impl Builder {
        fn new(ts: u64) -> Builder {
            Builder {
                ts,
                flags: 0,
                data: Vec::new(),
                tail: Vec::new(),
            }
        }
        fn word(&mut self, w: u32) -> &mut Self {
            self.data.extend_from_slice(&w.to_ne_bytes());
            self
        }
        fn header(&mut self, type_len: u32, delta: u32) -> &mut Self {
            self.word(type_len | (delta << 5))
        }
        fn page(&self) -> Vec<u8> {
            let mut p = vec![0u8; 4096];
            p[0..8].copy_from_slice(&self.ts.to_ne_bytes());
            let commit = self.data.len() as u64 | self.flags;
            p[8..16].copy_from_slice(&commit.to_ne_bytes());
            p[16..16 + self.data.len()].copy_from_slice(&self.data);
            let t = 16 + self.data.len();
            p[t..t + self.tail.len()].copy_from_slice(&self.tail);
            p
        }
    }

    #[test]
    fn this_kernels_headers_are_understood() {
        assert_eq!(
            layout(),
            PageLayout {
                commit_size: 8,
                data_offset: 16,
                data_size: 4080
            }
        );
        assert_eq!(check_header_event(HEADER_EVENT), Ok(()));
        assert_eq!(
            check_header_event(&HEADER_EVENT.replace("27 bits", "26 bits")),
            Err(BadPage(
                "header_event does not say \"time_delta : 27 bits\"; this kernel's ring buffer format is unknown".into()
            ))
        );
        assert_eq!(
            PageLayout::parse(&HEADER_PAGE.replace("offset:8;\tsize:8", "offset:12;\tsize:8")),
            Err(BadPage("header_page has an unknown layout (timestamp at 0/8 bytes, commit at 12/8, data at 16)".into()))
        );
        assert_eq!(
            PageLayout::parse("nothing"),
            Err(BadPage("header_page has no field timestamp".into()))
        );
    }

    #[test]
    fn each_type_len_is_read_with_its_time() {
        let mut b = Builder::new(1_000_000);
        // type_len 2: 8 bytes of data, 10 ns after the page's stamp.
        b.header(2, 10).word(0x1111).word(0x2222);
        // type_len 0: length word (counting itself) 12 -> 8 bytes of data.
        b.header(0, 5).word(12).word(0x3333).word(0x4444);
        // time extend: 7 + (3 << 27).
        b.header(TIME_EXTEND, 7).word(3);
        // type_len 1: 4 bytes, 1 ns later.
        b.header(1, 1).word(0x5555);
        // padding: a discarded event of 4 bytes (length word 8, counting
        // itself); its delta counts.
        b.header(PADDING, 2).word(8).word(0);
        b.header(1, 0).word(0x6666);
        let page = b.page();
        let items = parse(&layout(), &page).unwrap();
        let w = |a: u32, b: u32| {
            let mut v = a.to_ne_bytes().to_vec();
            v.extend_from_slice(&b.to_ne_bytes());
            v
        };
        let ext = 1_000_015 + 7 + (3u64 << 27);
        assert_eq!(
            items,
            vec![
                Item::Data {
                    time_ns: 1_000_010,
                    data: &w(0x1111, 0x2222)
                },
                Item::Data {
                    time_ns: 1_000_015,
                    data: &w(0x3333, 0x4444)
                },
                Item::Data {
                    time_ns: ext + 1,
                    data: &0x5555u32.to_ne_bytes()
                },
                Item::Data {
                    time_ns: ext + 3,
                    data: &0x6666u32.to_ne_bytes()
                },
            ]
        );
    }

    #[test]
    fn an_absolute_stamp_sets_the_time() {
        let mut b = Builder::new(5_000);
        b.header(1, 1).word(1);
        b.header(TIME_STAMP, 9).word(2);
        b.header(1, 4).word(2);
        let page = b.page();
        let times: Vec<u64> = parse(&layout(), &page)
            .unwrap()
            .iter()
            .map(|i| match i {
                Item::Data { time_ns, .. } => *time_ns,
                Item::Lost { .. } => panic!(),
            })
            .collect();
        assert_eq!(times, [5_001, 9 + (2 << 27) + 4]);
    }

    #[test]
    fn padding_of_length_zero_ends_the_page() {
        let mut b = Builder::new(100);
        b.header(1, 1).word(7);
        b.header(PADDING, 0).word(0);
        b.header(1, 1).word(8);
        let page = b.page();
        assert_eq!(
            parse(&layout(), &page).unwrap(),
            vec![Item::Data {
                time_ns: 101,
                data: &7u32.to_ne_bytes()
            }]
        );
    }

    #[test]
    fn missed_events_become_a_lost_item_first() {
        let mut b = Builder::new(300);
        b.header(1, 1).word(7);
        b.flags = MISSED_EVENTS | MISSED_STORED;
        b.tail = 42u64.to_ne_bytes().to_vec();
        let page = b.page();
        let items = parse(&layout(), &page).unwrap();
        assert_eq!(
            items[0],
            Item::Lost {
                time_ns: 300,
                count: 42
            }
        );
        assert_eq!(items.len(), 2);
        // Not stored: at least one.
        b.flags = MISSED_EVENTS;
        let page = b.page();
        assert_eq!(
            parse(&layout(), &page).unwrap()[0],
            Item::Lost {
                time_ns: 300,
                count: 1
            }
        );
    }

    #[test]
    fn an_event_past_the_data_is_refused() {
        let mut b = Builder::new(0);
        b.header(0, 0).word(400).word(1);
        let page = b.page();
        assert_eq!(
            parse(&layout(), &page),
            Err(BadPage(
                "an event at byte 16 of 400 bytes past the data's end (28)".into()
            ))
        );
        let mut page = Builder::new(0).page();
        page[8..16].copy_from_slice(&5000u64.to_ne_bytes());
        assert_eq!(
            parse(&layout(), &page),
            Err(BadPage(
                "a page says it holds 5000 bytes of data; it has room for 4080".into()
            ))
        );
        assert_eq!(
            parse(&layout(), &[0u8; 4]),
            Err(BadPage("a page of 4 bytes".into()))
        );
    }

    /// A page read from `per_cpu/cpu1/trace_pipe_raw` of an instance
    /// tracing `sched_switch` and `sched_wakeup` (ids 372 and 374) with
    /// `trace_clock` mono, on this machine's kernel (6.18).
    #[test]
    fn a_real_page_decodes_into_its_tracepoints() {
        use crate::trace::decode::{Decoder, Decoders, TracePoint};
        use crate::trace::event::EventKind;
        use crate::trace::format::Format;
        let layout = PageLayout::parse(include_str!(
            "../../../../tests/fixtures/tracefs/events/header_page"
        ))
        .unwrap();
        check_header_event(include_str!(
            "../../../../tests/fixtures/tracefs/events/header_event"
        ))
        .unwrap();
        let page = include_bytes!("../../../../tests/fixtures/tracefs/page-cpu1.bin");
        let mut decoders = Decoders::default();
        for (id, point, text) in [
            (
                372,
                TracePoint::SchedSwitch,
                include_str!("../../../../tests/fixtures/tracefs/events/sched/sched_switch/format"),
            ),
            (
                374,
                TracePoint::SchedWakeup,
                include_str!("../../../../tests/fixtures/tracefs/events/sched/sched_wakeup/format"),
            ),
        ] {
            decoders.add(
                id,
                Decoder::new(point, &Format::parse(text).unwrap()).unwrap(),
            );
        }
        let items = parse(&layout, page).unwrap();
        assert_eq!(items.len(), 69);
        let mut last = 0;
        let (mut switches, mut wakeups) = (0, 0);
        for item in &items {
            let Item::Data { time_ns, data } = *item else {
                panic!("no events were lost on that page");
            };
            assert!(time_ns >= last);
            last = time_ns;
            match decoders.decode(data) {
                Some(EventKind::Switch { .. }) => switches += 1,
                Some(EventKind::Wakeup { .. }) => wakeups += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!((switches, wakeups), (46, 23));
        assert!(matches!(
            items[0],
            Item::Data {
                time_ns: 36_103_808_040_931,
                ..
            }
        ));
        assert_eq!(last, 36_103_989_801_742);
    }
}
