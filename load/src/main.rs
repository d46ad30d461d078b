//! `booblik-load`: the load harness and the task-queue latency experiment.
//!
//! Every subcommand first measures this machine's baseline (loopback round trip, loopback TCP
//! throughput, fsync latency) and reports every result beside it and as a ratio to it. Output:
//! a progress bar on stderr, a markdown report on stdout, `--json FILE` for the numbers,
//! `--out-dir DIR` for SVG plots of the queue runs. Every run is bounded in time and count,
//! and every broker the harness starts listens on loopback only.
//!
//! | module | what it is |
//! |---|---|
//! | `baseline`, `machine`, `cpu` | the machine's floor, its description, CPU time |
//! | `broker_host` | embedded / child-process / external broker (and the hidden `serve-child`) |
//! | `queue/` | the task-queue experiment (sweep, chaos, observer, plots) |
//! | `produce`, `fetch`, `e2e` | broker workloads |
//! | `soak/` | the bounded reliability soak |
//! | `report`, `targets`, `progress`, `latency`, `log_probe`, `ack`, `harness` | plumbing |

mod ack;
mod baseline;
mod broker_host;
mod cpu;
mod e2e;
mod fetch;
mod harness;
mod latency;
mod log_probe;
mod machine;
mod produce;
mod progress;
mod queue;
mod report;
mod requests;
mod soak;
mod targets;

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};

use crate::ack::Ack;
use crate::broker_host::BrokerProcess;
use crate::harness::Harness;
use crate::machine::Machine;
use crate::progress::Progress;
use crate::queue::peers::{Peer, PeerServers, ServerUrls};
use crate::queue::run::QueueOutcome;
use crate::queue::{
    Arrival, ChaosConfig, ChaosMode, PickArg, PoolConnection, QueueRunConfig, System,
};
use crate::report::{Report, Run};
use booblik_samples::engine::EngineKind;
use booblik_samples::queue::worker::MAX_POOL_WORKERS;

/// The booblik load harness.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[allow(clippy::large_enum_variant)] // parsed once; boxing would only obscure clap's derive
#[derive(Debug, Subcommand)]
enum Command {
    /// This machine's floor only: loopback round trip, loopback TCP throughput, fsync latency.
    Baseline(CommonArgs),
    /// The task-queue experiment: workers × pick × arrival, claim latency and lost work.
    Queue {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        queue: QueueArgs,
    },
    /// Produce throughput: record sizes × ack policies × producers × client path.
    Produce {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        produce: ProduceArgs,
    },
    /// Fetch throughput and CPU per GiB, zero-copy against heap (broker in a child process).
    Fetch {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        fetch: FetchArgs,
    },
    /// Request round trips one at a time, then produce → follow latency at steady rates.
    E2e {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        e2e: E2eArgs,
    },
    /// Bounded reliability soak; exits non-zero on any violation.
    Soak {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        soak: SoakArgs,
    },
    /// Baseline, the queue sweep plus chaos and forced-ack runs, produce, fetch and e2e: what the
    /// documents are made from.
    All {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        queue: QueueArgs,
        #[command(flatten)]
        produce: ProduceArgs,
        #[command(flatten)]
        fetch: FetchArgs,
        #[command(flatten)]
        e2e: E2eArgs,
    },
    /// Internal: run a broker for the fetch workload in this child process.
    #[command(hide = true)]
    ServeChild(broker_host::ServeChildArgs),
}

