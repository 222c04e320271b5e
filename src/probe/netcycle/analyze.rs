//! `jitterlab analyze FILE`: a POWERLINK capture read through the core
//! analysis (`jitterlab_core::powerlink::analyze`) and printed as text or
//! JSON.
//!
//! The input is a finished capture, not the machine: like every report it
//! measures nothing, and gives the same bytes for the same file anywhere.
//! The reader (`net::pcap::read`) lends each frame from one buffer and the
//! analysis keeps fixed-size counters, so memory is flat whatever the
//! file's length; a progress bar shows on stderr for files over 64 MiB,
//! and only when stderr is a terminal.
//!
//! The text opens with [Baumgartner POWERLINK] Table 4's figures — min cycle, max cycle,
//! deviation `max |T_per − T0|` — for the SoC period on each clock the
//! capture gives (the capture's stamps; the MN's NetTime and RelativeTime
//! fields when they advance), then the cycles, the CNs, the NMT states and
//! the ASnd services. Times print in µs with one decimal, as the seed's
//! tables; the JSON (`schema_version` 1) keeps integer nanoseconds.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use jitterlab_core::hist::HIST_MAX_NS;
use jitterlab_core::powerlink::analyze::{
    Analysis, Analyzer, MinMeanMax, Periods, EXACT_PERIODS, INFER_RULE, LATE_RULE, OVER_T0_RULE,
};
use jitterlab_core::powerlink::NmtState;
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::bad;
use crate::net::pcap::read::{CaptureReader, LinkType, L3};
use crate::output::shown;
use crate::output::write_stdout;

/// The version of the JSON document.
pub const SCHEMA_VERSION: u32 = 1;
/// Files above this size show a progress bar (on a terminal).
const PROGRESS_BYTES: u64 = 64 << 20;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnalyzeFormat {
    /// Tables for a person.
    Text,
    /// One JSON document.
    Json,
}

/// What `analyze` is asked for.
#[derive(Debug, Clone)]
pub struct AnalyzeRequest {
    /// The capture.
    pub file: PathBuf,
    /// `T0` given with `--cycle`.
    pub cycle_ns: Option<u64>,
    /// Output format.
    pub format: AnalyzeFormat,
}

/// What the capture file itself was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureInfo {
    /// The path as given.
    pub file: String,
    /// Its format in words (`pcap (nanosecond stamps, little-endian)`).
    pub format: String,
    /// The link types its frames had.
    pub links: Vec<LinkType>,
    /// Records cut short at its end.
    pub truncated: u64,
    /// Frames without a stamp (not analysed).
    pub unstamped: u64,
}

/// Reads the capture, prints its figures; bad input (a missing file, not
/// a capture, no POWERLINK frame) is refused with exit status 2.
pub fn run(req: &AnalyzeRequest) -> Result<ExitCode> {
    let (info, analysis) = analyze_file(req)?;
    let text = match req.format {
        AnalyzeFormat::Text => text(&info, &analysis),
        AnalyzeFormat::Json => json_text(&info, &analysis),
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads the whole capture through the analysis.
pub fn analyze_file(req: &AnalyzeRequest) -> Result<(CaptureInfo, Analysis)> {
    let name = req.file.display().to_string();
    let mut reader = CaptureReader::open(&req.file)?;
    let size = std::fs::metadata(&req.file).map(|m| m.len()).unwrap_or(0);
    let progress = if size > PROGRESS_BYTES && std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "analyze {bar:40} {percent:>3}% {bytes}/{total_bytes} ({eta})",
            )
            .expect("a valid template"),
        );
        Some(bar)
    } else {
        None
    };
    let mut analyzer = Analyzer::new(req.cycle_ns);
    let mut seen = [false; 3];
    let mut n = 0u64;
    while let Some(p) = reader.next_packet()? {
        seen[match p.link {
            LinkType::Ethernet => 0,
            LinkType::LinuxSll => 1,
            LinkType::LinuxSll2 => 2,
        }] = true;
        // A Simple Packet Block has no stamp: counted by the reader, not
        // timed here.
        let Some(ts) = p.ts_ns else { continue };
        match p.l3() {
            L3::Ethernet(frame) => analyzer.push(ts, frame),
            L3::Cooked(ethertype, payload) => analyzer.push_ethertype(ts, ethertype, payload),
            L3::CutShort => analyzer.push_cut_short(ts, p.data.len()),
        }
        n += 1;
        if n.is_multiple_of(1 << 16) {
            if let Some(bar) = &progress {
                bar.set_position(reader.offset());
            }
        }
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let links = [LinkType::Ethernet, LinkType::LinuxSll, LinkType::LinuxSll2]
        .into_iter()
        .zip(seen)
        .filter(|(_, s)| *s)
        .map(|(l, _)| l)
        .collect();
    let info = CaptureInfo {
        file: name.clone(),
        format: reader.format(),
        links,
        truncated: reader.truncated(),
        unstamped: reader.unstamped(),
    };
    let a = analyzer.finish();
    if a.frames.total == 0 {
        let why = if info.unstamped > 0 {
            format!(
                "its {} frames are all in pcapng Simple Packet Blocks, which carry no time stamp",
                info.unstamped
            )
        } else {
            "it holds no frame".to_string()
        };
        return Err(bad(format!(
            "{name}: nothing to analyze: {why}; capture on the POWERLINK segment with \
             tcpdump -i IF -w FILE ether proto 0x88ab"
        )));
    }
    if a.frames.powerlink == 0 {
        return Err(bad(format!(
            "{name} holds no POWERLINK frame (EtherType 0x88ab): its {} frames are {}; \
             capture on the POWERLINK segment with tcpdump -i IF -w FILE ether proto 0x88ab",
            a.frames.total,
            contents(&a)
        )));
    }
    Ok((info, a))
}

