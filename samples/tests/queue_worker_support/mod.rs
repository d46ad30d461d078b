//! Shared by the worker and integration tests of the task queue: an embedded broker, a proxy that
//! watches the requests a worker sends, and small helpers.
// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use booblik_broker::{Broker, BrokerConfig, parse_topics};
use booblik_client::{AckPolicy, Client, ConnectionConfig};
use booblik_protocol::{Decoded, RecordSet, RequestBody, TopicName, decode_request_frame};
use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::worker::{Worker, WorkerConfig, WorkerEvent, WorkerStats, submit_task};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Segments small enough to keep the temporary directory small.
pub const TEST_SEGMENT_BYTES: u64 = 1024 * 1024;
/// Longest a test waits for a condition before it fails.
pub const TEST_DEADLINE: Duration = Duration::from_secs(20);

/// A broker on a free loopback port with `tasks:1,claims:1`, data in a temporary directory.
pub struct EmbeddedBroker {
    broker: Broker,
    _dir: TempDir,
}

impl EmbeddedBroker {
    pub async fn start() -> EmbeddedBroker {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = BrokerConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            topics: parse_topics("tasks:1,claims:1").expect("valid topics"),
            ..BrokerConfig::default()
        };
        config.storage.data_dir = dir.path().to_path_buf();
        config.storage.segment_bytes = TEST_SEGMENT_BYTES;
        let broker = Broker::start(config).await.expect("the broker starts");
        EmbeddedBroker { broker, _dir: dir }
    }

    pub fn addr(&self) -> String {
        self.broker.local_addr().to_string()
    }

    /// A client of its own (every worker gets one).
    pub async fn client(&self) -> Client {
        Client::connect(self.addr(), ConnectionConfig::default())
            .await
            .expect("the client connects")
    }
}

/// A worker configuration for tests: short lease and work.
pub fn quick_config(lease_ms: u64, work_ms: u64) -> WorkerConfig {
    WorkerConfig {
        lease_ms,
        work_ms,
        ..WorkerConfig::default()
    }
}

/// A worker running on a task of its own, stoppable by its shutdown signal or by abort (a crash).
pub struct RunningWorker {
    pub worker: Arc<Worker>,
    pub handle: JoinHandle<anyhow::Result<WorkerStats>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RunningWorker {
    pub fn spawn(worker: Worker) -> RunningWorker {
        let worker = Arc::new(worker);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = Arc::clone(&worker);
        let handle = tokio::spawn(async move {
            running
                .run(async move {
                    let _ = stopped.await;
                })
                .await
        });
        RunningWorker {
            worker,
            handle,
            stop: Some(stop),
        }
    }

    /// Asks the worker to stop and returns its final stats.
    pub async fn stop(mut self) -> WorkerStats {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.handle
            .await
            .expect("the worker task did not panic")
            .expect("the worker ran without error")
    }
}

/// Submits tasks `0..count` to `tasks`, each with its number (big-endian) as the payload.
pub async fn submit_numbered_tasks(client: &Client, count: u64) {
    for n in 0..count {
        submit_task(client, "tasks", n.to_be_bytes().to_vec())
            .await
            .expect("the task is submitted");
    }
}

/// Polls `condition` every few milliseconds until it holds; panics after [`TEST_DEADLINE`].
pub async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let poll = async {
        while !condition().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(TEST_DEADLINE, poll)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting until {what}"));
}

/// Appends a claims record written by the test itself (a forged or foreign worker), FORCED.
pub async fn append_claims_record(client: &Client, record: &ClaimsRecord) -> i64 {
    let records = RecordSet::from_payloads([record.encode()]).unwrap();
    client
        .connection()
        .await
        .unwrap()
        .produce(
            &TopicName::new("claims").unwrap(),
            0,
            AckPolicy::Forced,
            records,
        )
        .await
        .expect("the append is acknowledged")
        .expect("an offset")
        .base_offset
}

/// What a [`WatchingProxy`] saw a client send.
#[derive(Debug, Default, Clone)]
pub struct SeenRequests {
    /// FETCH requests, each with its long-poll wait (None: FETCH v1).
    pub fetches: Vec<Option<i32>>,
    /// PRODUCE requests: topic and ack policy.
    pub produces: Vec<(String, AckPolicy)>,
    /// PRODUCE requests: topic and how many records the batch carried (a swallowed or cut
    /// batch included).
    pub produce_batches: Vec<(String, usize)>,
}

impl SeenRequests {
    /// The record count of each PRODUCE to `claims`, in the order they were sent.
    pub fn claims_batches(&self) -> Vec<usize> {
        self.produce_batches
            .iter()
            .filter(|(topic, _)| topic == "claims")
            .map(|(_, records)| *records)
            .collect()
    }
}

/// What a [`WatchingProxy`] does to PRODUCE requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProduceFault {
    /// Passes them on.
    None,
    /// A connection that sends one hangs from then on: the request never reaches the broker
    /// and no answer comes back.
    Stall,
    /// The next one to `claims` is dropped (never answered); everything else passes, and the
    /// fault clears.
    SwallowNextClaims,
    /// The next one to `claims` closes its connection before reaching the broker, so its
    /// sender sees the connection fail; the fault clears.
    CutNextClaims,
}