/// Options every measuring subcommand takes.
#[derive(Debug, Clone, Args)]
struct CommonArgs {
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write SVG plots (queue runs) into this directory.
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// Use the broker at host:port instead of starting fresh embedded brokers (queue, produce,
    /// e2e, soak; it needs the topics those workloads use). Fetch always starts its own.
    #[arg(long)]
    broker: Option<String>,
    /// Where fresh brokers run: `child` (a process of their own) or `embedded` (in this one).
    /// Default: `child` for `queue` (its peers are server processes too; `embedded` with the
    /// `hop-probe` feature, whose table is per process), `embedded` for the others (`soak`
    /// restarts its broker, so it is always embedded).
    #[arg(long, value_enum)]
    broker_process: Option<BrokerProcess>,
    /// How fresh brokers write their segments: `mapped` (the broker's default) or `file`
    /// (`docs/storage.md` § Write modes).
    #[arg(long, default_value = "mapped")]
    write_mode: booblik_broker::storage::WriteMode,
    /// Directory under which fresh brokers keep their (temporary) data.
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    data_dir: PathBuf,
    /// Baseline: 64-byte loopback round trips timed.
    #[arg(long, default_value_t = 20_000)]
    baseline_round_trips: u32,
    /// Baseline: MiB pushed through loopback TCP in each of the probe's 3 transfers (the figure
    /// is their median).
    #[arg(long, default_value_t = 2_048)]
    baseline_tcp_mib: u64,
    /// Baseline: 4 KiB write + fsync pairs timed.
    #[arg(long, default_value_t = 200)]
    baseline_fsyncs: u32,
    /// Baseline: MiB written into a new file to time the page cache's intake of new pages
    /// (0: skip).
    #[arg(long, default_value_t = baseline::DEFAULT_PAGE_CACHE_PROBE_BYTES >> 20)]
    baseline_page_cache_mib: u64,
    /// Baseline: MiB pushed, over 4 loopback connections whose receivers store it into new
    /// files, in each of the probe's 4 transfers (one after a pause, then the median of 3;
    /// 0: skip). Default: 1024 for `baseline`, `produce` and `all`; 0 for the others, whose
    /// figures are not compared with it (the probe takes about 14 s and 4 GiB of new pages).
    #[arg(long)]
    baseline_tcp_store_mib: Option<u64>,
    /// Baseline: milliseconds idle before that probe's first transfer, reported apart (on a VM
    /// whose balloon reports free memory, long enough for its host to take freed memory back).
    #[arg(long, default_value_t = baseline::TCP_STORE_PAUSE.as_millis() as u64)]
    baseline_tcp_store_pause_ms: u64,
}

#[allow(clippy::struct_excessive_bools)] // independent switches of the sweep
#[derive(Debug, Clone, Args)]
struct QueueArgs {
    /// Worker counts to sweep.
    #[arg(long, value_delimiter = ',', default_values_t = [3usize, 30])]
    workers: Vec<usize>,
    /// Pick strategies to sweep (booblik; a peer's server picks for its workers): first,
    /// random, rendezvous. `first` (every worker goes for the oldest task) is the known worst
    /// case of collisions and is left out of the default sweep to keep it short.
    #[arg(long, value_delimiter = ',', default_values = ["random", "rendezvous"])]
    pick: Vec<PickArg>,
    /// Arrival patterns to sweep.
    #[arg(long, value_delimiter = ',', default_values = ["backlog", "trickle"])]
    arrival: Vec<Arrival>,
    /// Workers per pool to sweep (booblik): the members of a pool share one pair of followers
    /// (`booblik_samples::queue::worker::WorkerPool`); 1 runs every worker with its own. A value
    /// at or above a run's worker count puts all its workers in one pool, so the default runs
    /// independent workers and one pool per process side by side at every worker count.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, MAX_POOL_WORKERS], value_parser = parse_pool)]
    pool: Vec<usize>,
    /// Where pooled workers send their appends, swept: `own` (a connection each) or `shared`
    /// (their pool's connection, so the broker reads the members' claims from one socket).
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["own"])]
    pool_connection: Vec<PoolConnection>,
    /// Peer queues to run the same scenarios against, beside booblik: redis, redis-fsync,
    /// postgres, postgres-async, jetstream-workqueue. The harness starts each server from its
    /// installed binary (redis-server; PostgreSQL's initdb and postgres; a 3-node nats-server
    /// cluster) unless a URL flag names one.
    #[arg(long, value_delimiter = ',')]
    peers: Vec<Peer>,
    /// A running Redis to use for the redis peers instead of starting one (its appendonly
    /// setting is changed to match the peer).
    #[arg(long)]
    redis_url: Option<String>,
    /// A running PostgreSQL to use for the postgres peers instead of starting one (a libpq
    /// connection string; the harness creates and drops the table booblik_load_jobs).
    #[arg(long)]
    postgres_url: Option<String>,
    /// A running NATS JetStream cluster (comma-separated `nats://` URLs) to use for the
    /// `jetstream-workqueue` peer and `--engine jetstream` instead of starting a 3-node cluster from the installed
    /// `nats-server`.
    #[arg(long)]
    nats_url: Option<String>,
    /// Which engine booblik's claims protocol runs on: booblik (a fresh broker per run) or
    /// jetstream (two fresh R3 streams per run, on the 3-node cluster the harness starts from
    /// the installed `nats-server` — the one the `jetstream-workqueue` peer uses — or on
    /// `--nats-url`). Reported as `booblik` or `claims-jetstream`.
    #[arg(long, value_enum, default_value_t = EngineKind::Booblik)]
    engine: EngineKind,
    /// Runs of every configuration; the report gives the median with min–max.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=MAX_REPETITIONS))]
    repetitions: u32,
    /// Each worker's first claims are a warm-up, left out of the claim-latency histogram.
    #[arg(long, default_value_t = 5)]
    warmup_claims_per_worker: u64,
    /// Tasks per run, overriding the two options below.
    #[arg(long)]
    tasks: Option<usize>,
    /// Backlog runs enqueue this many tasks per worker, so the backlog stays much larger than
    /// the number of workers for most of the run (collisions depend on that ratio).
    #[arg(long, default_value_t = 100)]
    backlog_tasks_per_worker: usize,
    /// Backlog runs enqueue at least this many tasks (a few hundred claims give lost-race
    /// percentages too coarse to compare with a 1 % target).
    #[arg(long, default_value_t = 1_000)]
    backlog_min_tasks: usize,
    /// Tasks of a trickle run (its length is tasks ÷ rate).
    #[arg(long, default_value_t = 300)]
    trickle_tasks: usize,
    /// Trickle arrival rate, tasks per second.
    #[arg(long, default_value_t = 150.0)]
    trickle_per_s: f64,
    /// Simulated work per task, ms, swept: `0,5` runs every scenario with no work and with 5 ms
    /// in one invocation, each judged against its own peers' runs. 0 is no work at all, not a
    /// sleep (`booblik_samples::queue::worker::work_for`).
    #[arg(long, value_delimiter = ',', default_values_t = [10u64])]
    work_ms: Vec<u64>,
    /// Lease, ms (extends every lease/3). Short, so chaos runs recover quickly.
    #[arg(long, default_value_t = 1_000)]
    lease_ms: u64,
    /// Ack policy of booblik's task submissions, claims, extends and dones. `forced` (the
    /// default, what docs/task-queue.md recommends) is the headline; the extra runs add
    /// `written` as a labelled variant.
    #[arg(long, value_enum, default_value_t = Ack::Forced)]
    claim_ack: Ack,
    /// Crash (kill) or stall (freeze for 1.5 × lease) workers mid-task in every run of the
    /// sweep.
    #[arg(long, value_enum)]
    chaos: Option<ChaosMode>,
    /// Share of the workers the chaos monkey hits (at least one).
    #[arg(long, default_value_t = 0.34)]
    chaos_share: f64,
    /// A crash wave starts when this share of the tasks is finished.
    #[arg(long, default_value_t = 0.3)]
    chaos_after: f64,
    /// Do not start replacements for killed workers (the survivors finish the work).
    #[arg(long)]
    chaos_no_replace: bool,
    /// Skip the extra runs (at each worker count, random pick, backlog: chaos crash, chaos
    /// stall, and booblik with `written` claims).
    #[arg(long)]
    no_extra_queue_runs: bool,
    /// Upper bound on one queue run, seconds.
    #[arg(long, default_value_t = 60)]
    max_run_s: u64,
    /// Every worker, booblik's and the peers', appends its done on its own and waits for it
    /// before its next claim, instead of sending the done together with that claim (booblik:
    /// one batch; Redis: one pipeline; PostgreSQL: one statement). For comparison: it costs a
    /// round trip and a durable write per task.
    #[arg(long)]
    separate_dones: bool,
}

