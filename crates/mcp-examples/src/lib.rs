//! Example servers.