/// A TCP proxy in front of the broker that decodes every request passing through it, to check
/// what a client sends without changing the client, and to fail PRODUCEs on demand. It passes
/// requests on frame by frame.
pub struct WatchingProxy {
    addr: String,
    seen: Arc<Mutex<SeenRequests>>,
    fault: Arc<Mutex<ProduceFault>>,
    /// Whether connections that have fetched from `claims` hold back every answer.
    hold_claims_reads: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

impl Drop for WatchingProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl WatchingProxy {
    pub async fn start(upstream: String) -> WatchingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(SeenRequests::default()));
        let fault = Arc::new(Mutex::new(ProduceFault::None));
        let hold_claims_reads = Arc::new(AtomicBool::new(false));
        let accept = {
            let seen = Arc::clone(&seen);
            let fault = Arc::clone(&fault);
            let hold_claims_reads = Arc::clone(&hold_claims_reads);
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let upstream = upstream.clone();
                    let seen = Arc::clone(&seen);
                    let fault = Arc::clone(&fault);
                    let hold_claims_reads = Arc::clone(&hold_claims_reads);
                    tokio::spawn(async move {
                        if let Ok(broker) = TcpStream::connect(&upstream).await {
                            relay(client, broker, seen, fault, hold_claims_reads).await;
                        }
                    });
                }
            })
        };
        WatchingProxy {
            addr,
            seen,
            fault,
            hold_claims_reads,
            accept,
        }
    }

    /// From now on, a connection that has sent a FETCH to `claims` gets no more answers: a
    /// worker's claims follower stops (its long poll never returns), so the worker learns no
    /// verdict, while its appends (on another connection) are still acknowledged.
    pub fn hold_claims_reads(&self) {
        self.hold_claims_reads.store(true, Ordering::SeqCst);
    }

    /// From now on, a connection that sends a PRODUCE hangs: the request never reaches the
    /// broker and no answer comes back (appends stall; reads on other connections go on).
    pub fn stall_produces(&self) {
        *self.fault.lock().unwrap() = ProduceFault::Stall;
    }

    /// The next PRODUCE to `claims` is dropped: it never reaches the broker and is never
    /// answered, while the connection stays open for the requests after it — until the client
    /// sees the next answer's correlationId out of order and closes the connection (SPEC §2).
    pub fn swallow_next_claims_produce(&self) {
        *self.fault.lock().unwrap() = ProduceFault::SwallowNextClaims;
    }

    /// The next PRODUCE to `claims` closes its connection instead of reaching the broker: its
    /// append fails, and the client must reconnect (through this proxy again).
    pub fn cut_next_claims_produce(&self) {
        *self.fault.lock().unwrap() = ProduceFault::CutNextClaims;
    }

    pub fn addr(&self) -> String {
        self.addr.clone()
    }

    pub fn seen(&self) -> SeenRequests {
        self.seen.lock().unwrap().clone()
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr(), ConnectionConfig::default())
            .await
            .expect("the client connects through the proxy")
    }
}

