//! Durable consumer positions.