/// A `--pool` value: 1..=MAX_POOL_WORKERS workers per pool.
fn parse_pool(value: &str) -> Result<usize, String> {
    let pool: usize = value
        .parse()
        .map_err(|_| format!("{value} is not a number of workers"))?;
    if (1..=MAX_POOL_WORKERS).contains(&pool) {
        Ok(pool)
    } else {
        Err(format!(
            "{pool} workers per pool is outside 1..={MAX_POOL_WORKERS} (MAX_POOL_WORKERS)"
        ))
    }
}

/// Most repetitions of one configuration.
const MAX_REPETITIONS: i64 = 100;

impl QueueArgs {
    fn chaos_config(&self, mode: ChaosMode) -> ChaosConfig {
        ChaosConfig {
            mode,
            share: self.chaos_share,
            after_finished_share: self.chaos_after,
            replace: !self.chaos_no_replace,
        }
    }

    /// Every run's settings but the swept ones (workers, pick, arrival, pool, work time).
    fn template(&self) -> QueueRunConfig {
        QueueRunConfig {
            system: match self.engine {
                EngineKind::Booblik => System::Booblik,
                EngineKind::Jetstream => System::ClaimsOnJetstream,
            },
            workers: 0,
            pool: 1,
            pool_connection: PoolConnection::Own,
            pick: PickArg::Random,
            arrival: Arrival::Backlog,
            tasks: 0,
            trickle_per_s: self.trickle_per_s,
            work_ms: 0,
            lease_ms: self.lease_ms,
            claim_ack: self.claim_ack,
            chaos: self.chaos.map(|mode| self.chaos_config(mode)),
            max_run_ms: self.max_run_s * 1_000,
            repetition: 0,
            warmup_claims_per_worker: self.warmup_claims_per_worker,
            done_with_next_claim: !self.separate_dones,
        }
    }