/// What the proxy does with one request frame.
enum Action {
    Forward,
    Drop,
    Cut,
    Stall,
}

/// Records what `request` is and decides, under the fault in force, what to do with it.
fn inspect(
    request: Option<booblik_protocol::Request>,
    seen: &Mutex<SeenRequests>,
    fault: &Mutex<ProduceFault>,
) -> Action {
    let Some(request) = request else {
        return Action::Forward;
    };
    let mut seen = seen.lock().unwrap();
    match request.body {
        RequestBody::Fetch(fetch) => {
            seen.fetches
                .push(fetch.long_poll.map(|long_poll| long_poll.max_wait_ms));
            Action::Forward
        }
        RequestBody::Produce(produce) => {
            let topic = produce.topic.as_str().to_owned();
            seen.produce_batches
                .push((topic.clone(), produce.records.count()));
            seen.produces.push((topic.clone(), produce.ack));
            let mut fault = fault.lock().unwrap();
            match *fault {
                ProduceFault::Stall => Action::Stall,
                ProduceFault::SwallowNextClaims if topic == "claims" => {
                    *fault = ProduceFault::None;
                    Action::Drop
                }
                ProduceFault::CutNextClaims if topic == "claims" => {
                    *fault = ProduceFault::None;
                    Action::Cut
                }
                // Another topic's PRODUCE passes; the fault waits for one to `claims`.
                ProduceFault::None
                | ProduceFault::SwallowNextClaims
                | ProduceFault::CutNextClaims => Action::Forward,
            }
        }
        RequestBody::Metadata(_) => Action::Forward,
    }
}

async fn relay(
    client: TcpStream,
    broker: TcpStream,
    seen: Arc<Mutex<SeenRequests>>,
    fault: Arc<Mutex<ProduceFault>>,
    hold_claims_reads: Arc<AtomicBool>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut broker_read, mut broker_write) = broker.into_split();
    // Set once this connection has sent a FETCH to `claims`.
    let reads_claims = Arc::new(AtomicBool::new(false));
    // Dropping this task closes the client's side for answers (with the rest, on a cut).
    let answers = {
        let reads_claims = Arc::clone(&reads_claims);
        tokio::spawn(async move {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                let read = match broker_read.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => read,
                };
                if reads_claims.load(Ordering::SeqCst) && hold_claims_reads.load(Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
                if client_write.write_all(&chunk[..read]).await.is_err() {
                    break;
                }
            }
        })
    };
    let mut pending = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    'connection: loop {
        let read = match client_read.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        pending.extend_from_slice(&chunk[..read]);
        loop {
            let (request, used) = match decode_request_frame(&pending) {
                Ok(Decoded::Complete { value, used }) => (value.ok(), used),
                Ok(Decoded::Incomplete { .. }) => break,
                // Framing the proxy cannot follow: pass the bytes on for the broker to judge.
                Err(_) => (None, pending.len()),
            };
            if let Some(RequestBody::Fetch(fetch)) = request.as_ref().map(|request| &request.body)
                && fetch.topic.as_str() == "claims"
            {
                reads_claims.store(true, Ordering::SeqCst);
            }
            match inspect(request, &seen, &fault) {
                Action::Forward => {
                    if broker_write.write_all(&pending[..used]).await.is_err() {
                        break 'connection;
                    }
                }
                Action::Drop => {}
                Action::Cut => break 'connection,
                Action::Stall => std::future::pending::<()>().await,
            }
            pending.drain(..used);
        }
    }
    answers.abort();
}

/// A worker that has claimed the one task submitted for it and is working on it.
pub struct WorkingWorker {
    pub running: RunningWorker,
    pub worker_id: uuid::Uuid,
    pub events: tokio::sync::mpsc::Receiver<WorkerEvent>,
    pub task_id: uuid::Uuid,
    /// The lease token it works under.
    pub token: i64,
}

