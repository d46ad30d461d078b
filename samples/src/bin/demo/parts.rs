//! Orchestration: the demo's running parts, started as tasks, stopped in order — writers first,
//! readers once they have caught up with what the writers wrote.

use std::collections::BTreeMap;
use std::future::Future;

use booblik_samples::engine::Bounds;
use booblik_samples::support::shutdown::Shutdown;
use tokio::task::JoinHandle;

/// A one-line status for the table.
pub type Status = Box<dyn Fn() -> String + Send + Sync>;
/// Whether a reader has read up to the given ends (high watermarks) of the events topic's
/// partitions.
pub type CaughtUp = Box<dyn Fn(&BTreeMap<i32, Bounds>) -> bool + Send + Sync>;

/// A running part of the demo.
pub struct Component {
    pub name: String,
    stop: Shutdown,
    /// `None` once stopped (the status stays, for the final table).
    task: Option<JoinHandle<anyhow::Result<()>>>,
    status: Status,
    pub caught_up: CaughtUp,
    /// How long, after the writers stop, this part may take to catch up (writers: 0).
    pub catch_up_limit_ms: u64,
}

/// The running parts: writers stop first, readers once they have caught up.
#[derive(Default)]
pub struct Demo {
    pub writers: Vec<Component>,
    pub readers: Vec<Component>,
}

impl Demo {
    /// Starts a part that writes to the log.
    pub fn writer<F, Fut>(&mut self, name: &str, status: Status, run: F)
    where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let component = Self::spawn(name, status, Box::new(|_| true), 0, run);
        self.writers.push(component);
    }

    /// Starts a part that reads the log, and has `catch_up_limit_ms` after the writers stop to
    /// catch up with it.
    pub fn reader<F, Fut>(
        &mut self,
        name: &str,
        status: Status,
        caught_up: CaughtUp,
        catch_up_limit_ms: u64,
        run: F,
    ) where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let component = Self::spawn(name, status, caught_up, catch_up_limit_ms, run);
        self.readers.push(component);
    }

    fn spawn<F, Fut>(
        name: &str,
        status: Status,
        caught_up: CaughtUp,
        catch_up_limit_ms: u64,
        run: F,
    ) -> Component
    where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let stop = Shutdown::new();
        Component {
            name: name.to_owned(),
            task: Some(tokio::spawn(run(stop.clone()))),
            stop,
            status,
            caught_up,
            catch_up_limit_ms,
        }
    }

    fn all(&self) -> impl Iterator<Item = &Component> {
        self.writers.iter().chain(&self.readers)
    }

    /// A part that ended although nobody asked it to stop (it failed).
    pub fn ended_on_its_own(&self) -> Option<&str> {
        self.all()
            .find(|c| {
                c.task.as_ref().is_some_and(JoinHandle::is_finished) && !c.stop.is_triggered()
            })
            .map(|c| c.name.as_str())
    }

    /// One line per part: its name and its status.
    pub fn table(&self) -> Vec<String> {
        self.all()
            .map(|c| format!("{:<14}{}", c.name, (c.status)()))
            .collect()
    }

    /// Stops every part of `parts` and collects how each ended.
    pub async fn stop(parts: &mut [Component]) -> Vec<(String, anyhow::Result<()>)> {
        for part in parts.iter() {
            part.stop.trigger();
        }
        let mut ended = Vec::new();
        for part in parts.iter_mut() {
            if let Some(task) = part.task.take() {
                let outcome = task
                    .await
                    .unwrap_or_else(|panic| Err(anyhow::anyhow!("panicked: {panic}")));
                ended.push((part.name.clone(), outcome));
            }
        }
        ended
    }
}
