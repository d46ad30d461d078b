//! One task per partition, one stop signal for all of them.
//!
//! A partition is the unit of order and of position, so a consumer of several partitions is
//! several independent loops. They share a fate, though: when one fails for good the others stop
//! too (a consumer silently missing a partition is worse than one that is visibly down), and when
//! the caller's [`Shutdown`] is triggered they all finish their batch in hand and stop.

use std::future::Future;

use tokio::task::JoinSet;

use crate::engine::{EngineError, LogEngine};

use crate::support::shutdown::Shutdown;

/// `explicit` when given, otherwise every partition of `topic` (`0..count`, as the engine
/// reports the count).
pub async fn partitions_of(
    engine: &dyn LogEngine,
    topic: &str,
    explicit: Option<&[i32]>,
) -> Result<Vec<i32>, EngineError> {
    if let Some(partitions) = explicit {
        return Ok(partitions.to_vec());
    }
    Ok((0..engine.partition_count(topic).await?).collect())
}

/// Runs `task(partition, stop)` for each partition concurrently until all have returned. The
/// first error triggers `stop` for the others and is returned; `shutdown` triggers it too. A
/// panicking task is a bug and panics the caller.
pub async fn run_per_partition<E, F, Fut>(
    partitions: Vec<i32>,
    shutdown: &Shutdown,
    task: F,
) -> Result<(), E>
where
    F: Fn(i32, Shutdown) -> Fut,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Send + 'static,
{
    let stop = Shutdown::new();
    let relay = {
        let (outer, stop) = (shutdown.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = outer.triggered() => stop.trigger(),
                () = stop.triggered() => {}
            }
        })
    };
    let mut tasks = JoinSet::new();
    for partition in partitions {
        tasks.spawn(task(partition, stop.clone()));
    }
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                stop.trigger();
                first_error.get_or_insert(error);
            }
            Err(join_error) => std::panic::resume_unwind(join_error.into_panic()),
        }
    }
    stop.trigger();
    let _ = relay.await;
    first_error.map_or(Ok(()), Err)
}
