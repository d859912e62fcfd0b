//! Which eras a server serves, and the handshake era's revisions: what the rest of the crate needs
//! to know of the handshake era without serving it.

/// The handshake-era revisions this server speaks, newest first. `initialize` settles on the one
/// the client asks for when it is here, and otherwise on the newest.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Which protocol eras a server serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Eras {
    /// Both: modern requests statelessly, and `initialize` sessions for handshake-era clients
    /// (the hosts most people run still speak only that era).
    #[default]
    Both,
    /// 2026-07-28 only: `initialize` is answered with -32022 naming the supported versions.
    ModernOnly,
}
