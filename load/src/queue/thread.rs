//! One worker, one OS thread, one current-thread tokio runtime — for booblik's workers and the
//! peers' alike.
//!
//! Why a thread each: a stalled worker must freeze in a way it cannot see. A work function that
//! calls `std::thread::sleep` blocks its thread; on a runtime of its own nothing else of that
//! worker runs meanwhile — not its followers, not its lease timer, not its connection tasks — and
//! no other worker is held up, as with separate processes. Every worker of every system runs the
//! same way, so the concurrency model is the same for all of them.

use std::future::Future;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::oneshot;

/// A worker running on its own thread.
#[derive(Debug)]
pub struct WorkerThread<T> {
    result: oneshot::Receiver<anyhow::Result<T>>,
    kill: Option<oneshot::Sender<()>>,
    thread: std::thread::JoinHandle<()>,
}

/// What `join` found.
#[derive(Debug)]
pub enum Joined<T> {
    /// The body returned.
    Returned(anyhow::Result<T>),
    /// The thread did not end in time.
    TimedOut,
}

impl<T: Send + 'static> WorkerThread<T> {
    /// Starts `body` on a new thread named `name`, on a current-thread runtime. The body gets
    /// the kill signal: when it fires, the body should return at once, dropping everything (a
    /// crash, as far as the others can tell).
    pub fn spawn<F, Fut>(name: String, body: F) -> anyhow::Result<Self>
    where
        F: FnOnce(oneshot::Receiver<()>) -> Fut + Send + 'static,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let (kill_tx, kill_rx) = oneshot::channel();
        let (result_tx, result_rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let outcome = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("a worker's runtime")
                    .and_then(|runtime| runtime.block_on(body(kill_rx)));
                let _ = result_tx.send(outcome);
            })
            .context("starting a worker thread")?;
        Ok(Self {
            result: result_rx,
            kill: Some(kill_tx),
            thread,
        })
    }

    /// Tells the body to stop at once.
    pub fn kill(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
    }

    /// Whether the thread has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits up to `limit` for the body's outcome.
    pub async fn join(self, limit: Duration) -> Joined<T> {
        match tokio::time::timeout(limit, self.result).await {
            Ok(Ok(outcome)) => Joined::Returned(outcome),
            Ok(Err(_)) => Joined::Returned(Err(anyhow::anyhow!("the worker thread panicked"))),
            Err(_) => Joined::TimedOut,
        }
    }
}
