//! The projection's queries over HTTP: `GET /stats` (counters and top users) and
//! `GET /users/{id}` (one user's view, 404 when the model has never seen the user).
//!
//! Handlers only read the model under its lock; they never touch the log. A query answers from
//! the state as folded so far, which may be a few records behind the log — a read model is
//! eventually consistent by construction, and `/stats` shows how far it has got (`next_offset`).

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::events::projection::ProjectionState;
use crate::support::stats_http;

/// `GET /stats` and `GET /users/{id}` over `state`; `top_n` users in the stats.
pub fn routes(state: Arc<ProjectionState>, top_n: usize) -> Router {
    let stats_state = Arc::clone(&state);
    stats_http::router(Arc::new(move || stats_json(&stats_state, top_n))).route(
        "/users/{id}",
        get(move |Path(id): Path<String>| {
            let state = Arc::clone(&state);
            async move { user(&state, &id) }
        }),
    )
}

/// The `/stats` JSON.
pub fn stats_json(state: &ProjectionState, top_n: usize) -> Value {
    serde_json::to_value(state.snapshot(top_n)).expect("the snapshot serialises")
}

fn user(state: &ProjectionState, id: &str) -> (StatusCode, Json<Value>) {
    match state.model().user(id) {
        Some(view) => (
            StatusCode::OK,
            Json(serde_json::to_value(view).expect("a user view serialises")),
        ),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "no events of this user folded yet", "user_id": id })),
        ),
    }
}