    /// Tasks for a run of `workers` workers with `arrival`.
    fn tasks_for(&self, workers: usize, arrival: Arrival) -> usize {
        self.tasks.unwrap_or(match arrival {
            Arrival::Backlog => {
                (self.backlog_tasks_per_worker * workers).max(self.backlog_min_tasks)
            }
            Arrival::Trickle => self.trickle_tasks,
        })
    }

    /// Sets each run's task count.
    fn sized(&self, configs: Vec<QueueRunConfig>) -> Vec<QueueRunConfig> {
        configs
            .into_iter()
            .map(|c| QueueRunConfig {
                tasks: self.tasks_for(c.workers, c.arrival),
                ..c
            })
            .collect()
    }

    /// Booblik's configurations: the sweep, then (unless switched off) the extra runs.
    fn booblik_configs(&self) -> Vec<QueueRunConfig> {
        // What tells two swept configurations apart (pools clamped to the worker count can meet).
        let key = |c: &QueueRunConfig| {
            (
                c.workers,
                c.pick,
                c.arrival,
                c.pool,
                c.pool_connection,
                c.work_ms,
            )
        };
        let mut configs: Vec<QueueRunConfig> = Vec::new();
        let swept = self.work_ms.iter().flat_map(|&work_ms| {
            let template = QueueRunConfig {
                work_ms,
                ..self.template()
            };
            queue::sweep(&self.workers, &self.pick, &self.arrival, template)
        });
        for config in swept {
            for &pool in &self.pool {
                let pool = pool.min(config.workers);
                // Independent workers have no pool connection to share.
                let connections = if pool > 1 {
                    self.pool_connection.clone()
                } else {
                    vec![PoolConnection::Own]
                };
                for pool_connection in connections {
                    let pooled = QueueRunConfig {
                        pool,
                        pool_connection,
                        ..config
                    };
                    if !configs.iter().any(|c| key(c) == key(&pooled)) {
                        configs.push(pooled);
                    }
                }
            }
        }
        if !self.no_extra_queue_runs {
            configs.extend(self.extra_runs());
        }
        self.sized(configs)
    }

    /// At each swept worker count and work time (random, backlog): chaos crash, chaos stall,
    /// and `written` claims — unless the sweep already has that chaos or ack.
    fn extra_runs(&self) -> Vec<QueueRunConfig> {
        let mut extra = Vec::new();
        for (&work_ms, &workers) in self
            .work_ms
            .iter()
            .flat_map(|work_ms| self.workers.iter().map(move |workers| (work_ms, workers)))
        {
            let base = QueueRunConfig {
                pick: PickArg::Random,
                arrival: Arrival::Backlog,
                work_ms,
                ..self.template()
            };
            // Every pool size of the sweep gets the chaos and `written` runs too: a pool must
            // survive a killed or frozen member as independent workers do.
            let mut pools: Vec<usize> = self.pool.iter().map(|&p| p.min(workers)).collect();
            pools.sort_unstable();
            pools.dedup();
            for pool in pools {
                for mode in [ChaosMode::Crash, ChaosMode::Stall] {
                    if self.chaos != Some(mode) {
                        extra.push(QueueRunConfig {
                            workers,
                            pool,
                            chaos: Some(self.chaos_config(mode)),
                            ..base
                        });
                    }
                }
                if self.claim_ack != Ack::Written {
                    extra.push(QueueRunConfig {
                        workers,
                        pool,
                        claim_ack: Ack::Written,
                        chaos: None,
                        ..base
                    });
                }
            }
        }
        extra
    }

    /// Every run of the invocation, in order: each repetition runs every scenario, and within
    /// a scenario booblik's variants and then each peer — so a scenario's systems run minutes,
    /// not the whole sweep, apart.
    fn all_runs(&self) -> Vec<QueueRunConfig> {
        let booblik = self.booblik_configs();
        let key = |c: &QueueRunConfig| (c.workers, c.arrival, c.chaos.map(|x| x.mode), c.work_ms);
        let mut scenarios = Vec::new();
        for config in &booblik {
            if !scenarios.contains(&key(config)) {
                scenarios.push(key(config));
            }
        }
        let mut runs = Vec::new();
        for repetition in 0..self.repetitions {
            for scenario in &scenarios {
                let mine: Vec<&QueueRunConfig> =
                    booblik.iter().filter(|c| key(c) == *scenario).collect();
                for config in &mine {
                    runs.push(QueueRunConfig {
                        repetition,
                        ..**config
                    });
                }
                let first = *mine[0];
                for &peer in &self.peers {
                    runs.push(QueueRunConfig {
                        system: System::Peer(peer),
                        repetition,
                        ..first
                    });
                }
            }
        }
        runs
    }

