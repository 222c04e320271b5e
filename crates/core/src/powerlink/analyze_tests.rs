//! Exact figures of synthetic frame sequences built with [`encode`]: every
//! counter of [`Analysis`] against a value worked out by hand, and random
//! bytes never panic.

use proptest::prelude::*;

use super::*;
use crate::powerlink::*;

const MN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xF0];

fn cn_mac(node: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, node]
}

/// Encodes `frame` as a whole Ethernet frame, to the address it goes to.
fn bytes(frame: Frame<'_>) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let (dst, src) = match frame {
        Frame::PReq(p) => (cn_mac(p.node), MN_MAC),
        Frame::PRes(p) if !p.is_pres_mn() => (MAC_PRES, cn_mac(p.node)),
        Frame::ASnd(a) if a.src != MN_NODE => (MAC_ASND, cn_mac(a.src)),
        f => (f.multicast_mac().unwrap(), MN_MAC),
    };
    let n = encode(&frame, dst, src, &mut buf).unwrap();
    buf[..n].to_vec()
}

fn soc(net_ns: u64, rel_us: u64) -> Vec<u8> {
    bytes(Frame::Soc(Soc {
        mc: false,
        ps: false,
        net_time: NetTime {
            seconds: (net_ns / 1_000_000_000) as u32,
            nanoseconds: (net_ns % 1_000_000_000) as u32,
        },
        relative_time: rel_us,
    }))
}

fn preq(node: u8) -> Vec<u8> {
    bytes(Frame::PReq(PReq {
        node,
        ms: false,
        ea: false,
        rd: true,
        pdo_version: 0,
        payload: &[0x11],
    }))
}

fn pres(node: u8, nmt: NmtState) -> Vec<u8> {
    bytes(Frame::PRes(PRes {
        node,
        nmt,
        ms: false,
        en: false,
        rd: true,
        pr: 0,
        rs: 0,
        pdo_version: 0,
        payload: &[1, 2, 3, 4, 5, 6],
    }))
}

fn soa(nmt: NmtState) -> Vec<u8> {
    bytes(Frame::Soa(Soa {
        nmt,
        ea: false,
        er: false,
        service: RequestedService::NO_SERVICE,
        target: 0,
        epl_version: EPL_VERSION,
    }))
}

const OP: NmtState = NmtState::CS_OPERATIONAL;

/// A sequence of `(stamp, frame)` and the analysis of it.
#[derive(Default)]
struct Seq(Vec<(u64, Vec<u8>)>);

impl Seq {
    fn at(&mut self, ts: u64, frame: Vec<u8>) -> &mut Self {
        self.0.push((ts, frame));
        self
    }

    /// One polled cycle: SoC at `t` (NetTime `t`, RelativeTime `t` in µs),
    /// then for each `(node, preq_at, pres_after)` a PReq at `t + preq_at`
    /// answered `pres_after` later (never, when `None`), then the SoA at
    /// `t + soa_at`.
    fn cycle(&mut self, t: u64, polls: &[(u8, u64, Option<u64>)], soa_at: u64) -> &mut Self {
        self.at(t, soc(t, t / 1_000));
        for &(node, at, answer) in polls {
            self.at(t + at, preq(node));
            if let Some(after) = answer {
                self.at(t + at + after, pres(node, OP));
            }
        }
        self.at(t + soa_at, soa(NmtState::MS_OPERATIONAL))
    }

    fn analyze(&self, cycle: Option<u64>) -> Analysis {
        let mut a = Analyzer::new(cycle);
        for (ts, f) in &self.0 {
            a.push(*ts, f);
        }
        a.finish()
    }
}

const US: u64 = 1_000;
const T0: u64 = 500 * US;
/// One second: a NetTime of zero is an MN that does not distribute it.
const BASE: u64 = 1_000_000_000;

