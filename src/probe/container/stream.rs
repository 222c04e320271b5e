//! The stream between the two halves of a container cell: the
//! `jitterlab run … --no-db --stream` inside the container writes what it
//! measures as JSON lines on its stdout, and the host side
//! (`crate::probe::container`) reads them through the engine's client and
//! stores them in the cell as a host cell's are.
//!
//! One JSON document per line, each an object with one key:
//!
//! - `{"ready":{"realtime":true}}` — every probe thread is set up, before
//!   the first release; `realtime` says whether every required real-time
//!   default held (the whole report comes with the result);
//! - `{"row":{"thread":0,"cpu":1,"window":0,"start_ns":0,"cycles":1000,
//!   "overruns":0,"stats":[{"count":1000,"min":…,"max":…,"mean":…},…]}}` —
//!   one window row as the writer drains it (every 100 ms), its `stats` in
//!   the probe's metric-table order ([`WireRow`]);
//! - `{"result":{"result":{…},"histograms":[…]}}` — the versioned
//!   `RunResult` and the histograms behind its summaries (HdrHistogram V2,
//!   deflated, in hex: [`WireHistogram`]; the main latency's 1 µs
//!   histogram beside its HDR one, in the store's encoding: [`WireFine`]),
//!   last.
//!
//! Both halves are the same binary (the image is tagged by its build id),
//! so the format needs no version of its own. Anything else the inner
//! jitterlab says goes to its stderr.

use std::io::{self, Write};

use anyhow::{anyhow, bail, Result};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use jitterlab_core::result::{ProbeKind, RunResult};
use jitterlab_core::window::{WindowRow, WindowStat};
use serde::{Deserialize, Serialize};

use crate::store::{fine, StoredHistogram};
use jitterlab_core::recorder::LatencyHistogram;

/// One line of the stream (module doc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Line {
    /// Every probe thread is set up.
    Ready {
        /// Whether every required real-time default held.
        realtime: bool,
    },
    /// One window row.
    Row(WireRow),
    /// The result, last.
    Result {
        /// The versioned result of the inner run.
        result: Box<RunResult>,
        /// The histograms behind its summaries.
        histograms: Vec<WireHistogram>,
    },
}

/// A window row on the wire: [`WindowRow`] with its statistics in the
/// probe's metric-table order and without the table itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRow {
    /// Probe thread index.
    pub thread: u32,
    /// CPU.
    pub cpu: u32,
    /// Window number.
    pub window: u64,
    /// Window start relative to the first release, ns.
    pub start_ns: u64,
    /// Cycles (samples) in the window.
    pub cycles: u64,
    /// Overruns in the window.
    pub overruns: u64,
    /// One entry per metric of the table.
    pub stats: Vec<WindowStat>,
}

impl WireRow {
    /// The wire form of `row`.
    pub fn of(row: &WindowRow) -> WireRow {
        WireRow {
            thread: row.thread,
            cpu: row.cpu,
            window: row.window,
            start_ns: row.start_ns,
            cycles: row.cycles,
            overruns: row.overruns,
            stats: row.stats[..row.metrics.len()].to_vec(),
        }
    }

    /// The row of a `kind` probe; an error when the statistics do not fit
    /// its metric table.
    pub fn row(&self, kind: ProbeKind) -> Result<WindowRow> {
        let metrics = kind.metrics();
        if self.stats.len() != metrics.len() {
            bail!(
                "a streamed window row has {} metrics, and a {} probe measures {}",
                self.stats.len(),
                kind.name(),
                metrics.len()
            );
        }
        let mut stats = [WindowStat::default(); jitterlab_core::probe::MAX_METRICS];
        stats[..metrics.len()].copy_from_slice(&self.stats);
        Ok(WindowRow {
            thread: self.thread,
            cpu: self.cpu,
            window: self.window,
            start_ns: self.start_ns,
            cycles: self.cycles,
            overruns: self.overruns,
            metrics,
            stats,
        })
    }
}

