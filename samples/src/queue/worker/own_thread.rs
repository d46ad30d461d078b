//! A worker on an OS thread of its own, with a current-thread runtime: its followers, its
//! appender, its work and its timers all run on that one thread, and nothing else does. Blocking
//! the thread (as [`Freeze`](super::Freeze) does) then pauses the whole worker and only it,
//! the way a stopped process is paused.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use booblik_client::{Client, ConnectionConfig};
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::{WorkFn, Worker, WorkerConfig, WorkerStats};
use crate::engine::{IntoEngine, LogEngine};

/// A worker running on its own thread: watch it through [`worker`](Self::worker), wait for its
/// end with [`join`](Self::join).
#[derive(Debug)]
pub struct OwnThreadWorker {
    worker: Arc<Worker>,
    thread: std::thread::JoinHandle<anyhow::Result<WorkerStats>>,
}

/// Opens an engine on the worker's own thread (its connections must belong to that thread's
/// runtime, or blocking the thread would not pause them).
pub type ConnectFn =
    Box<dyn FnOnce() -> BoxFuture<'static, anyhow::Result<Arc<dyn LogEngine>>> + Send>;

/// Starts a thread that connects to the booblik broker at `addr`, starts a worker with `work`
/// and runs it until `shutdown` resolves. Returns once the worker has started (or failed to).
pub async fn spawn_on_own_thread(
    addr: String,
    connection: ConnectionConfig,
    config: WorkerConfig,
    work: WorkFn,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<OwnThreadWorker> {
    let connect: ConnectFn = Box::new(move || {
        Box::pin(async move {
            let client = Client::connect(addr, connection).await?;
            Ok(client.into_engine())
        })
    });
    spawn_on_own_thread_with(connect, config, work, shutdown).await
}

/// [`spawn_on_own_thread`] on any engine: `connect` opens it on the worker's thread.
pub async fn spawn_on_own_thread_with(
    connect: ConnectFn,
    config: WorkerConfig,
    work: WorkFn,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<OwnThreadWorker> {
    let (started_tx, started_rx) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name(format!("worker-{}", &config.worker_id.to_string()[..8]))
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot build the worker's runtime")?;
            runtime.block_on(async move {
                let started = async {
                    let engine = connect().await?;
                    Worker::start_with_work(engine, config, work).await
                };
                let worker = match started.await {
                    Ok(worker) => Arc::new(worker),
                    Err(error) => {
                        let reason = format!("{error:#}");
                        let _ = started_tx.send(Err(error));
                        anyhow::bail!("the worker did not start: {reason}");
                    }
                };
                let _ = started_tx.send(Ok(Arc::clone(&worker)));
                worker.run(shutdown).await
            })
        })
        .context("cannot spawn the worker's thread")?;
    let worker = started_rx
        .await
        .context("the worker's thread ended before the worker started")??;
    Ok(OwnThreadWorker { worker, thread })
}

impl OwnThreadWorker {
    /// The worker, to read its stats, current task and view from any thread.
    pub fn worker(&self) -> &Arc<Worker> {
        &self.worker
    }

    /// Waits (off the async threads) for the worker's run to end: its final stats or its error.
    pub async fn join(self) -> anyhow::Result<WorkerStats> {
        let thread = self.thread;
        tokio::task::spawn_blocking(move || thread.join())
            .await
            .context("the join task failed")?
            .map_err(|_| anyhow::anyhow!("the worker's thread panicked"))?
    }
}