#[test]
fn periods_deviation_completion_and_response_times_of_a_polled_segment() {
    // SoCs at 0, 500, 1010, 1490 and 2000 µs after 1 s: periods 500, 510,
    // 480, 510.
    let starts = [0, 500 * US, 1010 * US, 1490 * US, 2000 * US];
    let mut s = Seq::default();
    for (k, &t) in starts.iter().enumerate() {
        let k = k as u64;
        let t = t + BASE;
        s.cycle(
            t,
            &[(1, 10 * US, Some(20 * US + k)), (2, 40 * US, Some(25 * US))],
            100 * US,
        );
    }
    let a = s.analyze(Some(T0));
    assert_eq!(a.cycles, 5);
    assert_eq!(
        a.frames,
        FrameCounts {
            total: 30,
            powerlink: 30,
            soc: 5,
            preq: 10,
            pres: 10,
            soa: 5,
            ..FrameCounts::default()
        }
    );
    assert_eq!(
        a.cycle_time,
        Some(CycleTime {
            ns: T0,
            inferred: false
        })
    );
    let wire = a.wire.as_ref().unwrap();
    assert_eq!(wire.period.count, 4);
    assert_eq!(wire.period.min, Some(480 * US as i64));
    assert_eq!(wire.period.max, Some(510 * US as i64));
    assert_eq!(wire.period.mean, Some(500 * US as i64));
    // Deviations 0, 10, 20, 10 µs: population stddev sqrt(150) µs.
    assert_eq!(wire.period.stddev, Some(12_247));
    assert_eq!(wire.deviation, Some(20 * US));
    assert_eq!(wire.stalled, 0);
    // The MN's fields carry the same times here.
    assert_eq!(a.net_time.as_ref().unwrap(), wire);
    assert_eq!(a.relative_time.as_ref().unwrap(), wire);
    // Every cycle's last PRes comes at 65 µs; its SoA at 100 µs.
    assert_eq!(
        a.completion,
        Some(MinMeanMax {
            count: 5,
            min: 65 * US as i64,
            mean: 65 * US as i64,
            max: 65 * US as i64
        })
    );
    assert_eq!((a.late_cycles, a.closed_cycles), (Some(0), 5));
    assert_eq!(
        a.cns,
        vec![
            CnFigures {
                node: 1,
                preq: 5,
                answered: 5,
                missed: 0,
                chained: 0,
                unexpected: 0,
                response: Some(MinMeanMax {
                    count: 5,
                    min: 20_000,
                    mean: 20_002,
                    max: 20_004
                }),
                nmt: Some(0xFD),
            },
            CnFigures {
                node: 2,
                preq: 5,
                answered: 5,
                missed: 0,
                chained: 0,
                unexpected: 0,
                response: Some(MinMeanMax {
                    count: 5,
                    min: 25_000,
                    mean: 25_000,
                    max: 25_000
                }),
                nmt: Some(0xFD),
            },
        ]
    );
    assert_eq!(a.mn_nmt, Some(0xFD));
    assert_eq!(
        (a.first_ts, a.last_ts),
        (Some(BASE), Some(BASE + 2100 * US))
    );
}

#[test]
fn a_poll_unanswered_before_the_next_preq_soa_or_soc_is_missed() {
    let mut s = Seq::default();
    // Cycle 1: node 2 is silent until node 3's PReq; its PRes comes after.
    s.at(0, soc(0, 0))
        .at(10 * US, preq(2))
        .at(50 * US, preq(3))
        .at(55 * US, pres(2, OP))
        .at(60 * US, pres(3, OP))
        .at(90 * US, preq(2))
        .at(99 * US, soa(NmtState::MS_OPERATIONAL));
    // Cycle 2: node 3's poll is still open at the next SoC; the capture
    // ends with node 2's poll open, which is not counted.
    s.at(T0, soc(T0, 500))
        .at(T0 + 10 * US, preq(3))
        .at(2 * T0, soc(2 * T0, 1000))
        .at(2 * T0 + 10 * US, preq(2));
    let a = s.analyze(Some(T0));
    let by_node = |n: u8| *a.cns.iter().find(|c| c.node == n).unwrap();
    let n2 = by_node(2);
    assert_eq!(
        (n2.preq, n2.answered, n2.missed, n2.unexpected),
        (3, 0, 2, 1)
    );
    assert_eq!(n2.response, None);
    let n3 = by_node(3);
    assert_eq!((n3.preq, n3.answered, n3.missed), (2, 1, 1));
    assert_eq!(n3.response.unwrap().max, 10 * US as i64);
    // The last cycle has no SoA: it is not closed.
    assert_eq!(a.closed_cycles, 2);
    // Cycle 1's last PRes at 60 µs; cycle 2 had none.
    assert_eq!(a.completion.unwrap().count, 1);
    assert_eq!(a.completion.unwrap().max, 60 * US as i64);
}

