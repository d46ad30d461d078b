//! Layer 1: keyed events, follow/replay consumers, and a projection.
