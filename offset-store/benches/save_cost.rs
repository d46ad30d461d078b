//! What a position save costs on this machine: the number behind the crate's batching advice
//! ("checkpoint per batch, not per record").
//!
//! Run: `cargo bench -p booblik-offset-store --bench save_cost`. The store lives in a fresh
//! temporary directory, by default under the system temp dir; set `BOOBLIK_OFFSET_BENCH_DIR` to
//! measure another file system (e.g. the volume the demo uses).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use booblik_offset_store::{FileOffsetStore, InMemoryOffsetStore, OffsetStore};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Keys saved at once in the concurrent case: a consumer of an 8-partition topic checkpointing
/// every partition.
const CONCURRENT_KEYS: i32 = 8;

/// Samples per benchmark; fsync-bound iterations take milliseconds, so fewer than the default.
const SAMPLE_COUNT: usize = 20;

/// Wall time per benchmark.
const MEASUREMENT_TIME: Duration = Duration::from_secs(5);

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("BOOBLIK_OFFSET_BENCH_DIR") {
        Some(parent) => tempfile::tempdir_in(PathBuf::from(parent)),
        None => tempfile::tempdir(),
    }
    .expect("create a temporary directory for the bench")
}

fn save_cost(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("build a tokio runtime");
    let dir = bench_dir();
    let store = runtime
        .block_on(FileOffsetStore::open(dir.path()))
        .expect("open the store");
    // Warm the key up: its first save also creates and fsyncs its directories.
    for partition in 0..CONCURRENT_KEYS {
        runtime
            .block_on(store.save("bench", "events", partition, 0))
            .expect("first save");
    }

    let mut group = c.benchmark_group("offset_store");
    group.sample_size(SAMPLE_COUNT);
    group.measurement_time(MEASUREMENT_TIME);

    let mut offset = 0_i64;
    group.throughput(Throughput::Elements(1));
    group.bench_function("file_save_one_key", |b| {
        b.iter(|| {
            offset += 1;
            runtime
                .block_on(store.save("bench", "events", 0, black_box(offset)))
                .expect("save");
        });
    });

    group.throughput(Throughput::Elements(CONCURRENT_KEYS as u64));
    group.bench_function("file_save_8_keys_concurrently", |b| {
        b.iter(|| {
            offset += 1;
            let saves = (0..CONCURRENT_KEYS)
                .map(|partition| store.save("bench", "events", partition, black_box(offset)));
            for result in runtime.block_on(futures::future::join_all(saves)) {
                result.expect("save");
            }
        });
    });

    group.throughput(Throughput::Elements(1));
    group.bench_function("file_load", |b| {
        b.iter(|| {
            runtime
                .block_on(store.load("bench", "events", black_box(0)))
                .expect("load")
        });
    });

    let memory = InMemoryOffsetStore::new();
    group.bench_function("memory_save", |b| {
        b.iter(|| {
            offset += 1;
            runtime
                .block_on(memory.save("bench", "events", 0, black_box(offset)))
                .expect("save");
        });
    });
    group.finish();
}

criterion_group!(benches, save_cost);
criterion_main!(benches);