#[test]
fn pres_after_a_pres_mn_are_chained_and_the_mn_state_comes_from_it() {
    let pres_mn = bytes(Frame::PRes(PRes {
        node: MN_NODE,
        nmt: NmtState::MS_READY_TO_OPERATE,
        ms: false,
        en: false,
        rd: true,
        pr: 0,
        rs: 0,
        pdo_version: 0,
        payload: &[0; 3],
    }));
    let mut s = Seq::default();
    for k in 0..3u64 {
        let t = k * T0;
        s.at(t, soc(t, 0))
            .at(t + 5 * US, pres_mn.clone())
            .at(t + 20 * US, pres(1, NmtState::CS_READY_TO_OPERATE))
            .at(
                t + 30 * US + k * US,
                pres(2, NmtState::CS_PRE_OPERATIONAL_2),
            );
    }
    // No SoA in the capture: the MN's state is the PResMN's.
    let a = s.analyze(None);
    assert_eq!(a.frames.pres_mn, 3);
    assert_eq!(a.frames.pres, 6);
    assert_eq!(a.mn_nmt, Some(0x6D));
    let n: Vec<_> = a
        .cns
        .iter()
        .map(|c| (c.node, c.chained, c.unexpected, c.nmt))
        .collect();
    assert_eq!(n, vec![(1, 3, 0, Some(0x6D)), (2, 3, 0, Some(0x5D))]);
    // Completion: 30 and 31 µs (the third cycle has no SoA: not closed).
    assert_eq!(
        a.completion,
        Some(MinMeanMax {
            count: 2,
            min: 30_000,
            mean: 30_500,
            max: 31_000
        })
    );
    // RelativeTime stays 0 in every SoC: stalled, not measured.
    assert_eq!(a.relative_time, None);
    assert_eq!(a.net_time.as_ref().unwrap().period.min, Some(T0 as i64));
    // Two periods of exactly 500 µs: T0 inferred as 500 µs.
    assert_eq!(
        a.cycle_time,
        Some(CycleTime {
            ns: T0,
            inferred: true
        })
    );
}

#[test]
fn a_cycle_whose_traffic_ends_after_t0_is_late() {
    let mut s = Seq::default();
    // Cycle 0's SoA comes 510 µs after its SoC (after the next SoC even);
    // cycle 1's last PRes at 499 µs, its SoA at 450 µs; cycle 2 on time.
    s.at(0, soc(0, 0))
        .at(510 * US, soa(NmtState::MS_OPERATIONAL))
        .at(T0, soc(T0, 0))
        .at(T0 + 10 * US, preq(1))
        .at(T0 + 450 * US, soa(NmtState::MS_OPERATIONAL))
        .at(T0 + 499 * US, pres(1, OP))
        .at(2 * T0, soc(2 * T0, 0))
        .at(2 * T0 + 100 * US, soa(NmtState::MS_OPERATIONAL));
    assert_eq!(s.analyze(Some(T0)).late_cycles, Some(1));
    assert_eq!(s.analyze(Some(498 * US)).late_cycles, Some(2));
    // Node 1's PRes came after the SoA closed its poll.
    let a = s.analyze(Some(T0));
    assert_eq!((a.cns[0].missed, a.cns[0].unexpected), (1, 1));
}

