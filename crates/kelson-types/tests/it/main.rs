//! Integration tests of `kelson-types`: the official examples as a round-trip and schema corpus.

mod examples;
