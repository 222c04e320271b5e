//! A synthetic POWERLINK capture of any length, for the `analyze`
//! benchmark and tests (`jitterlab __synth-capture`): an MN polling `cns`
//! CNs every `cycle`, written through [`PcapWriter`] with frames encoded by
//! `powerlink::encode`, as `netcycle --pcap` writes them.
//!
//! Each cycle is a SoC, then for each CN a PReq and its PRes, then a SoA:
//! `2·cns + 2` frames. The SoC's capture stamp is its release `k·cycle`
//! plus a uniform jitter in `±jitter`; its NetTime carries the release with
//! a tenth of that jitter (the MN's clock is steadier than the wire), its
//! RelativeTime the release in µs. Each CN gets a slot of
//! `min(20 µs, 0.8·cycle / cns)`; it answers 40 % into it, give or take
//! 1 µs. With `miss_every` M > 0 every M-th poll goes unanswered. The
//! jitter comes from a seeded generator, so a seed gives the same bytes.

use std::path::PathBuf;

use anyhow::{Context, Result};
use jitterlab_core::powerlink::{
    encode, Frame, NetTime, NmtState, PReq, PRes, RequestedService, Soa, Soc, EPL_VERSION,
    MAC_PRES, MAC_SOA, MAC_SOC, MAX_FRAME_LEN, MN_NODE,
};

use super::PcapWriter;

/// What to write.
#[derive(Debug, Clone)]
pub struct SynthRequest {
    /// Frames in the capture (the last cycle may be cut).
    pub frames: u64,
    /// CNs polled, 1–239.
    pub cns: u8,
    /// Cycle time (ns).
    pub cycle_ns: u64,
    /// Largest SoC stamp jitter either way (ns).
    pub jitter_ns: u64,
    /// The generator's seed.
    pub seed: u64,
    /// Every this many polls goes unanswered (0: none).
    pub miss_every: u64,
    /// Where.
    pub path: PathBuf,
}

/// The first cycle's release: 2023-11-14 22:13:20 UTC.
const BASE_NS: u64 = 1_700_000_000_000_000_000;
const MN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, MN_NODE];

/// The capture being written, up to its frame count.
struct Out {
    w: PcapWriter,
    limit: u64,
    buf: [u8; MAX_FRAME_LEN],
}

impl Out {
    /// Writes `frame` stamped `at`; false once the capture is full.
    fn put(&mut self, at: u64, frame: &Frame<'_>, dst: [u8; 6], src: [u8; 6]) -> Result<bool> {
        if self.w.frames() == self.limit {
            return Ok(false);
        }
        let n = encode(frame, dst, src, &mut self.buf).expect("the synthetic frames encode");
        self.w
            .write(at, &self.buf[..n])
            .context("writing the capture")?;
        Ok(true)
    }
}

/// Writes the capture; returns the frames written.
pub fn synth(req: &SynthRequest) -> Result<u64> {
    let mut out = Out {
        w: PcapWriter::create(&req.path)?,
        limit: req.frames,
        buf: [0u8; MAX_FRAME_LEN],
    };
    let mut rng = fastrand::Rng::with_seed(req.seed);
    let cns = u64::from(req.cns);
    let slot = 20_000.min(req.cycle_ns * 8 / 10 / cns.max(1));
    let spread = |rng: &mut fastrand::Rng, j: u64| -> i64 {
        if j == 0 {
            0
        } else {
            rng.i64(-(j as i64)..=j as i64)
        }
    };
    let soa = Frame::Soa(Soa {
        nmt: NmtState::MS_OPERATIONAL,
        ea: false,
        er: false,
        service: RequestedService::NO_SERVICE,
        target: 0,
        epl_version: EPL_VERSION,
    });
    let mut polls = 0u64;
    'cycles: for k in 0u64.. {
        let release = BASE_NS + k * req.cycle_ns;
        let soc_at = release.saturating_add_signed(spread(&mut rng, req.jitter_ns));
        let net = release.saturating_add_signed(spread(&mut rng, req.jitter_ns / 10));
        let soc = Frame::Soc(Soc {
            mc: false,
            ps: false,
            net_time: NetTime {
                seconds: (net / 1_000_000_000) as u32,
                nanoseconds: (net % 1_000_000_000) as u32,
            },
            relative_time: (release - BASE_NS) / 1_000,
        });
        if !out.put(soc_at, &soc, MAC_SOC, MN_MAC)? {
            break;
        }
        for i in 0..cns {
            let node = (i + 1) as u8;
            let cn_mac = [0x02, 0, 0, 0, 0, node];
            let preq_at = soc_at + 2_000 + i * slot;
            let preq = Frame::PReq(PReq {
                node,
                ms: false,
                ea: false,
                rd: true,
                pdo_version: 0,
                payload: &[node],
            });
            if !out.put(preq_at, &preq, cn_mac, MN_MAC)? {
                break 'cycles;
            }
            polls += 1;
            if req.miss_every > 0 && polls.is_multiple_of(req.miss_every) {
                continue;
            }
            let pres_at = (preq_at + slot * 4 / 10).saturating_add_signed(spread(&mut rng, 1_000));
            let pres = Frame::PRes(PRes {
                node,
                nmt: NmtState::CS_OPERATIONAL,
                ms: false,
                en: false,
                rd: true,
                pr: 0,
                rs: 0,
                pdo_version: 0,
                payload: &[node; 6],
            });
            if !out.put(pres_at, &pres, MAC_PRES, cn_mac)? {
                break 'cycles;
            }
        }
        if !out.put(soc_at + 3_000 + cns * slot, &soa, MAC_SOA, MN_MAC)? {
            break;
        }
    }
    out.w
        .finish()
        .with_context(|| format!("writing {}", req.path.display()))
}