/// What the frames other than POWERLINK were, for the message of a
/// capture without any: `0x0800 (IPv4) 100, …`.
fn contents(a: &Analysis) -> String {
    let mut parts = contents_other(a);
    if a.frames.malformed > 0 {
        parts.push_str(&format!(
            ", too short for their link-layer header {}",
            a.frames.malformed
        ));
    }
    parts.trim_start_matches(", ").to_string()
}

/// An EtherType with its protocol's name where it is a common one.
fn ethertype_name(t: u16) -> String {
    let name = match t {
        0..=1500 => return format!("IEEE 802.3 (length {t})"),
        0x0800 => "IPv4",
        0x0806 => "ARP",
        0x86dd => "IPv6",
        0x8100 => "802.1Q",
        0x8892 => "PROFINET",
        0x88a4 => "EtherCAT",
        0x88cc => "LLDP",
        0x88f7 => "PTP",
        0xb62c => "OPC UA UADP",
        _ => return format!("{t:#06x}"),
    };
    format!("{t:#06x} ({name})")
}

/// ns as µs with one decimal, rounded half away from zero: `480.0 µs`.
fn us(ns: i64) -> String {
    let tenths = (ns.unsigned_abs() + 50) / 100;
    let sign = if ns < 0 && tenths > 0 { "-" } else { "" };
    format!("{sign}{}.{} µs", tenths / 10, tenths % 10)
}

fn us_opt(ns: Option<i64>) -> String {
    ns.map_or_else(|| "-".to_string(), us)
}

