//! The real-time paths of the UADP codec allocate nothing (design rule 2):
//! [`Writer::encode`], [`Reader::accept`] — on acceptance and on every kind
//! of rejection — and the Ethernet framing, measured with a counting global
//! allocator (`stats_alloc`, so that no `unsafe` is written here).
//!
//! This file is its own test binary, run without libtest's harness, so
//! no other thread allocates while the region is measured.
//!
//! The design rules cited here are in `docs/design.md`.

use std::alloc::System;
use std::hint::black_box;

use jitterlab_core::ether::{self, VlanTag, ETHERTYPE_UADP};
use jitterlab_core::uadp::{
    Publish, PublisherId, Reader, ReaderConfig, Reject, Value, Writer, WriterConfig,
};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

mod common;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn writer_reader_and_framing_allocate_nothing_on_any_path() {
    let rt = Writer::new(WriterConfig::rt_level()).unwrap();
    let tutorial = Writer::new(WriterConfig::tutorial()).unwrap();
    let named = Writer::new(WriterConfig {
        publisher_id: Some(PublisherId::String("io-sim".into())),
        ..WriterConfig::tutorial()
    })
    .unwrap();
    let rt_reader = Reader::new(ReaderConfig::rt_level());
    let tutorial_reader = Reader::new(ReaderConfig::tutorial());
    let named_reader = Reader::new(ReaderConfig {
        publisher_id: Some(PublisherId::String("io-sim".into())),
        ..ReaderConfig::tutorial()
    });
    let ten: Vec<Value> = (1..=10).map(Value::UInt32).collect();
    let now = [Value::DateTime(0x01dd_7b7e_c809_10c2)];
    let mut buf = [0u8; 128];
    let mut frame = [0u8; 128];
    let mut values = [Value::Boolean(false); 10];
    let keep_alive = [0x01u8, 0x81, 0x03];
    let invalid = [0x01u8, 0x00, 0x01, 0x00, 0x0d, 0, 0, 0, 0, 0, 0, 0, 0];
    let security = [0xf1u8, 0x11, 0xba, 0x08];
    let wrong_type = [0x01u8, 0x01, 0x01, 0x00, 0x07, 1, 0, 0, 0];
    let other_group = {
        let mut b = [0u8; 39];
        tutorial.encode(&Publish::default(), &now, &mut b).unwrap();
        b[5] = 101;
        b
    };
    let dst = [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01];
    let src = [0x02, 0, 0, 0, 0, 1];

    let region = Region::new(GLOBAL);
    let mut accepted = 0;
    let mut rejected = 0;
    for i in 0..1000u16 {
        let p = Publish {
            nm_sequence: i,
            dsm_sequence: i,
            timestamp: i64::from(i),
            picoseconds: 0,
        };
        let n = rt.encode(&p, &ten, &mut buf).unwrap();
        accepted += rt_reader.accept(&buf[..n], &mut values).unwrap().fields;
        let n = tutorial.encode(&p, &now, &mut buf).unwrap();
        accepted += tutorial_reader
            .accept(&buf[..n], &mut values)
            .unwrap()
            .fields;
        let n = named.encode(&p, &now, &mut buf).unwrap();
        accepted += named_reader.accept(&buf[..n], &mut values).unwrap().fields;
        // Ethernet: header, message, padding, and back.
        let h = ether::write_header(
            &mut frame,
            dst,
            src,
            Some(VlanTag {
                pcp: 6,
                dei: false,
                vid: 100,
            }),
            ETHERTYPE_UADP,
        )
        .unwrap();
        let m = rt.encode(&p, &ten, &mut frame[h..]).unwrap();
        let len = ether::pad(&mut frame, h + m).unwrap();
        let f = ether::parse(&frame[..len]).unwrap();
        accepted += rt_reader.accept(f.payload, &mut values).unwrap().fields;
        // Every kind of rejection, and the writer's errors.
        for bytes in [
            &buf[..n - 1],
            &keep_alive[..],
            &invalid[..],
            &security[..],
            &wrong_type[..],
            &other_group[..],
            &[][..],
        ] {
            let r: Reject = tutorial_reader.accept(bytes, &mut values).unwrap_err();
            black_box(r);
            rejected += 1;
        }
        black_box(rt.encode(&p, &ten[..9], &mut buf).unwrap_err());
        black_box(rt.encode(&p, &ten, &mut buf[..10]).unwrap_err());
        black_box(rt.encode(&p, &[Value::Int32(0); 10], &mut buf).unwrap_err());
        black_box(ether::parse(&frame[..10]).unwrap_err());
    }
    let stats = region.change();
    common::assert_nothing_allocated(stats);
    assert_eq!(accepted, 1000 * (10 + 1 + 1 + 10));
    assert_eq!(rejected, 7000);
    assert_eq!(values[..], ten[..]);
}

/// Runs without libtest (`harness = false` in `Cargo.toml`): libtest's own
/// main thread allocates while a test runs, and the counts are
/// process-wide, so under its harness the region could count them.
fn main() {
    writer_reader_and_framing_allocate_nothing_on_any_path();
    println!("test writer_reader_and_framing_allocate_nothing_on_any_path ... ok");
}
