//! [`Shutdown`]: one stop signal shared by many tasks.
//!
//! A sample's loops all look the same: wait for the next batch *or* for the stop signal,
//! whichever comes first; finish the batch in hand (handle it **and** checkpoint it) before
//! looking at the signal again. The signal is a `watch` channel rather than task cancellation
//! because cancelling a task can stop it anywhere — between handling a batch and saving its
//! position, for instance — while a signal is only looked at where stopping is clean.
//!
//! Ctrl-C and SIGTERM (what `docker stop` sends) both trigger it through
//! [`Shutdown::trigger_on_signals`].

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

/// A cloneable stop signal. Every clone sees the same trigger.
#[derive(Clone)]
pub struct Shutdown {
    sender: Arc<watch::Sender<bool>>,
    receiver: watch::Receiver<bool>,
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("triggered", &self.is_triggered())
            .finish()
    }
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A signal that has not been triggered.
    pub fn new() -> Self {
        let (sender, receiver) = watch::channel(false);
        Self {
            sender: Arc::new(sender),
            receiver,
        }
    }

    /// Asks every holder to stop. Idempotent.
    pub fn trigger(&self) {
        self.sender.send_replace(true);
    }

    /// True once [`Shutdown::trigger`] was called.
    pub fn is_triggered(&self) -> bool {
        *self.receiver.borrow()
    }

    /// Resolves once the signal is triggered (at once if it already was).
    pub async fn triggered(&self) {
        let mut receiver = self.receiver.clone();
        // Every clone holds the sender, so the channel cannot close while we wait.
        let _ = receiver.wait_for(|stop| *stop).await;
    }

    /// Triggers this signal on Ctrl-C (SIGINT) or SIGTERM. Returns `self` for chaining.
    #[must_use]
    pub fn trigger_on_signals(self) -> Self {
        let shutdown = self.clone();
        tokio::spawn(async move {
            let signal = wait_for_signal().await;
            tracing::info!(signal, "stopping");
            shutdown.trigger();
        });
        self
    }
}

#[cfg(unix)]
async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut terminate) = signal(SignalKind::terminate()) else {
        tracing::warn!("cannot listen for SIGTERM; only Ctrl-C stops this process cleanly");
        let _ = tokio::signal::ctrl_c().await;
        return "SIGINT";
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> &'static str {
    let _ = tokio::signal::ctrl_c().await;
    "Ctrl-C"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_clone_sees_the_trigger() {
        let shutdown = Shutdown::new();
        let clone = shutdown.clone();
        assert!(!clone.is_triggered());
        let waiter = tokio::spawn(async move { clone.triggered().await });
        shutdown.trigger();
        waiter.await.unwrap();
        assert!(shutdown.is_triggered());
    }
}
