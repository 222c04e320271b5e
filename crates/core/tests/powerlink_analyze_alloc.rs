//! The capture analysis allocates nothing per frame (design rule 2, and a
//! memory that stays flat whatever the capture's length): after
//! [`Analyzer::new`], pushing frames of every kind — POWERLINK of each
//! message type, malformed, unsupported, other protocols, cooked — is
//! measured with a counting global allocator (`stats_alloc`, so that no
//! `unsafe` is written here).
//!
//! This file is its own test binary, run without libtest's harness, so
//! no other thread allocates while the region is measured.
//!
//! The design rules cited here are in `docs/design.md`.

use std::alloc::System;

use jitterlab_core::powerlink::analyze::Analyzer;
use jitterlab_core::powerlink::*;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

mod common;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn frame(f: Frame<'_>) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let dst = f.multicast_mac().unwrap_or([2, 0, 0, 0, 0, 1]);
    let n = encode(&f, dst, [2, 0, 0, 0, 0, 0xF0], &mut buf).unwrap();
    buf[..n].to_vec()
}

fn pushing_frames_allocates_nothing() {
    let soc = |t: u64| {
        frame(Frame::Soc(Soc {
            net_time: NetTime {
                seconds: (t / 1_000_000_000) as u32,
                nanoseconds: (t % 1_000_000_000) as u32,
            },
            relative_time: t / 1000,
            ..Soc::default()
        }))
    };
    let preq = frame(Frame::PReq(PReq {
        node: 1,
        ms: false,
        ea: false,
        rd: true,
        pdo_version: 0,
        payload: &[1],
    }));
    let pres = |node| {
        frame(Frame::PRes(PRes {
            node,
            nmt: NmtState::CS_OPERATIONAL,
            ms: false,
            en: false,
            rd: true,
            pr: 0,
            rs: 0,
            pdo_version: 0,
            payload: &[0; 6],
        }))
    };
    let soa = frame(Frame::Soa(Soa {
        nmt: NmtState::MS_OPERATIONAL,
        ea: false,
        er: false,
        service: RequestedService::STATUS_REQUEST,
        target: 1,
        epl_version: EPL_VERSION,
    }));
    let status = frame(Frame::ASnd(ASnd {
        dest: MN_NODE,
        src: 1,
        service: ASndService::StatusResponse(StatusResponse {
            en: false,
            ec: false,
            pr: 0,
            rs: 0,
            nmt: NmtState::CS_OPERATIONAL,
            static_errors: 0,
            errors: &[],
        }),
    }));
    let socs: Vec<Vec<u8>> = (0..3000u64)
        .map(|k| soc(1_000_000_000 + k * 500_000))
        .collect();
    let mut malformed = soc(1);
    malformed.truncate(20);
    let mut ainv = soc(1);
    ainv[14] = 0x0D;
    let mut ipv4 = vec![0u8; 60];
    ipv4[12] = 0x08;
    let (pres1, pres_mn) = (pres(1), pres(MN_NODE));

    let mut a = Analyzer::new(None);
    let region = Region::new(GLOBAL);
    // 3000 cycles: past the 1024 periods the cycle time is inferred from.
    for (k, soc) in socs.iter().enumerate() {
        let t = 1_000_000_000 + k as u64 * 500_000;
        a.push(t, soc);
        if k % 2 == 0 {
            a.push(t + 10_000, &preq);
            a.push(t + 20_000, &pres1);
        } else {
            a.push(t + 10_000, &pres_mn);
            a.push(t + 20_000, &pres1);
        }
        a.push(t + 30_000, &soa);
        a.push(t + 40_000, &status);
        a.push(t + 41_000, &malformed);
        a.push(t + 42_000, &ainv);
        a.push(t + 43_000, &ipv4);
        a.push(t + 44_000, &[0xff; 5]);
        a.push_ethertype(t + 45_000, 0x88AB, &preq[14..]);
    }
    let stats = region.change();
    common::assert_nothing_allocated(stats);
    let r = a.finish();
    assert_eq!(r.frames.total, 3000 * 10);
    assert_eq!(r.cycle_time.unwrap().ns, 500_000);
}

/// Runs without libtest (`harness = false` in `Cargo.toml`): libtest's own
/// main thread allocates while a test runs, and the counts are
/// process-wide, so under its harness the region could count them.
fn main() {
    pushing_frames_allocates_nothing();
    println!("test pushing_frames_allocates_nothing ... ok");
}