    async fn start_peers(&self, data_dir: &std::path::Path) -> anyhow::Result<PeerServers> {
        let urls = ServerUrls {
            redis: self.redis_url.as_deref(),
            postgres: self.postgres_url.as_deref(),
            nats: self.nats_url.as_deref(),
        };
        // The claims protocol on JetStream runs on the work-queue peer's cluster.
        let mut servers = self.peers.clone();
        if self.engine == EngineKind::Jetstream && !servers.contains(&Peer::JetstreamWorkqueue) {
            servers.push(Peer::JetstreamWorkqueue);
        }
        PeerServers::start(&servers, &urls, data_dir).await
    }
}

#[derive(Debug, Clone, Args)]
struct ProduceArgs {
    /// Payload bytes per record (one run per size).
    #[arg(
        long = "record-bytes",
        visible_alias = "sizes",
        value_delimiter = ',',
        default_values_t = [100usize, 1024]
    )]
    sizes: Vec<usize>,
    /// Ack policies.
    #[arg(long, value_delimiter = ',', default_values = ["none", "written", "forced"])]
    acks: Vec<Ack>,
    /// Producer counts (each its own connection and partition).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4])]
    producers: Vec<usize>,
    /// Client paths: the batching `producer`, and `raw` pre-built batches.
    #[arg(long, value_delimiter = ',', default_values = ["producer", "raw"])]
    produce_clients: Vec<produce::ClientPath>,
    /// How long each produce run sends, ms.
    #[arg(long, default_value_t = 1_500)]
    produce_duration_ms: u64,
    /// Upper bound on records per producer per run.
    #[arg(long, default_value_t = 20_000_000)]
    produce_max_records: u64,
    /// Producer linger window, ms.
    #[arg(long, default_value_t = 5)]
    linger_ms: u64,
    /// Records per PRODUCE on the `raw` path (default: as many as fill 1 MiB).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    records_per_batch: Option<u32>,
    /// PRODUCE requests a `raw` producer keeps in flight on its connection (one `raw` run per
    /// value; the `producer` path has its own limit, `max_in_flight_batches`).
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = [8u32],
        value_parser = clap::value_parser!(u32).range(1..=4096)
    )]
    in_flight: Vec<u32>,
    /// Runs of every configuration, one after another (for medians and spreads).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeats: u32,
}

impl ProduceArgs {
    fn configs(&self) -> Vec<produce::ProduceConfig> {
        let mut configs = Vec::new();
        for &client in &self.produce_clients {
            // The in-flight values are a `raw` setting: the `producer` path runs once.
            let in_flights: &[u32] = match client {
                produce::ClientPath::Raw => &self.in_flight,
                produce::ClientPath::Producer => &self.in_flight[..1],
            };
            for &record_bytes in &self.sizes {
                for &ack in &self.acks {
                    for &producers in &self.producers {
                        for &in_flight in in_flights {
                            let config = produce::ProduceConfig {
                                record_bytes,
                                ack,
                                producers,
                                client,
                                linger_ms: self.linger_ms,
                                duration_ms: self.produce_duration_ms,
                                max_records_per_producer: self.produce_max_records,
                                raw_records_per_batch: self.records_per_batch.map(|n| n as usize),
                                raw_in_flight: in_flight as usize,
                            };
                            configs.extend(std::iter::repeat_n(config, self.repeats as usize));
                        }
                    }
                }
            }
        }
        configs
    }
}

#[allow(clippy::struct_field_names)] // flags flattened into `all` must not collide
#[derive(Debug, Clone, Args)]
struct FetchArgs {
    /// MiB of 1 KiB records to preload and read.
    #[arg(long, default_value_t = 1_024)]
    fetch_mib: u64,
    /// Full reads per reader, mode and round.
    #[arg(long, default_value_t = 1)]
    fetch_passes: u32,
    /// Rounds of (zero-copy, heap), alternating so load drift hits both modes.
    #[arg(long, default_value_t = 3)]
    fetch_rounds: u32,
}

#[allow(clippy::struct_field_names)] // flags flattened into `all` must not collide
#[derive(Debug, Clone, Args)]
struct E2eArgs {
    /// Steady rates, records per second.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000u64, 10_000])]
    e2e_rates: Vec<u64>,
    /// Producer linger windows, ms.
    #[arg(long, value_delimiter = ',', default_values_t = [0u64, 5])]
    e2e_lingers: Vec<u64>,
    /// How long each e2e run sends, ms.
    #[arg(long, default_value_t = 3_000)]
    e2e_duration_ms: u64,
    /// Payload bytes per record.
    #[arg(long, default_value_t = 100)]
    e2e_record_bytes: usize,
    /// Client paths: the batching `producer` (each linger), and `raw` (one PRODUCE per record).
    #[arg(long, value_delimiter = ',', default_values = ["raw", "producer"])]
    e2e_clients: Vec<produce::ClientPath>,
}