#[test]
fn the_inferred_cycle_time_is_the_median_of_the_first_periods_rounded_to_a_us() {
    // 1024 periods: 600 of 500.4 µs, 424 of 2 ms (a stalled MN), then
    // periods of 3 ms that come too late to move the median.
    let mut s = Seq::default();
    let mut t = 1_000_000_000u64;
    let mut starts = vec![t];
    for k in 0..1100u64 {
        t += match k {
            0..600 => 500_400,
            600..1024 => 2_000_000,
            _ => 3_000_000,
        };
        starts.push(t);
    }
    for &t in &starts {
        // The traffic of every cycle ends 1 ms after its SoC: late against
        // 500 µs, every one, counted before and after the inference.
        s.at(t, soc(t, 0))
            .at(t + 1_000_000, soa(NmtState::MS_OPERATIONAL));
    }
    let a = s.analyze(None);
    assert_eq!(
        a.cycle_time,
        Some(CycleTime {
            ns: 500 * US,
            inferred: true
        })
    );
    assert_eq!(a.cycles, 1101);
    assert_eq!(a.closed_cycles, 1101);
    assert_eq!(a.late_cycles, Some(1101));
    let wire = a.wire.unwrap();
    assert_eq!(wire.deviation, Some(2_500_000));
    assert_eq!(wire.period.min, Some(500_400));
    // With fewer periods the median of those there are: 500.4 µs rounds
    // to 500, 500.5 to 501.
    for (period, t0) in [(500_400, 500 * US), (500_500, 501 * US)] {
        let mut s = Seq::default();
        for k in 0..3 {
            s.at(k * period, soc(0, 0));
        }
        assert_eq!(s.analyze(None).cycle_time.unwrap().ns, t0);
    }
    // One SoC: no period, no cycle time, no deviation, no late count.
    let mut s = Seq::default();
    s.at(5, soc(0, 0));
    let a = s.analyze(None);
    assert_eq!((a.cycle_time, a.late_cycles), (None, None));
    assert_eq!(a.wire, None);
}

#[test]
fn the_mn_clock_is_measured_apart_from_the_wire() {
    // The wire sees 500 ± 30 µs; the MN's NetTime says 500 ± 1 µs, and its
    // RelativeTime stalls once.
    let wire = [0, 530 * US, 1000 * US, 1530 * US];
    let net = [0, 501 * US, 1000 * US, 1501 * US];
    let rel = [7, 507, 507, 1507];
    let base = 1_700_000_000_000_000_000;
    let mut s = Seq::default();
    for i in 0..4 {
        s.at(base + wire[i], soc(base + net[i], rel[i]));
    }
    let a = s.analyze(Some(T0));
    let w = a.wire.unwrap();
    assert_eq!(
        (w.period.min, w.period.max, w.deviation),
        (Some(470_000), Some(530_000), Some(30_000))
    );
    let n = a.net_time.unwrap();
    assert_eq!(
        (n.period.min, n.period.max, n.deviation, n.stalled),
        (Some(499_000), Some(501_000), Some(1_000), 0)
    );
    let r = a.relative_time.unwrap();
    assert_eq!(
        (r.period.count, r.period.min, r.period.max, r.stalled),
        (2, Some(500_000), Some(1_000_000), 1)
    );
    assert_eq!(r.deviation, Some(500_000));
}

#[test]
fn asnd_services_and_the_cn_states_they_carry_are_counted() {
    let ident = IdentResponse {
        nmt: NmtState::CS_PRE_OPERATIONAL_1,
        epl_version: EPL_VERSION,
        ..IdentResponse::default()
    };
    let status = StatusResponse {
        en: false,
        ec: false,
        pr: 0,
        rs: 0,
        nmt: NmtState::CS_STOPPED,
        static_errors: 0,
        errors: &[],
    };
    let asnd = |src, dest, service| bytes(Frame::ASnd(ASnd { dest, src, service }));
    let mut s = Seq::default();
    s.at(1, asnd(7, MN_NODE, ASndService::IdentResponse(ident)))
        .at(2, asnd(9, MN_NODE, ASndService::StatusResponse(status)))
        .at(
            3,
            asnd(
                MN_NODE,
                7,
                ASndService::NmtCommand(NmtCommand {
                    id: NmtCommandId::START_NODE,
                    data: &[],
                }),
            ),
        )
        .at(
            4,
            asnd(
                MN_NODE,
                9,
                ASndService::Other {
                    id: ServiceId::SDO,
                    data: &[0; 8],
                },
            ),
        )
        .at(5, soa(NmtState::MS_PRE_OPERATIONAL_1));
    let a = s.analyze(None);
    assert_eq!(
        a.asnd,
        AsndCounts {
            ident_response: 1,
            status_response: 1,
            nmt_command: 1,
            other: 1
        }
    );
    assert_eq!(a.frames.asnd, 4);
    let states: Vec<_> = a.cns.iter().map(|c| (c.node, c.nmt, c.preq)).collect();
    assert_eq!(states, vec![(7, Some(0x1D), 0), (9, Some(0x4D), 0)]);
    assert_eq!(a.mn_nmt, Some(0x1D));
    assert_eq!((a.cycles, a.wire, a.cycle_time), (0, None, None));
}

