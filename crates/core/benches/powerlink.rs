//! What encoding and decoding one POWERLINK frame costs, beside a plain
//! copy of the same bytes in the same run (for BENCHMARKS.md's ratios).
//!
//! Two frames, the ones every cycle of [Baumgartner POWERLINK]'s network carries:
//!
//! * `powerlink/pres/*` — a CN's PRes with [Baumgartner POWERLINK]'s 6 input bytes
//!   (60 bytes on the wire, padded).
//! * `powerlink/soc/*` — the MN's SoC with NetTime and RelativeTime.
//!
//! For each: `decode` is [`decode`] (Ethernet header, POWERLINK header,
//! fields, borrowed payload), `encode` is [`encode`] into a buffer (the
//! payload or time changing every frame), and `copy` a `copy_from_slice`
//! of the frame into a buffer. One frame per iteration, so criterion
//! reports time per frame and frames per second. Run: `cargo bench -p
//! jitterlab-core --bench powerlink -- --warm-up-time 1 --measurement-time 3`.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use jitterlab_core::powerlink::*;

const CN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const MN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xf0];

fn pres(payload: &[u8]) -> Frame<'_> {
    Frame::PRes(PRes {
        node: 1,
        nmt: NmtState::CS_OPERATIONAL,
        ms: false,
        en: false,
        rd: true,
        pr: 0,
        rs: 0,
        pdo_version: 0x10,
        payload,
    })
}

fn soc(i: u64) -> Frame<'static> {
    Frame::Soc(Soc {
        mc: false,
        ps: false,
        net_time: NetTime {
            seconds: 1_700_000_000,
            nanoseconds: (i % 1_000_000_000) as u32,
        },
        relative_time: i,
    })
}

fn bench(c: &mut Criterion) {
    let inputs = [1u8, 2, 3, 4, 5, 6];
    for (name, frame, src) in [("pres", pres(&inputs), CN_MAC), ("soc", soc(0), MN_MAC)] {
        let mut bytes = [0u8; 64];
        let dst = frame.multicast_mac().unwrap();
        let len = encode(&frame, dst, src, &mut bytes).unwrap();
        let bytes = &bytes[..len];
        let mut g = c.benchmark_group(format!("powerlink/{name}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("decode", |b| b.iter(|| decode(black_box(bytes)).unwrap()));
        let mut out = [0u8; 64];
        let mut i = 0u64;
        let mut payload = inputs;
        g.bench_function("encode", |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let f = if name == "pres" {
                    payload[0] = i as u8;
                    pres(&payload)
                } else {
                    soc(i)
                };
                encode(black_box(&f), dst, src, black_box(&mut out)).unwrap()
            })
        });
        g.bench_function("copy", |b| {
            b.iter(|| {
                let d = &mut out[..bytes.len()];
                d.copy_from_slice(black_box(bytes));
                black_box(d);
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