impl E2eArgs {
    fn configs(&self) -> Vec<e2e::E2eConfig> {
        let mut configs = Vec::new();
        for &client in &self.e2e_clients {
            // Linger is a producer setting: the raw path runs once per rate.
            let lingers: &[u64] = match client {
                produce::ClientPath::Producer => &self.e2e_lingers,
                produce::ClientPath::Raw => &[0],
            };
            for &rate_per_s in &self.e2e_rates {
                for &linger_ms in lingers {
                    configs.push(e2e::E2eConfig {
                        rate_per_s,
                        linger_ms,
                        duration_ms: self.e2e_duration_ms,
                        record_bytes: self.e2e_record_bytes,
                        client,
                    });
                }
            }
        }
        configs
    }
}

#[derive(Debug, Clone, Args)]
struct SoakArgs {
    /// Seconds of producing.
    #[arg(long, default_value_t = 120)]
    duration_s: u64,
    /// Partitions (one producer each).
    #[arg(long, default_value_t = 2)]
    partitions: u32,
    /// Followers per partition.
    #[arg(long, default_value_t = 2)]
    followers_per_partition: u32,
    /// Replayers.
    #[arg(long, default_value_t = 1)]
    replayers: u32,
    /// Records per second per producer.
    #[arg(long, default_value_t = 2_000)]
    rate_per_producer: u64,
    /// Graceful broker restarts during the run (embedded broker only).
    #[arg(long, default_value_t = 2)]
    broker_restarts: u32,
    /// Shortest life of a follower's consumer, ms.
    #[arg(long, default_value_t = 500)]
    restart_min_ms: u64,
    /// Longest life of a follower's consumer, ms.
    #[arg(long, default_value_t = 3_000)]
    restart_max_ms: u64,
    /// Chance that a follower restart resumes behind its saved position.
    #[arg(long, default_value_t = 0.3)]
    behind_probability: f64,
}

