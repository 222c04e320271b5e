//! The SDO and concise DCF codecs allocate nothing (design rule 2), so an
//! MN or CN may speak SDO inside its cycle: decoding an SDO frame, reading
//! its WriteByIndex data, encoding the response, cutting a long value into
//! segments and putting them together again, and walking a concise DCF's
//! entries, measured with a counting global allocator (`stats_alloc`).
//!
//! This file is its own test binary, run without libtest's harness, so
//! no other thread allocates while the region is measured.
//!
//! The design rules cited here are in `docs/design.md`.

use std::alloc::System;
use std::hint::black_box;

use jitterlab_core::powerlink::cdc::{self, Cdc, Entry};
use jitterlab_core::powerlink::sdo::*;
use jitterlab_core::powerlink::*;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

mod common;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const MN: [u8; 6] = [2, 0, 0, 0, 0, 0xf0];
const CN: [u8; 6] = [2, 0, 0, 0, 0, 0x01];

fn sdo_frames_and_concise_dcfs_are_read_and_written_without_allocating() {
    // Everything the measured region uses is allocated before it.
    let value: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
    let mut request = vec![0u8; 604];
    let mut frame = vec![0u8; MAX_FRAME_LEN];
    let mut answer = vec![0u8; MAX_FRAME_LEN];
    let mut whole = vec![0u8; 1024];
    let mut dcf = vec![0u8; 256];
    let writes = [
        Entry {
            addr: IndexAddress::new(0x1006, 0),
            data: &50_000u32.to_le_bytes(),
        },
        Entry {
            addr: IndexAddress::new(0x1A00, 0),
            data: &[1],
        },
    ];

    let region = Region::new(GLOBAL);
    let mut handled = 0usize;
    for round in 0..100u8 {
        let data =
            write_by_index_request(IndexAddress::new(0x1F22, 1), &value, &mut request).unwrap();
        let mut reassembly = Reassembly::new(&mut whole);
        for (i, command) in segments(
            round,
            CommandId::WRITE_BY_INDEX,
            false,
            data,
            MAX_SEGMENT_SIZE,
        )
        .enumerate()
        {
            let sdo = Sdo {
                seq: SeqLayer {
                    receive_seq: 0,
                    receive_con: Con::VALID,
                    send_seq: i as u8,
                    send_con: Con::VALID,
                },
                command,
            };
            let f = Frame::ASnd(ASnd {
                dest: 1,
                src: MN_NODE,
                service: ASndService::Sdo(sdo),
            });
            let n = encode(&f, MAC_ASND, MN, &mut frame).unwrap();
            let Frame::ASnd(ASnd {
                service: ASndService::Sdo(got),
                ..
            }) = decode(&frame[..n]).unwrap().frame
            else {
                panic!("not SDO")
            };
            if let Some(all) = reassembly.push(&got.command).unwrap() {
                let (addr, v) = parse_write_by_index_request(all).unwrap();
                handled += black_box(addr.index) as usize + v.len();
                let code = AbortCode::OBJECT_DOES_NOT_EXIST.to_bytes();
                let reply = Frame::ASnd(ASnd {
                    dest: MN_NODE,
                    src: 1,
                    service: ASndService::Sdo(Sdo {
                        seq: got.seq,
                        command: CommandLayer::abort(round, CommandId::WRITE_BY_INDEX, true, &code),
                    }),
                });
                handled += encode(&reply, MAC_ASND, CN, &mut answer).unwrap();
            }
        }
        let len = cdc::write(&writes, &mut dcf).unwrap();
        let parsed = Cdc::parse(&dcf[..len]).unwrap();
        handled += parsed.entries().map(|e| e.data.len()).sum::<usize>();
    }
    let stats = region.change();
    common::assert_nothing_allocated(stats);
    assert_eq!(handled, 100 * (0x1F22 + 600 + 60 + 5));
}

/// Runs without libtest (`harness = false` in `Cargo.toml`): libtest's own
/// main thread allocates while a test runs, and the counts are
/// process-wide, so under its harness the region could count them.
fn main() {
    sdo_frames_and_concise_dcfs_are_read_and_written_without_allocating();
    println!("test sdo_frames_and_concise_dcfs_are_read_and_written_without_allocating ... ok");
}