/// A stored histogram on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireHistogram {
    /// Thread index; `None` for every thread combined.
    pub thread: Option<u32>,
    /// The metric's name.
    pub metric: String,
    /// Values `>= 0`: HdrHistogram V2, deflated, in hex.
    pub positive: String,
    /// Magnitudes of negative values, the same way.
    pub negative: Option<String>,
    /// The metric in 1 µs bins (the probe's main latency only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fine: Option<WireFine>,
}

/// A 1 µs histogram on the wire: the store's columns, its blobs in hex
/// (`crate::store::fine`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFine {
    /// Bins kept.
    pub bucket_count: usize,
    /// The non-zero bins.
    pub buckets: String,
    /// Samples beyond the last bin.
    pub overflows: u64,
    /// Cycle numbers of the first overflows.
    pub overflow_cycles: String,
}

impl WireFine {
    /// The wire form of `h`.
    fn of(h: &LatencyHistogram) -> WireFine {
        WireFine {
            bucket_count: h.buckets.len(),
            buckets: to_hex(&fine::encode_buckets(&h.buckets)),
            overflows: h.overflows,
            overflow_cycles: to_hex(&fine::encode_numbers(&h.overflow_cycles)),
        }
    }

    /// The histogram it carries.
    fn histogram(&self) -> Result<LatencyHistogram> {
        if self.bucket_count as u64 > jitterlab_core::limits::MAX_HISTOGRAM_BUCKETS {
            bail!("a streamed 1 µs histogram has {} bins", self.bucket_count);
        }
        let streamed = |e: anyhow::Error| anyhow!("a streamed 1 µs histogram: {e}");
        Ok(LatencyHistogram {
            buckets: fine::decode_buckets(&from_hex(&self.buckets)?, self.bucket_count)
                .map_err(streamed)?,
            overflows: self.overflows,
            overflow_cycles: fine::decode_numbers(&from_hex(&self.overflow_cycles)?)
                .map_err(streamed)?,
        })
    }
}

/// Writes one line and flushes (a row must reach the host while the probe
/// still measures).
pub fn write_line(out: &mut dyn Write, line: &Line) -> io::Result<()> {
    let text = serde_json::to_string(line).map_err(io::Error::other)?;
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Parses one line.
pub fn parse_line(text: &str) -> Result<Line> {
    serde_json::from_str(text).map_err(|e| anyhow!("a streamed line is not jitterlab's: {e}"))
}

/// The wire form of stored histograms.
pub fn encode_histograms(list: &[StoredHistogram]) -> Result<Vec<WireHistogram>> {
    list.iter()
        .map(|h| {
            Ok(WireHistogram {
                thread: h.thread,
                metric: h.metric.to_string(),
                positive: encode(&h.positive)?,
                negative: h.negative.as_ref().map(encode).transpose()?,
                fine: h.fine.as_ref().map(WireFine::of),
            })
        })
        .collect()
}

/// The stored histograms of a `kind` probe from their wire form; an error
/// names a metric the probe does not measure.
pub fn decode_histograms(kind: ProbeKind, list: &[WireHistogram]) -> Result<Vec<StoredHistogram>> {
    list.iter()
        .map(|w| {
            let def = kind.metric(&w.metric).ok_or_else(|| {
                anyhow!(
                    "a streamed histogram is of {:?}, which a {} probe does not measure",
                    w.metric,
                    kind.name()
                )
            })?;
            Ok(StoredHistogram {
                thread: w.thread,
                metric: def.name,
                positive: decode(&w.positive)?,
                negative: w.negative.as_deref().map(decode).transpose()?,
                fine: w.fine.as_ref().map(WireFine::histogram).transpose()?,
            })
        })
        .collect()
}

fn encode(h: &Histogram<u64>) -> Result<String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| anyhow!("serializing a histogram: {e:?}"))?;
    Ok(to_hex(&buf))
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(hex: &str) -> Result<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        bail!("a streamed histogram is not hex");
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| anyhow!("a streamed histogram is not hex"))
}

