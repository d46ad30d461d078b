//! The projection replays to catch up, then follows; its read model — events per user, the top
//! users, one user's view over HTTP — equals a direct fold of the events the publisher sent, both
//! after catching up on history and after following new events.

mod events_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use booblik_samples::engine::ReadLimits;
use booblik_samples::events::projection::http::routes;
use booblik_samples::events::projection::{ProjectionConfig, ProjectionState, run_projection};
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::stats_http;
use events_support::{client, get_json, publish, start_broker, sum_counts, wait_for_stats};
use serde_json::json;

/// The top `n` of `counts`: most events first, ties by user id.
fn top(counts: &BTreeMap<String, u64>, n: usize) -> serde_json::Value {
    let mut users: Vec<(&String, &u64)> = counts.iter().collect();
    users.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    users
        .into_iter()
        .take(n)
        .map(|(user, events)| json!({ "user_id": user, "events": events }))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projection_equals_a_direct_fold_of_the_published_events() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let client = client(&broker).await;
    let history = publish(&client, 800, 25, 0).await;

    let state = ProjectionState::new();
    let http = stats_http::serve_router("127.0.0.1:0", routes(Arc::clone(&state), 5))
        .await
        .unwrap();
    let stop = Shutdown::new();
    let projection = tokio::spawn(run_projection(
        events_support::engine(&client),
        ProjectionConfig {
            topic: "events".into(),
            limits: ReadLimits::default(),
            snapshot: None,
        },
        Arc::clone(&state),
        stop.clone(),
    ));

    // Caught up on history.
    let stats = wait_for_stats(http, "the projection to catch up", |s| {
        s["phase"] == "live" && s["events"] == 800
    })
    .await;
    assert_eq!(state.model().events_per_user(), history.per_user);
    assert_eq!(stats["top_users"], top(&history.per_user, 5));

    // Following: new events are folded in as they arrive.
    let live = publish(&client, 400, 25, 2_000).await;
    let all = sum_counts(&[&history.per_user, &live.per_user]);
    let stats = wait_for_stats(http, "the projection to fold the new events", |s| {
        s["events"] == 1_200
    })
    .await;
    assert_eq!(state.model().events_per_user(), all);
    assert_eq!(stats["top_users"], top(&all, 5));
    assert_eq!(stats["users"], all.len());
    assert_eq!(stats["violations"], 0);

    let (user, events) = all.iter().next().unwrap();
    let (status, view) = get_json(http, &format!("/users/{user}")).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(view["events"], *events, "{view}");
    let (status, _) = get_json(http, "/users/nobody").await.unwrap();
    assert_eq!(status, 404);

    stop.trigger();
    projection.await.unwrap().unwrap();
}
