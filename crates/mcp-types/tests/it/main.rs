//! Integration tests of `mcp-types`: the official examples as a round-trip and schema corpus.

mod examples;