/// Submits one task (`payload`) through `submitter`, starts a worker on `worker_client` with
/// `config`, and waits until the worker works on that task.
pub async fn start_working_on_one_task(
    submitter: &Client,
    worker_client: Client,
    config: WorkerConfig,
    payload: &[u8],
) -> WorkingWorker {
    let (task_id, _) = submit_task(submitter, "tasks", payload.to_vec())
        .await
        .unwrap();
    let mut worker = Worker::start(worker_client, config).await.unwrap();
    let worker_id = worker.worker_id();
    let events = worker.events().unwrap();
    let running = RunningWorker::spawn(worker);
    wait_until("the worker is working", || async {
        running.worker.current_task().is_some()
    })
    .await;
    let (working_on, token) = running.worker.current_task().unwrap();
    assert_eq!(working_on, task_id);
    WorkingWorker {
        running,
        worker_id,
        events,
        task_id,
        token,
    }
}

/// A worker behind a [`WatchingProxy`], working (300 ms) on the first of two submitted tasks,
/// so that its done will ride with the claim of the second: the start of the tests that fail
/// that batch. The broker lives as long as the returned value.
pub struct FirstOfTwoTasks {
    pub broker: EmbeddedBroker,
    pub proxy: WatchingProxy,
    /// A client of the broker itself (not through the proxy), to read the logs back.
    pub submitter: Client,
    pub working: WorkingWorker,
}

pub async fn working_on_the_first_of_two_tasks() -> FirstOfTwoTasks {
    let broker = EmbeddedBroker::start().await;
    let proxy = WatchingProxy::start(broker.addr()).await;
    let submitter = broker.client().await;
    // Work long enough for a test to arm the proxy while the worker is on the first task.
    let working = start_working_on_one_task(
        &submitter,
        proxy.client().await,
        quick_config(5_000, 300),
        b"first",
    )
    .await;
    submit_task(&submitter, "tasks", b"second".to_vec())
        .await
        .expect("the second task is submitted");
    FirstOfTwoTasks {
        broker,
        proxy,
        submitter,
        working,
    }
}

/// Drains `events` and checks that the worker reported losing `token` on `task_id` and appended
/// no done after it.
pub fn assert_lease_lost_without_done(
    events: &mut tokio::sync::mpsc::Receiver<WorkerEvent>,
    task_id: uuid::Uuid,
    token: i64,
) {
    let mut lost = false;
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(event, WorkerEvent::DoneAppended { .. }),
            "no done after losing the lease: {event:?}"
        );
        lost |= event == WorkerEvent::LeaseLost { task_id, token };
    }
    assert!(lost, "the loss was reported as an event");
}

/// Checks that no done in the claims log `claims` comes from `worker_id`.
pub fn assert_no_done_by(claims: &[(i64, ClaimsRecord)], worker_id: uuid::Uuid) {
    assert!(
        claims.iter().all(|(_, record)| !matches!(
            record,
            ClaimsRecord::Done(done) if done.worker_id == worker_id
        )),
        "worker {worker_id} wrote a done"
    );
}

/// Runs one worker with `config` through a [`WatchingProxy`] until it completes `tasks` numbered
/// tasks, then stops it; returns what the proxy saw and a client of the broker (to read the
/// logs back). The broker lives as long as the returned value.
pub async fn run_one_worker_through_a_proxy(
    config: WorkerConfig,
    tasks: u64,
) -> (SeenRequests, Client, EmbeddedBroker) {
    let broker = EmbeddedBroker::start().await;
    let proxy = WatchingProxy::start(broker.addr()).await;
    let submitter = broker.client().await;
    submit_numbered_tasks(&submitter, tasks).await;
    let worker = Worker::start(proxy.client().await, config).await.unwrap();
    let running = RunningWorker::spawn(worker);
    wait_until("every task is completed", || async {
        running.worker.stats().completed == tasks
    })
    .await;
    running.stop().await;
    (proxy.seen(), submitter, broker)
}