impl SoakArgs {
    fn config(&self) -> soak::SoakConfig {
        soak::SoakConfig {
            duration_s: self.duration_s,
            partitions: self.partitions,
            followers_per_partition: self.followers_per_partition,
            replayers: self.replayers,
            rate_per_producer: self.rate_per_producer,
            broker_restarts: self.broker_restarts,
            restart_min_ms: self.restart_min_ms,
            restart_max_ms: self.restart_max_ms,
            behind_probability: self.behind_probability,
            min_bytes: 16,
            max_bytes: 512,
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let command = Cli::parse().command;
    if let Command::ServeChild(args) = command {
        return broker_host::serve_child(args).await;
    }
    // Stopped by a signal, the harness drops the workload — its peer servers are stopped by
    // their pid, child brokers killed, temporary data directories removed — instead of dying
    // with them still running and on disk.
    tokio::select! {
        result = run(command) => result,
        signal = stop_signal() => bail!("stopped by {signal}; its servers and temporary data were removed"),
    }
}

/// The first SIGINT or SIGTERM; never, if the handlers cannot be installed.
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    }
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::ServeChild(args) => broker_host::serve_child(args).await,
        Command::Baseline(common) => {
            let (harness, machine) = prepare(&common, StoreProbe::ByDefault).await?;
            finish(&common, machine, &harness, Vec::new(), &[])
        }
        Command::Queue { common, queue } => {
            let began = std::time::Instant::now();
            let (harness, machine) = prepare(&common, StoreProbe::OnlyIfAsked).await?;
            tracing::info!(wall_s = began.elapsed().as_secs_f64(), "baseline measured");
            let configs = queue.all_runs();
            let began = std::time::Instant::now();
            let mut servers = queue.start_peers(&common.data_dir).await?;
            tracing::info!(
                wall_s = began.elapsed().as_secs_f64(),
                "peer servers started"
            );
            let progress = Progress::new(configs.len() as u64);
            let outcomes = run_queue(&harness, &configs, &progress, &mut servers).await;
            servers.stop();
            let outcomes = outcomes?;
            progress.finish();
            let runs = outcomes
                .iter()
                .map(|o| Run::Queue(Box::new(o.run.clone())))
                .collect();
            let began = std::time::Instant::now();
            finish(&common, machine, &harness, runs, &outcomes)?;
            tracing::info!(
                wall_s = began.elapsed().as_secs_f64(),
                "report and plots written"
            );
            check_queue_safety(&outcomes)
        }
        Command::Produce { common, produce } => {
            let (harness, machine) = prepare(&common, StoreProbe::ByDefault).await?;
            let configs = produce.configs();
            let progress = Progress::new(configs.len() as u64);
            let runs = run_produce(&harness, &configs, &progress).await?;
            progress.finish();
            finish(&common, machine, &harness, runs, &[])
        }
        Command::Fetch { common, fetch } => {
            let (harness, machine) = prepare(&common, StoreProbe::OnlyIfAsked).await?;
            let progress = Progress::new(1);
            let runs = run_fetch(&harness, &fetch, &progress).await?;
            progress.finish();
            finish(&common, machine, &harness, runs, &[])
        }
        Command::E2e { common, e2e } => {
            let (harness, machine) = prepare(&common, StoreProbe::OnlyIfAsked).await?;
            let configs = e2e.configs();
            let progress = Progress::new(configs.len() as u64 + 1);
            let runs = run_e2e(&harness, &configs, &progress).await?;
            progress.finish();
            finish(&common, machine, &harness, runs, &[])
        }
        Command::Soak { common, soak } => {
            let (harness, machine) = prepare(&common, StoreProbe::OnlyIfAsked).await?;
            let progress = Progress::new(1);
            let run = soak::run(&harness, soak.config(), &progress).await?;
            progress.done();
            progress.finish();
            let violations = run.violations;
            finish(&common, machine, &harness, vec![Run::Soak(run)], &[])?;
            if violations > 0 {
                bail!("the soak found {violations} violations");
            }
            Ok(())
        }
        Command::All {
            common,
            queue,
            produce,
            fetch,
            e2e,
        } => {
            let (harness, machine) = prepare(&common, StoreProbe::ByDefault).await?;
            let queue_configs = queue.all_runs();
            let produce_configs = produce.configs();
            let e2e_configs = e2e.configs();
            let steps = queue_configs.len() + produce_configs.len() + 1 + e2e_configs.len() + 1;
            let progress = Progress::new(steps as u64);
            let mut servers = queue.start_peers(&common.data_dir).await?;
            let outcomes = run_queue(&harness, &queue_configs, &progress, &mut servers).await;
            servers.stop();
            let outcomes = outcomes?;
            let mut runs: Vec<Run> = outcomes
                .iter()
                .map(|o| Run::Queue(Box::new(o.run.clone())))
                .collect();
            runs.extend(run_produce(&harness, &produce_configs, &progress).await?);
            runs.extend(run_fetch(&harness, &fetch, &progress).await?);
            runs.extend(run_e2e(&harness, &e2e_configs, &progress).await?);
            progress.finish();
            finish(&common, machine, &harness, runs, &outcomes)?;
            check_queue_safety(&outcomes)
        }
    }
}

/// Whether a workload measures the TCP-into-the-page-cache probe unless told otherwise: only
/// those with produce runs, whose large-record figures are read against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreProbe {
    ByDefault,
    OnlyIfAsked,
}

/// Describes the machine and measures the baseline.
async fn prepare(
    common: &CommonArgs,
    store_probe: StoreProbe,
) -> anyhow::Result<(Harness, Machine)> {
    let tcp_store_mib = common.baseline_tcp_store_mib.unwrap_or(match store_probe {
        StoreProbe::ByDefault => baseline::DEFAULT_PAGE_CACHE_PROBE_BYTES >> 20,
        StoreProbe::OnlyIfAsked => 0,
    });
    let machine = Machine::probe();
    eprintln!("measuring the baseline on {}", machine.describe());
    let baseline = baseline::measure(baseline::BaselineConfig {
        round_trips: common.baseline_round_trips,
        tcp_bytes: common.baseline_tcp_mib << 20,
        fsyncs: common.baseline_fsyncs,
        fsync_dir: common.data_dir.clone(),
        page_cache_bytes: common.baseline_page_cache_mib << 20,
        tcp_store_bytes: tcp_store_mib << 20,
        tcp_store_pause: std::time::Duration::from_millis(common.baseline_tcp_store_pause_ms),
    })
    .await
    .context("measuring the baseline")?;
    Ok((
        Harness {
            baseline,
            data_parent: common.data_dir.clone(),
            external_broker: common.broker.clone(),
            broker_process: common.broker_process,
            write_mode: common.write_mode,
        },
        machine,
    ))
}

