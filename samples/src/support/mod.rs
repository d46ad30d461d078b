//! Plumbing shared by the samples, kept out of the sample files so they stay about the log.

pub mod stats_http;
