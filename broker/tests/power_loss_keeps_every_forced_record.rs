//! A simulated power loss keeps every FORCED-acknowledged record, and recovery opens whatever a
//! power loss can leave.
//!
//! A SIGKILL cannot test FORCED: the kernel's page cache outlives the process, so a record
//! answered before its fsync survives anyway. Here the storage runs over `SimIo`'s power-loss
//! model (`broker/src/storage/test_io.rs`): every file keeps a durable image as of its last
//! fsync, every directory its names as of its last fsync. Each seed drives a random workload —
//! appends at all three ack levels, small segments that roll, size retention, injected fsync
//! failures — and cuts the power at a random I/O call. The files are then rewritten to what the
//! disk would hold (odd seeds: the durable image only; seeds 0, 4, 8, …: also a seeded prefix of
//! the pages written since the last fsync, in file order, and maybe one torn page after them;
//! seeds 2, 6, 10, …: a seeded subset of those pages, written back in any order, and maybe one
//! torn page), the storage reopens over them, and:
//!
//! * recovery accepts the directory (a power loss is not corruption) — and if it refused, it
//!   changed no file;
//! * every FORCED-acknowledged record not dropped by retention is there, byte for byte, at its
//!   offset;
//! * the log is gap-free and a prefix of what was appended: the record at each offset is the one
//!   appended at that offset, whatever its ack;
//! * the next append lands at the recovered high watermark.
//!
//! A third test runs the same workload in MAPPED mode but kills only the *process*, at a random
//! store into the mapping (each record is three: payload, CRC, length — `mapping.rs`), and keeps
//! every file's current image, as the page cache does. Besides the checks above, every WRITTEN
//! or FORCED acknowledgement is kept, and recovery finds no torn record at the end of the log
//! (`PartitionStats::recovered_end` is not `Torn`): with the length stored last, a record cut
//! between its stores has a zero length. That is what the store order is for.
//!
//! A fourth kills the MAPPED process at a random I/O call instead. A FORCED batch does not go
//! through the mapping in MAPPED mode: it is one `pwrite` with its first length zero, then a
//! `pwrite` of that length (`active.rs`, § FORCED batches in MAPPED mode), so a kill between the
//! two must leave a zero length over the batch's bytes, never a torn record — and the same
//! checks as the third test hold.
//!
//! In MAPPED mode a roll hands the full segment to a sealing thread (`storage/log.rs`, § The seal
//! in the background), so a power loss often falls while an earlier segment is not yet durable,
//! and recovery must end the log there and move the last segment aside (`storage/recovery.rs`,
//! rule 3); every check above still holds.
//!
//! Seeds: `BOOBLIK_POWER_LOSS_SEEDS` (default 1000 per test) from `BOOBLIK_POWER_LOSS_FIRST_SEED`
//! (default 0); `BOOBLIK_POWER_LOSS_SEED=n` replays one. A failure names its seed and mode. The
//! workload and the crash call follow from the seed; in MAPPED mode the sealing thread's calls
//! interleave with the writer's by thread timing, so a replay reproduces the workload, not always
//! the exact call the power went out at.

mod storage_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use booblik_broker::storage::test_io::{PowerLoss, SimIo};
use booblik_broker::storage::{Partition, RecoveredEnd, Storage, WriteMode};
use booblik_protocol::AckPolicy;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use storage_support::{config, partition, partition_dir, read_all, records};

/// Seeds per write mode when the environment does not say.
const DEFAULT_SEEDS: u64 = 1000;
/// Operations (appends, retention runs, armed faults) per seed, at most.
const MAX_OPERATIONS: u32 = 60;
/// Segment capacities a seed picks from: small, so the workload rolls and retention drops.
const SEGMENT_BYTES: [u64; 4] = [1024, 4096, 16 * 1024, 64 * 1024];
/// Largest payload a seed appends (bigger than a page, so records span pages).
const MAX_PAYLOAD_BYTES: usize = 9000;

#[test]
fn power_loss_keeps_every_forced_record_in_mapped_mode() {
    run_seeds(WriteMode::Mapped, Crash::PowerLoss);
}

#[test]
fn power_loss_keeps_every_forced_record_in_file_mode() {
    run_seeds(WriteMode::File, Crash::PowerLoss);
}

#[test]
fn power_loss_spared_a_process_crash_between_mapped_stores_keeps_every_record_untorn() {
    run_seeds(WriteMode::Mapped, Crash::ProcessAtStore);
}

