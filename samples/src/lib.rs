//! Reference applications on booblik.
pub mod queue;
