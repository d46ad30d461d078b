//! The booblik broker: segmented log storage, group commit, and the TCP server.
