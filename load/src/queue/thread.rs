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
use tokio::sync::{oneshot, watch};

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

/// The start line of a run's workers: each waits at its [`StartGate`] until the conductor
/// [`opens`](StartLine::open) the line, right after it starts the run's clock.
///
/// Why: workers start one after another (connections, followers), and a worker that began
/// claiming at once did work before the clock started. Measured on 2026-12-05 at 30 workers and
/// no work, a peer's first workers had won 810–839 of Redis-with-fsync's 3 000 tasks and
/// 1 218–1 433 of PostgreSQL's before the clock started, and booblik's 0–24: the peers' tasks/s
/// of a 0.1-second run was inflated by a third and more.
#[derive(Debug)]
pub struct StartLine(watch::Sender<bool>);

/// A worker's side of the [`StartLine`].
#[derive(Debug, Clone)]
pub struct StartGate(watch::Receiver<bool>);

/// A closed start line and its gate.
pub fn start_line() -> (StartLine, StartGate) {
    let (line, gate) = watch::channel(false);
    (StartLine(line), StartGate(gate))
}

impl StartLine {
    /// Lets every worker go, those started later (replacements) at once.
    pub fn open(&self) {
        self.0.send_replace(true);
    }
}

impl StartGate {
    /// Returns once the line is open (or gone: the run is over before it began).
    pub async fn passed(mut self) {
        let _ = self.0.wait_for(|open| *open).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_worker_passes_its_gate_only_once_the_line_is_open() {
        let (line, gate) = start_line();
        let waiting = tokio::spawn(gate.clone().passed());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the line is closed");
        line.open();
        waiting.await.expect("passed once open");
        // A worker started after the start (a replacement) passes at once.
        gate.passed().await;
    }
}