fn decode(hex: &str) -> Result<Histogram<u64>> {
    let bytes = from_hex(hex)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow!("a streamed histogram does not decode: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_core::probe::PERIODIC_METRICS;

    #[test]
    fn a_row_crosses_the_stream_unchanged() {
        let mut stats = [WindowStat::default(); jitterlab_core::probe::MAX_METRICS];
        stats[0] = WindowStat {
            count: 1000,
            min: 2_100,
            max: 19_000,
            mean: 3_050,
            max_cycle: 3_417,
            max_at_ns: 3_417_006_000,
        };
        stats[2] = WindowStat {
            count: 999,
            min: -4_000,
            max: 5_000,
            mean: 1,
            ..WindowStat::default()
        };
        let row = WindowRow {
            thread: 0,
            cpu: 1,
            window: 3,
            start_ns: 3_000_000_000,
            cycles: 1000,
            overruns: 2,
            metrics: PERIODIC_METRICS,
            stats,
        };
        let mut out = Vec::new();
        write_line(&mut out, &Line::Row(WireRow::of(&row))).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\"row\":{\"thread\":0,\"cpu\":1,\"window\":3,\"start_ns\":3000000000,\"cycles\":1000,\"overruns\":2,\"stats\":[{\"count\":1000,\"min\":2100,\"max\":19000,\"mean\":3050,\"max_cycle\":3417,\"max_at_ns\":3417006000},{\"count\":0,\"min\":0,\"max\":0,\"mean\":0,\"max_cycle\":0,\"max_at_ns\":0},{\"count\":999,\"min\":-4000,\"max\":5000,\"mean\":1,\"max_cycle\":0,\"max_at_ns\":0},{\"count\":0,\"min\":0,\"max\":0,\"mean\":0,\"max_cycle\":0,\"max_at_ns\":0}]}}\n"
        );
        let Line::Row(wire) = parse_line(text.trim_end()).unwrap() else {
            panic!("not a row")
        };
        assert_eq!(wire.row(ProbeKind::Cyclic).unwrap(), row);
        assert_eq!(
            wire.row(ProbeKind::Chase).unwrap_err().to_string(),
            "a streamed window row has 4 metrics, and a chase probe measures 2"
        );
        assert_eq!(
            serde_json::to_string(&Line::Ready { realtime: true }).unwrap(),
            "{\"ready\":{\"realtime\":true}}"
        );
        assert!(parse_line("{\"bogus\":1}")
            .unwrap_err()
            .to_string()
            .starts_with("a streamed line is not jitterlab's: "));
    }

    #[test]
    fn histograms_cross_the_stream_unchanged() {
        let mut pos = Histogram::<u64>::new(3).unwrap();
        for v in [1_000u64, 2_000, 2_000, 150_000] {
            pos.record(v).unwrap();
        }
        let mut neg = Histogram::<u64>::new(3).unwrap();
        neg.record(4_000).unwrap();
        let stored = vec![
            StoredHistogram {
                thread: Some(0),
                metric: "jitter",
                positive: pos.clone(),
                negative: Some(neg.clone()),
                fine: None,
            },
            StoredHistogram {
                thread: Some(0),
                metric: "latency",
                positive: pos.clone(),
                negative: None,
                fine: Some(LatencyHistogram {
                    buckets: vec![0, 2, 0, 1],
                    overflows: 2,
                    overflow_cycles: vec![7, 9],
                }),
            },
        ];
        let wire = encode_histograms(&stored).unwrap();
        let back = decode_histograms(ProbeKind::Cyclic, &wire).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].thread, back[0].metric), (Some(0), "jitter"));
        assert_eq!(back[0].positive, pos);
        assert_eq!(back[0].negative.as_ref(), Some(&neg));
        assert_eq!(back[0].fine, None);
        assert_eq!(back[1].fine, stored[1].fine);
        // Without a 1 µs histogram the line is what it always was.
        let json = serde_json::to_string(&wire[1]).unwrap();
        assert!(json.ends_with(
            r#""negative":null,"fine":{"bucket_count":4,"buckets":"01020101","overflows":2,"overflow_cycles":"0702"}}"#
        ), "{json}");
        assert!(!serde_json::to_string(&wire[0]).unwrap().contains("fine"));
        assert_eq!(
            decode_histograms(ProbeKind::Chase, &wire[..1])
                .unwrap_err()
                .to_string(),
            "a streamed histogram is of \"jitter\", which a chase probe does not measure"
        );
    }
}