/// `1 SoC`, `2 SoCs`.
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("{n} {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A cycle time as a user gives it: `500 µs`, or `500.4 µs`.
fn cycle_text(ns: u64) -> String {
    if ns.is_multiple_of(1_000) {
        format!("{} µs", ns / 1_000)
    } else {
        us(ns as i64)
    }
}

fn nmt_name(code: u8, mn: bool) -> String {
    match NmtState(code).name(mn) {
        Some(n) => format!("{n} ({code:#04x})"),
        None => format!("NMT state {code:#04x}"),
    }
}

fn mmm(m: &MinMeanMax) -> String {
    format!("min {}, mean {}, max {}", us(m.min), us(m.mean), us(m.max))
}

/// The text report.
pub fn text(info: &CaptureInfo, a: &Analysis) -> String {
    let mut o = String::new();
    let f = &a.frames;
    let _ = writeln!(o, "capture: {}", shown(&info.file));
    let span = match (a.first_ts, a.last_ts) {
        (Some(first), Some(last)) => format!(" over {}", format_span(last.saturating_sub(first))),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "  {}, {}; {} frames{span}",
        info.format,
        info.links
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(" and "),
        f.total
    );
    if info.truncated > 0 {
        let _ = writeln!(
            o,
            "  the last record is cut short (the capture stopped while writing it): not read"
        );
    }
    if info.unstamped > 0 {
        let _ = writeln!(
            o,
            "  {} frames in pcapng Simple Packet Blocks carry no time stamp: not analysed",
            info.unstamped
        );
    }
    let _ = writeln!(
        o,
        "frames: {} POWERLINK (SoC {}, PReq {}, PRes {}, PResMN {}, SoA {}, ASnd {}), {} other, \
         {} malformed, {} unsupported",
        f.powerlink,
        f.soc,
        f.preq,
        f.pres,
        f.pres_mn,
        f.soa,
        f.asnd,
        f.other,
        f.malformed,
        f.unsupported
    );
    if let Some(m) = &a.first_malformed {
        let _ = writeln!(o, "  first malformed: frame {}: {}", m.frame, m.error);
    }
    if let Some(t) = a.first_unsupported_type {
        let _ = writeln!(
            o,
            "  first unsupported: message type {t:#04x} (only SoC, PReq, PRes, SoA and ASnd are read)"
        );
    }
    if f.other > 0 {
        let _ = writeln!(o, "  other protocols: {}", contents_other(a));
    }
    if let Some(first) = a.first_backwards_frame {
        let n = a.backwards_stamps;
        let (frames, it) = if n == 1 {
            ("1 frame".to_string(), "it")
        } else {
            (format!("{n} frames"), "them")
        };
        let _ = writeln!(
            o,
            "  warning: {frames} stamped earlier than the frame before {it} (first: frame {first}): the capture's clock went back, so the periods across {it} are not real"
        );
    }
    match a.cycle_time {
        Some(c) if c.inferred => {
            let _ = writeln!(
                o,
                "cycle time T0: {} (inferred: {INFER_RULE}; give --cycle to set it)",
                cycle_text(c.ns)
            );
        }
        Some(c) => {
            let _ = writeln!(o, "cycle time T0: {} (given)", cycle_text(c.ns));
        }
        None => {
            let _ = writeln!(
                o,
                "cycle time T0: unknown (fewer than two SoCs; give --cycle to set it)"
            );
        }
    }
    o.push('\n');
    jitter_table(&mut o, a);
    o.push('\n');
    let _ = write!(o, "cycles: {} SoCs, {} closed", a.cycles, a.closed_cycles);
    match &a.completion {
        Some(c) => {
            let _ = writeln!(o, "; completion SoC → last PRes: {}", mmm(c));
        }
        None => o.push_str("; no cycle with a PRes\n"),
    }
    let missed: u64 = a.cns.iter().map(|c| c.missed).sum();
    if let Some(late) = a.late_cycles {
        let _ = writeln!(
            o,
            "cycles over T0 ({OVER_T0_RULE}): {late} of {}\n  (run netcycle applies the same test to its cycles as \"over T0\", where only a PRes within the response timeout counts; the cycles it calls late ({LATE_RULE}) need the releases, which a capture does not hold)",
            a.closed_cycles
        );
        let verdict = if a.backwards_stamps > 0 && late == 0 && missed == 0 {
            "unknown (the capture's stamps go back; see the warning above)".to_string()
        } else if late == 0 && missed == 0 {
            "yes (no cycle over T0, no missed PRes)".to_string()
        } else {
            format!(
                "no ({} over T0, {missed} missed PRes)",
                plural(late, "cycle")
            )
        };
        let _ = writeln!(o, "cycle time held: {verdict}");
    }
    if !a.cns.is_empty() {
        let _ = writeln!(o, "\ncontrolled nodes: {}", a.cns.len());
        let _ = writeln!(
            o,
            "  {:>4}  {:>10}  {:>10}  {:>8}  {:>8}  {:>10}  {:<33}  NMT state",
            "node", "PReq", "PRes", "missed", "chained", "unexpected", "response min / mean / max"
        );
        for c in &a.cns {
            let response = c.response.map_or_else(
                || "-".to_string(),
                |r| {
                    format!(
                        "{} / {} / {}",
                        us(r.min).trim_end_matches(" µs"),
                        us(r.mean).trim_end_matches(" µs"),
                        us(r.max)
                    )
                },
            );
            let _ = writeln!(
                o,
                "  {:>4}  {:>10}  {:>10}  {:>8}  {:>8}  {:>10}  {:<33}  {}",
                c.node,
                c.preq,
                c.answered,
                c.missed,
                c.chained,
                c.unexpected,
                response,
                c.nmt
                    .map_or_else(|| "-".to_string(), |s| nmt_name(s, false))
            );
        }
    }
    let _ = writeln!(
        o,
        "\nMN NMT state: {}",
        a.mn_nmt
            .map_or_else(|| "not seen".to_string(), |s| nmt_name(s, true))
    );
    let s = &a.asnd;
    let _ = writeln!(
        o,
        "ASnd: IdentResponse {}, StatusResponse {}, NMTCommand {}, other {}",
        s.ident_response, s.status_response, s.nmt_command, s.other
    );
    o
}

fn contents_other(a: &Analysis) -> String {
    let mut parts: Vec<String> = a
        .other_ethertypes
        .iter()
        .map(|t| format!("{} {}", ethertype_name(t.ethertype), t.frames))
        .collect();
    if a.other_ethertypes_more > 0 {
        parts.push(format!("more EtherTypes {}", a.other_ethertypes_more));
    }
    parts.join(", ")
}

fn format_span(ns: u64) -> String {
    jitterlab_core::units::format_ns(ns.min(i64::MAX as u64) as i64)
}

/// [Baumgartner POWERLINK] Table 4's columns, then the distribution, one row per clock.
/// A percentile: past the histogram's range, the cap it stands for.
fn pct(v: Option<i64>, p: &Periods) -> String {
    match v {
        Some(v) if v.unsigned_abs() >= HIST_MAX_NS && p.percentile_resolution_ns.is_some() => {
            let sign = if v < 0 { "≤-" } else { "≥" };
            format!("{sign}{} s", HIST_MAX_NS / 1_000_000_000)
        }
        v => us_opt(v),
    }
}

/// True when a percentile of `p` lies past the histogram's range.
fn capped(p: &Option<Periods>) -> bool {
    p.as_ref().is_some_and(|p| {
        let s = &p.period;
        p.percentile_resolution_ns.is_some()
            && [s.p50, s.p99, s.p99_99]
                .into_iter()
                .flatten()
                .any(|v| v.unsigned_abs() >= HIST_MAX_NS)
    })
}

fn jitter_table(o: &mut String, a: &Analysis) {
    let _ = writeln!(
        o,
        "SoC jitter (Baumgartner and Schoenegger, Table 4; deviation = max |T_per − T0|)"
    );
    let _ = writeln!(
        o,
        "  {:<24} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "clock",
        "periods",
        "Min Cycle",
        "Max Cycle",
        "Deviation",
        "mean",
        "stddev",
        "p50",
        "p99",
        "p99.99"
    );
    let row = |o: &mut String, clock: &str, p: &Option<Periods>, absent: &str| match p {
        Some(p) => {
            let s = &p.period;
            let _ = writeln!(
                o,
                "  {:<24} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
                clock,
                s.count,
                us_opt(s.min),
                us_opt(s.max),
                us_opt(p.deviation.map(|d| d as i64)),
                us_opt(s.mean),
                us_opt(s.stddev),
                pct(s.p50, p),
                pct(s.p99, p),
                pct(s.p99_99, p)
            );
            if p.stalled > 0 {
                let _ = writeln!(
                    o,
                    "  {:<24} ({} whose field did not advance: not measured)",
                    "",
                    plural(p.stalled, "SoC")
                );
            }
        }
        None => {
            let _ = writeln!(o, "  {clock:<24} {:>9} {absent}", "-");
        }
    };
    row(o, "wire (capture stamps)", &a.wire, "fewer than two SoCs");
    let mn = "did not advance (0 or repeated in every SoC): not distributed";
    row(o, "MN NetTime", &a.net_time, mn);
    row(o, "MN RelativeTime", &a.relative_time, mn);
    let clocks = [
        ("wire (capture stamps)", &a.wire),
        ("MN NetTime", &a.net_time),
        ("MN RelativeTime", &a.relative_time),
    ];
    let rounded: Vec<String> = clocks
        .iter()
        .filter_map(|(name, p)| {
            let r = p.as_ref()?.percentile_resolution_ns?;
            Some(format!("{name} to within {}", format_span(r)))
        })
        .collect();
    if clocks.iter().any(|(_, p)| p.is_some()) {
        if rounded.is_empty() {
            o.push_str("  (percentiles exact to the ns, from every period measured)\n");
        } else {
            let measured = clocks.iter().filter(|(_, p)| p.is_some()).count();
            let _ = writeln!(
                o,
                "  (percentiles: {}: more than {EXACT_PERIODS} distinct periods, read from the histogram{})",
                rounded.join(", "),
                if rounded.len() < measured {
                    "; the others exact to the ns"
                } else {
                    ""
                }
            );
        }
    }
    if [&a.wire, &a.net_time, &a.relative_time]
        .into_iter()
        .any(capped)
    {
        let _ = writeln!(
            o,
            "  (≥{} s: past {} s, the end of the percentiles' histogram; min, max, mean and stddev are exact)",
            HIST_MAX_NS / 1_000_000_000,
            HIST_MAX_NS / 1_000_000_000
        );
    }
}

/// The JSON document, its top-level keys in a fixed order
/// (`schema_version` first), then a newline.
pub fn json_text(info: &CaptureInfo, a: &Analysis) -> String {
    let mut analysis = serde_json::to_value(a).expect("the analysis serializes");
    if let Some(code) = a.mn_nmt {
        analysis["mn_nmt_name"] = json!(NmtState(code).name(true));
    }
    if let Some(cns) = analysis["cns"].as_array_mut() {
        for (c, figures) in cns.iter_mut().zip(&a.cns) {
            if let Some(code) = figures.nmt {
                c["nmt_name"] = json!(NmtState(code).name(false));
            }
        }
    }
    let missed: u64 = a.cns.iter().map(|c| c.missed).sum();
    let doc = Doc {
        schema_version: SCHEMA_VERSION,
        file: &info.file,
        format: &info.format,
        link_types: info
            .links
            .iter()
            .map(|l| Link {
                code: l.code(),
                name: l.name(),
            })
            .collect(),
        truncated_records: info.truncated,
        unstamped_frames: info.unstamped,
        cycle_time_rule: a.cycle_time.filter(|c| c.inferred).map(|_| INFER_RULE),
        late_cycles_rule: OVER_T0_RULE,
        held: held(a, missed),
        percentile_cap_ns: HIST_MAX_NS,
        analysis,
    };
    let mut text = serde_json::to_string_pretty(&doc).expect("the document serializes");
    text.push('\n');
    text
}

/// The JSON document's top level, in this order.
#[derive(Serialize)]
struct Doc<'a> {
    schema_version: u32,
    file: &'a str,
    format: &'a str,
    link_types: Vec<Link>,
    truncated_records: u64,
    unstamped_frames: u64,
    /// How T0 was inferred, when it was.
    cycle_time_rule: Option<&'static str>,
    /// What the analysis' `late_cycles` counts: the cycles over T0, as
    /// `run netcycle`'s `over_t0_cycles` (not its `late_cycles`).
    late_cycles_rule: &'static str,
    /// No late cycle and no missed PRes (`null` without a T0, and when
    /// there is neither but the stamps go back).
    held: Option<bool>,
    /// The percentiles' histogram ends here: a percentile of this value
    /// stands for any value at or past it (min, max and mean are exact).
    percentile_cap_ns: u64,
    analysis: Value,
}