#[test]
fn power_loss_spared_a_process_crash_between_a_mapped_forced_batch_s_writes_keeps_every_record_untorn()
 {
    run_seeds(WriteMode::Mapped, Crash::ProcessAtCall);
}

/// What goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Crash {
    /// The power, at a random I/O call: only what the model keeps survives.
    PowerLoss,
    /// The process only, at a random store into the mapping (MAPPED): the page cache survives.
    ProcessAtStore,
    /// The process only, at a random I/O call (MAPPED): the page cache survives.
    ProcessAtCall,
}

impl Crash {
    /// True when only the process dies, so the page cache (every WRITTEN record) survives.
    fn spares_the_page_cache(self) -> bool {
        matches!(self, Crash::ProcessAtStore | Crash::ProcessAtCall)
    }

    fn test_name(self, mode: WriteMode) -> String {
        match self {
            Crash::PowerLoss => format!(
                "power_loss_keeps_every_forced_record_in_{}_mode",
                mode.name()
            ),
            Crash::ProcessAtStore => {
                "power_loss_spared_a_process_crash_between_mapped_stores_keeps_every_record_untorn"
                    .to_owned()
            }
            Crash::ProcessAtCall => "power_loss_spared_a_process_crash_between_a_mapped_forced_\
                                     batch_s_writes_keeps_every_record_untorn"
                .to_owned(),
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number"))
    })
}

fn run_seeds(mode: WriteMode, crash: Crash) {
    let seeds = if let Some(seed) = env_u64("BOOBLIK_POWER_LOSS_SEED") {
        seed..seed + 1
    } else {
        let first = env_u64("BOOBLIK_POWER_LOSS_FIRST_SEED").unwrap_or(0);
        first..first + env_u64("BOOBLIK_POWER_LOSS_SEEDS").unwrap_or(DEFAULT_SEEDS)
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let mut totals = Totals::default();
    for seed in seeds.clone() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(one_seed(seed, mode, crash))
        }));
        match outcome {
            Ok(Ok(run)) => totals.add(&run),
            Ok(Err(failure)) => panic!(
                "{mode} seed {seed} ({crash:?}): {failure}\nreplay: BOOBLIK_POWER_LOSS_SEED={seed} \
                 cargo test -p booblik-broker --test power_loss_keeps_every_forced_record {}",
                crash.test_name(mode)
            ),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)");
                panic!(
                    "{mode} seed {seed} ({crash:?}) panicked: {message}\nreplay: \
                     BOOBLIK_POWER_LOSS_SEED={seed} cargo test -p booblik-broker --test \
                     power_loss_keeps_every_forced_record {}",
                    crash.test_name(mode)
                )
            }
        }
    }
    eprintln!(
        "{mode} ({crash:?}): {} seeds in {:.1} s: {} FORCED records acknowledged, all kept \
         ({} WRITTEN, kept: {}); {} records recovered; {} crashes mid-run; {} seeds with unsynced \
         pages kept, {} with a torn page; ends of the log: {} a zero length over non-zero bytes, \
         {} torn, {} quarantined",
        seeds.end - seeds.start,
        started.elapsed().as_secs_f64(),
        totals.forced_acknowledged,
        totals.written_acknowledged,
        crash.spares_the_page_cache(),
        totals.recovered,
        totals.crashed_mid_workload,
        totals.reordered,
        totals.torn,
        totals.zero_length_over_bytes,
        totals.torn_ends,
        totals.quarantined,
    );
    // The loop must exercise what it claims to.
    let count = seeds.end - seeds.start;
    if count >= 100 {
        assert!(totals.forced_acknowledged > count, "too few FORCED acks");
        assert!(
            totals.crashed_mid_workload * 4 > count,
            "too few mid-run crashes"
        );
        match crash {
            Crash::PowerLoss => assert!(
                totals.torn > 0 && totals.reordered > 0,
                "no reordered pages"
            ),
            Crash::ProcessAtStore => assert!(
                totals.zero_length_over_bytes * 10 > count,
                "too few crashes between the stores of one record"
            ),
            Crash::ProcessAtCall => assert!(
                totals.zero_length_over_bytes * 20 > count,
                "too few crashes between the two writes of a FORCED batch"
            ),
        }
    }
}

#[derive(Debug, Default)]
struct Totals {
    forced_acknowledged: u64,
    recovered: u64,
    crashed_mid_workload: u64,
    reordered: u64,
    torn: u64,
    written_acknowledged: u64,
    zero_length_over_bytes: u64,
    torn_ends: u64,
    quarantined: u64,
}

