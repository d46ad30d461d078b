//! Async client for booblik.
