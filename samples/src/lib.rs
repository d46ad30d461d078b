//! Reference applications on booblik.

pub mod events;
pub mod queue;
pub mod support;