impl Totals {
    fn add(&mut self, run: &Run) {
        self.forced_acknowledged += run.forced_acknowledged;
        self.recovered += run.recovered;
        self.crashed_mid_workload += u64::from(run.crashed_mid_workload);
        self.reordered += u64::from(run.reordered);
        self.torn += u64::from(run.torn);
        self.written_acknowledged += run.written_acknowledged;
        match run.recovered_end {
            RecoveredEnd::ZeroLength {
                nonzero_after: true,
            } => self.zero_length_over_bytes += 1,
            RecoveredEnd::Torn { .. } => self.torn_ends += 1,
            RecoveredEnd::Quarantined { .. } => self.quarantined += 1,
            _ => {}
        }
    }
}

/// What one seed did.
#[derive(Debug, Default)]
struct Run {
    forced_acknowledged: u64,
    recovered: u64,
    crashed_mid_workload: bool,
    reordered: bool,
    torn: bool,
    written_acknowledged: u64,
    recovered_end: RecoveredEnd,
}

/// A payload unique to (append, record) within a seed, `len` bytes (the tag, then random bytes).
fn payload(rng: &mut StdRng, append: u32, record: usize, len: usize) -> Vec<u8> {
    let mut bytes = format!("a{append}r{record}-").into_bytes();
    let tag = bytes.len();
    bytes.resize(len.max(tag), 0);
    rng.fill(&mut bytes[tag..]);
    bytes
}

