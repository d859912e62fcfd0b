//! The facade's examples, run as a user would run them: built by cargo, started over stdio and
//! over HTTP, and called through the real client.

mod command_line;
mod examples;
mod quickstart;
