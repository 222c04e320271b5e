//! What reading and writing one UADP message costs, beside a plain copy of
//! the same bytes in the same run (issue: "messages per second per core,
//! as a ratio to a plain copy").
//!
//! Two messages, the reference's two publishers as [`WriterConfig`]
//! presets reproduce them byte for byte:
//!
//! * `uadp/tutorial/*` — 39 bytes: PublisherId, WriterGroupId, one
//!   DataSetWriterId, a DataSetMessage Timestamp and configuration version,
//!   one DateTime Variant.
//! * `uadp/rt_level/*` — 55 bytes: the NetworkMessage and DataSetMessage
//!   sequence numbers and ten RawData UInt32.
//!
//! For each: `accept` is [`Reader::accept`] (parse, the acceptance rules,
//! the fields into a slice), `encode` is [`Writer::encode`] (into a
//! buffer, the sequence numbers and time stamp changing every message),
//! `decode_model` the allocating [`decode`] for comparison, and `copy` a
//! `copy_from_slice` of the message into a buffer. Throughput is one
//! message per iteration, so criterion reports time per message and
//! messages per second. Run: `cargo bench -p jitterlab-core --bench uadp --
//! --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use jitterlab_core::uadp::{
    decode, decode_with_raw_types, Publish, Reader, ReaderConfig, Value, Writer, WriterConfig,
};

/// One preset: its writer, its reader and a message of it.
struct Case {
    name: &'static str,
    writer: Writer,
    reader: Reader,
    values: Vec<Value>,
}

fn cases() -> [Case; 2] {
    [
        Case {
            name: "tutorial",
            writer: Writer::new(WriterConfig::tutorial()).unwrap(),
            reader: Reader::new(ReaderConfig::tutorial()),
            values: vec![Value::DateTime(0x01dd_7b7e_c809_10c2)],
        },
        Case {
            name: "rt_level",
            writer: Writer::new(WriterConfig::rt_level()).unwrap(),
            reader: Reader::new(ReaderConfig::rt_level()),
            values: (1..=10).map(Value::UInt32).collect(),
        },
    ]
}

fn bench(c: &mut Criterion) {
    for case in cases() {
        let mut message = vec![0u8; case.writer.len()];
        case.writer
            .encode(&Publish::default(), &case.values, &mut message)
            .unwrap();
        let mut g = c.benchmark_group(format!("uadp/{}", case.name));
        g.throughput(Throughput::Elements(1));
        let mut values = [Value::Boolean(false); 10];
        g.bench_function("accept", |b| {
            b.iter(|| {
                case.reader
                    .accept(black_box(&message), black_box(&mut values))
                    .unwrap()
            })
        });
        let mut out = [0u8; 64];
        let mut i = 0u16;
        g.bench_function("encode", |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let publish = Publish {
                    nm_sequence: i,
                    dsm_sequence: i,
                    timestamp: i64::from(i),
                    picoseconds: 0,
                };
                case.writer
                    .encode(&publish, black_box(&case.values), black_box(&mut out))
                    .unwrap()
            })
        });
        let types = case.reader.config().fields.clone().unwrap();
        g.bench_function("decode_model", |b| {
            b.iter(|| {
                if case.name == "rt_level" {
                    decode_with_raw_types(black_box(&message), &types).unwrap()
                } else {
                    decode(black_box(&message)).unwrap()
                }
            })
        });
        g.bench_function("copy", |b| {
            b.iter(|| {
                let dst = &mut out[..message.len()];
                dst.copy_from_slice(black_box(&message));
                black_box(dst);
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
