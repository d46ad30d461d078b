//! `GET /stats`: a long-running sample's counters as JSON, plus the same line in the log.
//!
//! Kept apart so the sample files stay about the log. A sample hands in a closure that
//! snapshots its stats; this module serves it over HTTP (axum) and logs it periodically. A sample
//! with more to say (the projection answers `GET /users/{id}`) merges its own routes with
//! [`serve_router`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Json;
use axum::Router;
use axum::routing::get;
use serde_json::Value;

/// A closure returning the current stats as JSON.
pub type Snapshot = Arc<dyn Fn() -> Value + Send + Sync>;

/// How often long-running samples log their stats.
pub const LOG_EVERY_MS: u64 = 10_000;

/// A router answering `GET /stats` with `snapshot()`.
pub fn router(snapshot: Snapshot) -> Router {
    Router::new().route(
        "/stats",
        get(move || {
            let snapshot = Arc::clone(&snapshot);
            async move { Json(snapshot()) }
        }),
    )
}

/// Serves `GET /stats` on `bind` until the process ends. Returns the bound address (useful with
/// port 0).
pub async fn serve(bind: SocketAddr, snapshot: Snapshot) -> anyhow::Result<SocketAddr> {
    serve_router(&bind.to_string(), router(snapshot)).await
}

/// Serves `app` on `bind` (`host:port`; names are resolved) until the process ends. Returns the
/// bound address.
pub async fn serve_router(bind: &str, app: Router) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot bind the stats endpoint on {bind}"))?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::warn!(%error, "stats endpoint stopped");
        }
    });
    tracing::info!(%addr, "stats on http://{addr}/stats");
    Ok(addr)
}

/// Logs the stats every `every` until the process ends.
pub fn log_periodically(name: &'static str, every: Duration, snapshot: Snapshot) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            tracing::info!(sample = name, stats = %snapshot(), "stats");
        }
    });
}

/// What every long-running sample does with its stats: serve them when `bind` is set, and log
/// them every [`LOG_EVERY_MS`].
pub async fn publish(
    name: &'static str,
    bind: Option<&str>,
    app: Router,
    snapshot: Snapshot,
) -> anyhow::Result<Option<SocketAddr>> {
    log_periodically(name, Duration::from_millis(LOG_EVERY_MS), snapshot);
    match bind {
        Some(bind) => Ok(Some(serve_router(bind, app).await?)),
        None => Ok(None),
    }
}
