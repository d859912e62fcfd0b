//! Model Context Protocol 2026-07-28 types.
