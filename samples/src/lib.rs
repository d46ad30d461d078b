//! Reference applications on booblik.