#[test]
fn other_protocols_malformed_and_unsupported_frames_are_counted_and_dropped() {
    let mut ipv4 = vec![0u8; 60];
    ipv4[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let mut malformed = soc(0, 0);
    malformed.truncate(14 + 10); // a SoC cut short
    let mut ainv = soc(0, 0);
    ainv[14] = 0x0D; // AInv
    let mut s = Seq::default();
    s.at(1, ipv4.clone())
        .at(2, malformed)
        .at(3, vec![0xff; 9]) // not even an Ethernet header
        .at(4, ainv)
        .at(5, ipv4);
    for k in 0..10u16 {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&(0x9000 + k).to_be_bytes());
        s.at(6, f);
    }
    let a = s.analyze(None);
    assert_eq!(
        a.frames,
        FrameCounts {
            total: 15,
            powerlink: 2,
            other: 12,
            malformed: 2,
            unsupported: 1,
            ..FrameCounts::default()
        }
    );
    assert_eq!(
        a.first_malformed,
        Some(Malformed {
            frame: 2,
            error: "malformed POWERLINK frame at byte 10: SoC cut short".to_string()
        })
    );
    assert_eq!(a.first_unsupported_type, Some(0x0D));
    let mut types = vec![(0x0800, 2)];
    types.extend((0..7).map(|k| (0x9000 + k, 1)));
    let got: Vec<_> = a
        .other_ethertypes
        .iter()
        .map(|t| (t.ethertype, t.frames))
        .collect();
    assert_eq!(got, types);
    assert_eq!(a.other_ethertypes_more, 3);
}

#[test]
fn a_cooked_capture_gives_the_same_figures_as_ethernet() {
    let mut s = Seq::default();
    for k in 0..4 {
        s.cycle(k * T0 + k, &[(1, 10 * US, Some(7 * US))], 50 * US);
    }
    let mut cooked = Analyzer::new(None);
    for (ts, f) in &s.0 {
        cooked.push_ethertype(*ts, u16::from_be_bytes([f[12], f[13]]), &f[14..]);
    }
    assert_eq!(cooked.finish(), s.analyze(None));
}

#[test]
fn a_vlan_tagged_frame_is_read_behind_its_tag() {
    let plain = soc(0, 0);
    let mut tagged = plain[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    tagged.extend_from_slice(&plain[12..]);
    let mut a = Analyzer::new(None);
    a.push(0, &tagged);
    assert_eq!(a.finish().frames.soc, 1);
}

proptest! {
    #[test]
    fn random_bytes_never_panic(frames in proptest::collection::vec(
        proptest::collection::vec(any::<u8>(), 0..80), 0..40),
        stamps in proptest::collection::vec(any::<u64>(), 40)) {
        let mut a = Analyzer::new(None);
        for (i, f) in frames.iter().enumerate() {
            let mut f = f.clone();
            // Make most of them POWERLINK so the decoder is exercised.
            if f.len() >= 14 && i % 4 != 0 {
                f[12] = 0x88;
                f[13] = 0xAB;
            }
            a.push(stamps[i], &f);
        }
        let r = a.finish();
        prop_assert_eq!(r.frames.total, frames.len() as u64);
    }
}

/// Periods exact to the ns while at most [`EXACT_PERIODS`] distinct ones
/// were seen; past that, read from the histogram with its resolution.
#[test]
fn percentiles_are_exact_until_too_many_distinct_periods() {
    let run = |n: u64| {
        let mut a = Analyzer::new(Some(1_000_000));
        let mut t = 1_000_000_000u64;
        let frame = soc(0, 0);
        for k in 0..=n {
            a.push(t, &frame);
            t += 1_000_000 + k;
        }
        a.finish().wire.unwrap()
    };
    let exact = run(EXACT_PERIODS as u64);
    assert_eq!(exact.period.count, EXACT_PERIODS as u64);
    assert_eq!(exact.percentile_resolution_ns, None);
    assert_eq!(exact.period.p50, Some(1_000_000 + 32_767));
    assert_eq!(exact.period.p99, Some(1_000_000 + 64_880));
    let rounded = run(EXACT_PERIODS as u64 + 1);
    assert_eq!(rounded.percentile_resolution_ns, Some(1_024));
    assert_ne!(rounded.period.p50, Some(1_000_000 + 32_768));
}
