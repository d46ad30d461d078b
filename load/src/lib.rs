//! The booblik load harness.