async fn run_queue(
    harness: &Harness,
    configs: &[QueueRunConfig],
    progress: &Progress,
    servers: &mut PeerServers,
) -> anyhow::Result<Vec<QueueOutcome>> {
    let mut outcomes = Vec::with_capacity(configs.len());
    for config in configs {
        let label = queue::label(config);
        progress.start(label.clone());
        let began = std::time::Instant::now();
        let outcome = match config.system {
            System::Booblik => queue::run::run(harness, *config).await,
            System::ClaimsOnJetstream => {
                let url = servers.endpoint(Peer::JetstreamWorkqueue)?.url.clone();
                queue::run::run_on_jetstream(harness, &url, *config).await
            }
            System::Peer(peer) => {
                let endpoint = servers.endpoint(peer)?;
                queue::peers::driver::run(endpoint, peer, *config, &harness.baseline).await
            }
        };
        outcomes.push(outcome.with_context(|| format!("{label} failed"))?);
        // Where a sweep's minutes go (`RUST_LOG=booblik_load=info`).
        tracing::info!(run = %label, wall_s = began.elapsed().as_secs_f64(), "queue run done");
        progress.done();
    }
    Ok(outcomes)
}

async fn run_produce(
    harness: &Harness,
    configs: &[produce::ProduceConfig],
    progress: &Progress,
) -> anyhow::Result<Vec<Run>> {
    let mut runs = Vec::with_capacity(configs.len());
    for config in configs {
        let label = format!(
            "produce {:?} {} B ack={} producers={}",
            config.client,
            config.record_bytes,
            config.ack.name(),
            config.producers
        );
        progress.start(label.clone());
        runs.push(Run::Produce(
            produce::run(harness, *config)
                .await
                .with_context(|| format!("{label} failed"))?,
        ));
        progress.done();
    }
    Ok(runs)
}

async fn run_fetch(
    harness: &Harness,
    args: &FetchArgs,
    progress: &Progress,
) -> anyhow::Result<Vec<Run>> {
    progress.start(format!(
        "fetch {} MiB × {} passes × {} rounds, zero-copy and heap",
        args.fetch_mib, args.fetch_passes, args.fetch_rounds
    ));
    let runs = fetch::run(
        harness,
        fetch::FetchConfig {
            data_mib: args.fetch_mib,
            passes: args.fetch_passes,
            rounds: args.fetch_rounds,
        },
    )
    .await
    .context("fetch failed")?;
    progress.done();
    Ok(runs.into_iter().map(Run::Fetch).collect())
}

async fn run_e2e(
    harness: &Harness,
    configs: &[e2e::E2eConfig],
    progress: &Progress,
) -> anyhow::Result<Vec<Run>> {
    let mut runs = Vec::with_capacity(configs.len() + 1);
    progress.start("request round trips");
    runs.push(Run::Requests(
        requests::run(harness)
            .await
            .context("request round trips failed")?,
    ));
    progress.done();
    for config in configs {
        let label = format!(
            "e2e {:?} {}/s linger {} ms",
            config.client, config.rate_per_s, config.linger_ms
        );
        progress.start(label.clone());
        runs.push(Run::E2e(
            e2e::run(harness, *config)
                .await
                .with_context(|| format!("{label} failed"))?,
        ));
        progress.done();
    }
    Ok(runs)
}

/// Prints the markdown report (with the targets when there is anything to judge), writes the
/// JSON and the plots.
fn finish(
    common: &CommonArgs,
    mut machine: Machine,
    harness: &Harness,
    runs: Vec<Run>,
    queue_outcomes: &[QueueOutcome],
) -> anyhow::Result<()> {
    machine.finish();
    let report = Report {
        machine,
        baseline: harness.baseline,
        runs,
    };
    let mut text = report.markdown();
    let verdicts: Vec<targets::Verdict> = targets::evaluate(&report)
        .into_iter()
        .filter(|v| v.met.is_some())
        .collect();
    if !verdicts.is_empty() {
        text.push_str("\n## Targets\n\n");
        text.push_str(&targets::markdown(&verdicts));
    }
    println!("{text}");
    if let Some(path) = &common.json {
        report.write_json(path)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(dir) = &common.out_dir
        && !queue_outcomes.is_empty()
    {
        for path in queue::plots::write_all(queue_outcomes, dir)? {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// Booblik's safety promises are not targets but guarantees: a broken one fails the command
/// (after the report is out). The peers' duplicates are what they are, and only reported.
fn check_queue_safety(outcomes: &[QueueOutcome]) -> anyhow::Result<()> {
    for outcome in outcomes {
        let r = &outcome.run;
        if [System::Booblik.name(), System::ClaimsOnJetstream.name()].contains(&r.system)
            && (r.violations > 0 || r.duplicate_effects > 0 || r.duplicate_dones > 0)
        {
            bail!(
                "{}, {} workers, pick {}, {}: {} verifier violations, {} duplicate effects, \
                 {} duplicate dones",
                r.system,
                r.workers,
                r.pick.map_or("—", PickArg::name),
                r.arrival.name(),
                r.violations,
                r.duplicate_effects,
                r.duplicate_dones
            );
        }
    }
    Ok(())
}