async fn one_seed(seed: u64, mode: WriteMode, crash: Crash) -> Result<Run, String> {
    let mut rng = StdRng::seed_from_u64(seed ^ (mode as u64) << 63);
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimIo::with_power_loss());
    let mut config = config(dir.path(), mode, SEGMENT_BYTES[rng.random_range(0..4)]);
    config.io = Arc::clone(&sim) as _;
    let retention = rng.random_bool(0.5);
    if retention {
        config.retention_bytes = Some(config.segment_bytes * 3);
    }
    let max_payload = (config.segment_bytes as usize - 8).min(MAX_PAYLOAD_BYTES);
    let operations = rng.random_range(1..=MAX_OPERATIONS);
    let storage = storage_support::open(&config).map_err(|e| format!("first open: {e}"))?;
    let part = partition(&storage);
    // The power goes out at a random call; past the end of the workload, after it. The process
    // at a random store (about seven per operation).
    match crash {
        Crash::PowerLoss | Crash::ProcessAtCall => {
            sim.crash_after(rng.random_range(1..=u64::from(operations) * 2));
        }
        Crash::ProcessAtStore => {
            sim.crash_after_stores(rng.random_range(1..=u64::from(operations) * 8));
        }
    }
    // Every record queued, in queue order: offset n holds `appended[n]` if it holds anything.
    let mut appended: Vec<Vec<u8>> = Vec::new();
    // FORCED acknowledgements: offset → payload.
    let mut forced: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    // After a process crash, the WRITTEN ones must be kept too.
    let mut written: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    let mut run = Run::default();
    for op in 0..operations {
        if sim.has_crashed() {
            break;
        }
        match rng.random_range(0..20) {
            0 if retention => {
                let _ = part.enforce_retention().await;
            }
            1 => {
                // A failing fsync poisons; arm it once the writer has handled what is queued,
                // so the seed decides which fsync fails.
                drain(&part).await;
                sim.fail_next_fsync();
            }
            _ => {
                let count = rng.random_range(1..=4);
                let batch: Vec<Vec<u8>> = (0..count)
                    .map(|n| {
                        let len = if rng.random_bool(0.2) {
                            rng.random_range(1..=max_payload)
                        } else {
                            rng.random_range(1..=max_payload.min(200))
                        };
                        payload(&mut rng, op, n, len)
                    })
                    .collect();
                let ack = match rng.random_range(0..3) {
                    0 => AckPolicy::None,
                    1 => AckPolicy::Written,
                    _ => AckPolicy::Forced,
                };
                let base = appended.len() as i64;
                let answer = part.append(records(&batch), ack).await;
                // Every batch takes its offsets in the intended log, whatever the answer: one
                // that failed (an injected fsync failure, or the power going out) may still have
                // been written, and nothing is appended after it (the partition is poisoned).
                appended.extend(batch.iter().cloned());
                match answer {
                    Ok(answer) => {
                        if let Some(appended_at) = answer
                            && appended_at.base_offset != base
                        {
                            return Err(format!(
                                "append {op} got offset {} where {base} was next",
                                appended_at.base_offset
                            ));
                        }
                        if ack == AckPolicy::Forced {
                            for (n, payload) in batch.into_iter().enumerate() {
                                forced.insert(base + n as i64, payload);
                            }
                            run.forced_acknowledged += count as u64;
                        } else if ack == AckPolicy::Written {
                            for (n, payload) in batch.into_iter().enumerate() {
                                written.insert(base + n as i64, payload);
                            }
                            run.written_acknowledged += count as u64;
                        }
                    }
                    Err(error) if error.is_refusal() => {
                        return Err(format!("append {op} refused: {error}"));
                    }
                    Err(_) => {}
                }
            }
        }
    }
    drain(&part).await;
    run.crashed_mid_workload = sim.has_crashed();
    sim.crash_now().unwrap();
    let log_start_before = part.log_start_offset();
    drop(part);
    // Blocking, so the writer is gone before the disk is rewritten (its final sync fails: the
    // power is out). Dropping the storage on this runtime thread would not wait for it.
    let _ = storage.close();
    drop(storage);

    let loss = match seed % 4 {
        0 => PowerLoss::InOrder { seed },
        2 => PowerLoss::AnyOrder { seed },
        _ => PowerLoss::DurableOnly,
    };
    let report = match crash {
        Crash::PowerLoss => {
            let report = sim.power_loss(loss).unwrap();
            run.reordered = report.unsynced_pages_kept > 0;
            run.torn = report.torn_pages > 0;
            Some(report)
        }
        Crash::ProcessAtStore | Crash::ProcessAtCall => {
            sim.process_crash().unwrap();
            None
        }
    };
    let cut = match &report {
        Some(report) => format!("a power loss ({loss:?}, {report:?})"),
        None => "a process crash".to_owned(),
    };

    let before = files(&partition_dir(dir.path()));
    let storage = match Storage::open(config.clone(), &[(storage_support::topic(), 1)]) {
        Ok(storage) => storage,
        Err(error) => {
            let unchanged = files(&partition_dir(dir.path())) == before;
            return Err(format!(
                "recovery refused what {cut} left: {error}; files \
                 {}",
                if unchanged { "unchanged" } else { "CHANGED" }
            ));
        }
    };
    let part = partition(&storage);
    run.recovered_end = part.stats().recovered_end;
    if crash.spares_the_page_cache()
        && matches!(
            run.recovered_end,
            RecoveredEnd::Torn { .. } | RecoveredEnd::Quarantined { .. }
        )
    {
        return Err(format!(
            "a process crash left a torn record at the end of the log: recovery found {:?}",
            run.recovered_end
        ));
    }
    let log_start = part.log_start_offset();
    if log_start > log_start_before {
        return Err(format!(
            "the log starts at {log_start} after recovery, past {log_start_before} before"
        ));
    }
    let log = read_all(&part);
    run.recovered = log.len() as u64;
    for (offset, payload) in &log {
        match appended.get(*offset as usize) {
            Some(expected) if expected == payload => {}
            _ => {
                return Err(format!(
                    "offset {offset} holds {} bytes that were not appended there",
                    payload.len()
                ));
            }
        }
    }
    let high_watermark = part.high_watermark();
    if crash.spares_the_page_cache() {
        // The page cache outlived the process: WRITTEN means kept.
        forced.extend(written);
    }
    for (offset, payload) in forced.range(log_start..) {
        if *offset >= high_watermark {
            return Err(format!(
                "acknowledged record {offset} lost: the log ends at {high_watermark} ({cut})"
            ));
        }
        let found = &log[(offset - log_start) as usize].1;
        if found != payload {
            return Err(format!("FORCED record {offset} changed"));
        }
    }
    let next = part
        .append(records(&[b"after"]), AckPolicy::Forced)
        .await
        .map_err(|e| format!("append after recovery: {e}"))?
        .expect("FORCED answers");
    if next.base_offset != high_watermark {
        return Err(format!(
            "the first append after recovery got {} instead of {high_watermark}",
            next.base_offset
        ));
    }
    storage.close().map_err(|e| format!("close: {e}"))?;
    Ok(run)
}

/// Waits until the writer has handled everything queued.
async fn drain(partition: &Partition) {
    while partition.stats().queued_appends > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

/// Every file of `dir` with its bytes.
fn files(dir: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.file_name(), std::fs::read(entry.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}
