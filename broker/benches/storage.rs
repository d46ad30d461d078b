//! Storage benchmarks: the append path in both write modes, and the sparse-index lookup.
//!
//! Run: `cargo bench -p booblik-broker --bench storage` (results and the machine they came from
//! are recorded in `docs/storage.md`).
//!
//! * `append/<mode>/<payload>B/batch<n>` — one `Partition::append` with ack WRITTEN: the trip
//!   through the writer queue, the write into the segment, publication, and the answer.
//! * `append_forced/<mode>/1024B/batch1` — the same with ack FORCED: a lone producer pays a whole
//!   fsync (after an msync in MAPPED mode).
//! * `index_lookup/<records>` — `Partition::read` at random offsets of a 64-byte-record log:
//!   segment search, binary search in the sparse index, forward scan to the record.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use booblik_broker::storage::{Partition, Storage, StorageConfig, WriteMode};
use booblik_protocol::{AckPolicy, RecordSet, TopicName};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Segment size for the append benches: large enough that rolls are rare.
const BENCH_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Retention keeps the benches' disk use bounded however many iterations criterion runs.
const BENCH_RETENTION_BYTES: u64 = 256 * 1024 * 1024;
const BENCH_RETENTION_CHECK_MS: u64 = 200;
/// Records in the log the index lookup bench searches.
const LOOKUP_RECORDS: u64 = 200_000;

struct Fixture {
    _dir: tempfile::TempDir,
    storage: Storage,
    partition: Arc<Partition>,
}

fn fixture(mode: WriteMode) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = StorageConfig {
        data_dir: dir.path().to_path_buf(),
        segment_bytes: BENCH_SEGMENT_BYTES,
        write_mode: mode,
        retention_bytes: Some(BENCH_RETENTION_BYTES),
        retention_check_interval_ms: BENCH_RETENTION_CHECK_MS,
        ..StorageConfig::default()
    };
    let storage = Storage::open(config, &[(TopicName::new("bench").unwrap(), 1)]).expect("open");
    let partition = Arc::clone(storage.partition("bench", 0).unwrap());
    Fixture {
        _dir: dir,
        storage,
        partition,
    }
}

fn batch(payload_bytes: usize, records: usize) -> RecordSet {
    let payload = vec![0xA5u8; payload_bytes];
    RecordSet::from_payloads(std::iter::repeat_n(payload.as_slice(), records)).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn append(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append");
    for mode in [WriteMode::Mapped, WriteMode::File] {
        for payload_bytes in [64usize, 1024] {
            for records in [1usize, 100] {
                let fixture = fixture(mode);
                let set = batch(payload_bytes, records);
                group.throughput(Throughput::Elements(records as u64));
                let id = BenchmarkId::new(
                    format!("{}/{payload_bytes}B", mode.name()),
                    format!("batch{records}"),
                );
                group.bench_function(id, |b| {
                    b.iter(|| {
                        rt.block_on(fixture.partition.append(set.clone(), AckPolicy::Written))
                            .unwrap()
                    });
                });
                fixture.storage.close().unwrap();
            }
        }
    }
    group.finish();
}

fn append_forced(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("append_forced");
    group.sample_size(20);
    for mode in [WriteMode::Mapped, WriteMode::File] {
        let fixture = fixture(mode);
        let set = batch(1024, 1);
        group.throughput(Throughput::Elements(1));
        group.bench_function(
            BenchmarkId::new(format!("{}/1024B", mode.name()), "batch1"),
            |b| {
                b.iter(|| {
                    rt.block_on(fixture.partition.append(set.clone(), AckPolicy::Forced))
                        .unwrap()
                });
            },
        );
        fixture.storage.close().unwrap();
    }
    group.finish();
}

fn index_lookup(c: &mut Criterion) {
    let rt = runtime();
    let fixture = fixture(WriteMode::File);
    let set = batch(64, 1000);
    for _ in 0..LOOKUP_RECORDS / 1000 {
        rt.block_on(fixture.partition.append(set.clone(), AckPolicy::None))
            .unwrap();
    }
    rt.block_on(fixture.partition.append(batch(64, 1), AckPolicy::Written))
        .unwrap();
    // A fixed pseudo-random walk over the offsets (an LCG; no RNG state in the timed loop).
    let offsets: Vec<i64> = (0..4096u64)
        .map(|n| {
            ((n.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407)
                >> 20)
                % LOOKUP_RECORDS) as i64
        })
        .collect();
    let mut group = c.benchmark_group("index_lookup");
    group.throughput(Throughput::Elements(1));
    let mut next = 0usize;
    group.bench_function(BenchmarkId::from_parameter(LOOKUP_RECORDS), |b| {
        b.iter(|| {
            next = (next + 1) % offsets.len();
            let slice = fixture.partition.read(offsets[next], 72).unwrap();
            black_box(slice.position())
        });
    });
    group.finish();
    fixture.storage.close().unwrap();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = append, append_forced, index_lookup
}
criterion_main!(benches);