/// The JSON's `held`: a capture whose stamps go back cannot show that the
/// cycle time held (it can show that it did not).
fn held(a: &Analysis, missed: u64) -> Option<bool> {
    let held = a.late_cycles.map(|late| late == 0 && missed == 0)?;
    match held && a.backwards_stamps > 0 {
        true => None,
        false => Some(held),
    }
}

#[derive(Serialize)]
struct Link {
    code: u32,
    name: &'static str,
}

#[cfg(test)]
mod tests {
    use jitterlab_core::powerlink::*;

    use super::*;

    fn push(a: &mut Analyzer, ts: u64, f: Frame<'_>) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let dst = f.multicast_mac().unwrap_or([2, 0, 0, 0, 0, 1]);
        let n = encode(&f, dst, [2, 0, 0, 0, 0, 0xF0], &mut buf).unwrap();
        a.push(ts, &buf[..n]);
    }

    /// A SoC whose NetTime and RelativeTime stay 0 (not distributed).
    fn soc() -> Frame<'static> {
        Frame::Soc(Soc::default())
    }

    fn pres(node: u8, nmt: u8) -> Frame<'static> {
        Frame::PRes(PRes {
            node,
            nmt: NmtState(nmt),
            ms: false,
            en: false,
            rd: true,
            pr: 0,
            rs: 0,
            pdo_version: 0,
            payload: &[0; 6],
        })
    }

    /// A capture with a bit of everything: chained and polled CNs, a
    /// missed poll, ASnd, an unnamed NMT state, other protocols, a
    /// malformed frame; MN fields not distributed.
    fn sample() -> (CaptureInfo, Analysis) {
        let mut a = Analyzer::new(None);
        let preq = |node| {
            Frame::PReq(PReq {
                node,
                ms: false,
                ea: false,
                rd: true,
                pdo_version: 0,
                payload: &[1],
            })
        };
        for k in 0..3u64 {
            let t = 1_000_000_000 + k * 400_040;
            push(&mut a, t, soc());
            push(&mut a, t + 5_000, pres(MN_NODE, 0xFD));
            push(&mut a, t + 15_049, pres(7, 0x6D));
            push(&mut a, t + 20_000, preq(9));
            if k != 1 {
                push(&mut a, t + 27_551, pres(9, 0x42));
            }
            push(
                &mut a,
                t + 40_000,
                Frame::Soa(Soa {
                    nmt: NmtState::MS_OPERATIONAL,
                    ea: false,
                    er: false,
                    service: RequestedService::STATUS_REQUEST,
                    target: 9,
                    epl_version: EPL_VERSION,
                }),
            );
        }
        push(
            &mut a,
            1_001_300_000,
            Frame::ASnd(ASnd {
                dest: 9,
                src: MN_NODE,
                service: ASndService::NmtCommand(NmtCommand {
                    id: NmtCommandId::START_NODE,
                    data: &[],
                }),
            }),
        );
        let mut ipv6 = [0u8; 60];
        ipv6[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
        a.push(1_001_300_001, &ipv6);
        a.push_ethertype(1_001_300_002, 0x88AB, &[0x01, 0xFF]);
        let info = CaptureInfo {
            file: "seg.pcapng".into(),
            format: "pcapng".into(),
            links: vec![LinkType::LinuxSll2],
            truncated: 1,
            unstamped: 2,
        };
        (info, a.finish())
    }

    #[test]
    fn the_text_report_of_a_capture_with_a_bit_of_everything() {
        let (info, a) = sample();
        let got = text(&info, &a);
        let want = "\
capture: seg.pcapng
  pcapng, Linux cooked v2 (SLL2); 20 frames over 1.300ms
  the last record is cut short (the capture stopped while writing it): not read
  2 frames in pcapng Simple Packet Blocks carry no time stamp: not analysed
frames: 19 POWERLINK (SoC 3, PReq 3, PRes 5, PResMN 3, SoA 3, ASnd 1), 1 other, 1 malformed, 0 unsupported
  first malformed: frame 20: malformed POWERLINK frame at byte 2: the POWERLINK header (type, destination, source) is cut short
  other protocols: 0x86dd (IPv6) 1
cycle time T0: 400 µs (inferred: the median of the first 1024 SoC periods in the capture, rounded to the nearest µs; give --cycle to set it)

SoC jitter (Baumgartner and Schoenegger, Table 4; deviation = max |T_per − T0|)
  clock                      periods   Min Cycle   Max Cycle   Deviation        mean      stddev         p50         p99      p99.99
  wire (capture stamps)            2    400.0 µs    400.0 µs      0.0 µs    400.0 µs      0.0 µs    400.0 µs    400.0 µs    400.0 µs
  MN NetTime                       - did not advance (0 or repeated in every SoC): not distributed
  MN RelativeTime                  - did not advance (0 or repeated in every SoC): not distributed
  (percentiles exact to the ns, from every period measured)

cycles: 3 SoCs, 3 closed; completion SoC → last PRes: min 15.0 µs, mean 23.4 µs, max 27.6 µs
cycles over T0 (the cycle's last PRes, or its SoA if later, came more than T0 after its SoC): 0 of 3
  (run netcycle applies the same test to its cycles as \"over T0\", where only a PRes within the response timeout counts; the cycles it calls late (the cycle's SoA went out after the next cycle's release) need the releases, which a capture does not hold)
cycle time held: no (0 cycles over T0, 1 missed PRes)

controlled nodes: 2
  node        PReq        PRes    missed   chained  unexpected  response min / mean / max          NMT state
     7           0           0         0         3           0  -                                  NMT_CS_READY_TO_OPERATE (0x6d)
     9           3           2         1         0           0  7.6 / 7.6 / 7.6 µs                 NMT state 0x42

MN NMT state: NMT_MS_OPERATIONAL (0xfd)
ASnd: IdentResponse 0, StatusResponse 0, NMTCommand 1, other 0
";
        assert_eq!(got, want, "got:\n{got}");
    }

    #[test]
    fn the_json_document_leads_with_its_schema_version_and_names_nmt_states() {
        let (info, a) = sample();
        let text = json_text(&info, &a);
        assert!(text.starts_with("{\n  \"schema_version\": 1,\n  \"file\": \"seg.pcapng\",\n"));
        let d: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            d["link_types"],
            json!([{"code": 276, "name": "Linux cooked v2 (SLL2)"}])
        );
        assert_eq!(d["truncated_records"], 1);
        assert_eq!(d["unstamped_frames"], 2);
        assert_eq!(d["held"], false);
        assert_eq!(d["analysis"]["mn_nmt_name"], "NMT_MS_OPERATIONAL");
        assert_eq!(
            d["analysis"]["cns"][0]["nmt_name"],
            "NMT_CS_READY_TO_OPERATE"
        );
        assert_eq!(d["analysis"]["cns"][1]["nmt"], 0x42);
        assert_eq!(d["analysis"]["cns"][1].get("nmt_name"), Some(&Value::Null));
        assert_eq!(d["analysis"]["cns"][1]["response"]["mean"], 7_551);
        assert_eq!(d["analysis"]["wire"]["deviation"], 40);
        assert_eq!(d["analysis"]["net_time"], Value::Null);
    }

    fn soa() -> Frame<'static> {
        Frame::Soa(Soa {
            nmt: NmtState::MS_OPERATIONAL,
            ea: false,
            er: false,
            service: RequestedService::NO_SERVICE,
            target: 0,
            epl_version: EPL_VERSION,
        })
    }

    fn info() -> CaptureInfo {
        CaptureInfo {
            file: "seg.pcap".into(),
            format: "pcap".into(),
            links: vec![LinkType::Ethernet],
            truncated: 0,
            unstamped: 0,
        }
    }

    /// Cycles whose SoC and SoA are stamped at `socs` (SoA 40 µs after).
    fn cycles(t0: Option<u64>, socs: &[u64]) -> Analysis {
        let mut a = Analyzer::new(t0);
        for &t in socs {
            push(&mut a, t, soc());
            push(&mut a, t + 40_000, soa());
        }
        a.finish()
    }

    #[test]
    fn stamps_going_back_are_counted_warned_of_and_never_held() {
        // The third SoC is stamped before the SoA ahead of it.
        let a = cycles(
            Some(400_000),
            &[1_000_000_000, 1_000_400_000, 1_000_200_000, 1_000_600_000],
        );
        assert_eq!((a.backwards_stamps, a.first_backwards_frame), (1, Some(5)));
        let got = text(&info(), &a);
        let lines: Vec<&str> = got.lines().collect();
        assert!(
            lines.contains(&"  warning: 1 frame stamped earlier than the frame before it (first: frame 5): the capture's clock went back, so the periods across it are not real"),
            "{got}"
        );
        assert!(
            lines.contains(
                &"cycle time held: unknown (the capture's stamps go back; see the warning above)"
            ),
            "{got}"
        );
        let d: Value = serde_json::from_str(&json_text(&info(), &a)).unwrap();
        assert_eq!(d["held"], Value::Null);
        assert_eq!(d["analysis"]["backwards_stamps"], 1);
        assert_eq!(d["analysis"]["first_backwards_frame"], 5);
        // Stamps that never go back are held as before.
        let a = cycles(
            Some(400_000),
            &[1_000_000_000, 1_000_400_000, 1_000_800_000],
        );
        assert_eq!((a.backwards_stamps, a.first_backwards_frame), (0, None));
        assert!(text(&info(), &a)
            .contains("\ncycle time held: yes (no cycle over T0, no missed PRes)\n"));
    }

    #[test]
    fn percentiles_past_the_histogram_are_exact_too_and_say_so_only_when_rounded() {
        let s = 1_000_000_000u64;
        let a = cycles(Some(400_000), &[s, 201 * s, 401 * s, 601 * s]);
        let got = text(&info(), &a);
        let lines: Vec<&str> = got.lines().collect();
        assert!(
            lines.contains(&"  wire (capture stamps)            3 200000000.0 µs 200000000.0 µs 199999600.0 µs 200000000.0 µs      0.0 µs 200000000.0 µs 200000000.0 µs 200000000.0 µs"),
            "{got}"
        );
        assert!(
            lines.contains(&"  (percentiles exact to the ns, from every period measured)"),
            "{got}"
        );
        let d: Value = serde_json::from_str(&json_text(&info(), &a)).unwrap();
        assert_eq!(d["percentile_cap_ns"], 100_000_000_000u64);
        assert_eq!(d["analysis"]["wire"]["period"]["max"], 200_000_000_000u64);
        assert_eq!(d["analysis"]["wire"]["period"]["p50"], 200_000_000_000u64);
        assert_eq!(
            d["analysis"]["wire"]["percentile_resolution_ns"],
            Value::Null
        );
        // Read from the histogram (more distinct periods than kept): the
        // cap and the resolution are said.
        let mut rounded = a.clone();
        let w = rounded.wire.as_mut().unwrap();
        w.period.p50 = Some(HIST_MAX_NS as i64);
        w.percentile_resolution_ns = Some(68_719_476_736);
        let got = text(&info(), &rounded);
        let lines: Vec<&str> = got.lines().collect();
        assert!(
            lines.contains(&"  (percentiles: wire (capture stamps) to within 68.719s: more than 65536 distinct periods, read from the histogram)"),
            "{got}"
        );
        assert!(
            lines.contains(&"  (≥100 s: past 100 s, the end of the percentiles' histogram; min, max, mean and stddev are exact)"),
            "{got}"
        );
    }

    /// 50 ms periods a few ns apart (the histogram's counter there is
    /// 32 768 ns wide): the percentiles are the periods themselves, to the
    /// ns, as min and max are.
    #[test]
    fn percentiles_at_a_50_ms_cycle_are_exact_to_the_ns() {
        let t0 = 50_000_000u64;
        let mut at = 1_000_000_000u64;
        let mut socs = vec![at];
        // 100 periods: 10 short by 7 ns, 80 exact, 9 long by 41 ns, one
        // long by 3 107 ns.
        let periods = std::iter::repeat_n(t0 - 7, 10)
            .chain(std::iter::repeat_n(t0, 80))
            .chain(std::iter::repeat_n(t0 + 41, 9))
            .chain([t0 + 3_107]);
        for p in periods {
            at += p;
            socs.push(at);
        }
        let a = cycles(Some(t0), &socs);
        let w = &a.wire.as_ref().unwrap().period;
        assert_eq!(
            (w.min, w.p50, w.p90, w.p99, w.p99_9, w.max),
            (
                Some(49_999_993),
                Some(50_000_000),
                Some(50_000_000),
                Some(50_000_041),
                Some(50_003_107),
                Some(50_003_107)
            )
        );
        let d: Value = serde_json::from_str(&json_text(&info(), &a)).unwrap();
        assert_eq!(d["analysis"]["wire"]["period"]["p99"], 50_000_041);
        assert_eq!(
            d["analysis"]["wire"]["percentile_resolution_ns"],
            Value::Null
        );
        let got = text(&info(), &a);
        assert!(
            got.contains(
                "  wire (capture stamps)          100  50000.0 µs  50003.1 µs      3.1 µs  50000.0 µs      0.3 µs  50000.0 µs  50000.0 µs  50003.1 µs\n"
            ),
            "{got}"
        );
    }

    #[test]
    fn microseconds_round_half_away_from_zero() {
        assert_eq!(us(7_551), "7.6 µs");
        assert_eq!(us(7_549), "7.5 µs");
        assert_eq!(us(-7_550), "-7.6 µs");
        assert_eq!(us(-49), "0.0 µs");
        assert_eq!(cycle_text(500_000), "500 µs");
        assert_eq!(cycle_text(500_400), "500.4 µs");
        assert_eq!(ethertype_name(46), "IEEE 802.3 (length 46)");
        assert_eq!(ethertype_name(0x1234), "0x1234");
    }
}
