//! The SSE parser (kelson-http `sse/parser.rs`) and, against it, the SSE writer.
//!
//! Input: a limit selector and three chunk sizes, then the stream.
//!
//! Properties:
//! - never a panic;
//! - the same stream cut into chunks of any size (empty chunks between them included) gives the
//!   same events, the same last event id and retry, and fails at the same point or not at all;
//! - an event never exceeds the parser's bound, and after a failure every feed fails;
//! - the writer's output parses back: an event's data comes back with its line breaks as `\n`,
//!   comments give no event, an id is the last event id.

#![no_main]

use libfuzzer_sys::fuzz_target;
use kelson_http::sse::{SseEvent, SseParser, write_comment, write_event, write_event_with_id};

const LIMITS: [usize; 5] = [1, 8, 64, 4096, kelson_http::sse::DEFAULT_MAX_EVENT_SIZE];

#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<SseEvent>,
    failed: bool,
    last_event_id: String,
    retry: Option<u64>,
}

fn parse<'a>(limit: usize, chunks: impl Iterator<Item = &'a [u8]>) -> Outcome {
    let mut parser = SseParser::with_max_event_size(limit);
    let mut events = Vec::new();
    let mut failed = false;
    for chunk in chunks {
        let result = parser.feed(chunk);
        while let Some(event) = parser.next_event() {
            assert!(
                event.data.len() <= limit || event.data.contains('\u{FFFD}'),
                "an event of {} bytes passed the bound of {limit}",
                event.data.len()
            );
            events.push(event);
        }
        if failed {
            assert!(result.is_err(), "a failed parser took more input");
        }
        failed |= result.is_err();
    }
    if failed {
        assert!(parser.feed(b"data: x\n\n").is_err());
    }
    Outcome {
        events,
        failed,
        last_event_id: parser.last_event_id().to_owned(),
        retry: parser.retry(),
    }
}

/// Cuts `stream` into chunks whose sizes cycle through `sizes` (a zero is an empty chunk).
fn chunks<'a>(stream: &'a [u8], sizes: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut rest = stream;
    let mut turn = 0;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let size = sizes[turn % sizes.len()].min(rest.len());
        turn += 1;
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        Some(chunk)
    })
}

fuzz_target!(|data: &[u8]| {
    let [limit, a, b, c, stream @ ..] = data else {
        return;
    };
    let limit = LIMITS[usize::from(*limit) % LIMITS.len()];
    let whole = parse(limit, std::iter::once(stream));
    // Chunks that stop before the whole stream (an outcome differs only if the failure comes
    // in the unfed part) are not compared; every size list below covers the whole stream.
    let sizes = [usize::from(*a), usize::from(*b % 8) + 1, usize::from(*c)];
    if sizes.iter().any(|s| *s > 0) {
        assert_eq!(
            whole,
            parse(limit, chunks(stream, &sizes)),
            "chunks {sizes:?}"
        );
    }
    assert_eq!(whole, parse(limit, chunks(stream, &[1])), "byte by byte");

    // The writer, read back.
    let text = String::from_utf8_lossy(stream);
    let mut wire = Vec::new();
    write_comment(&mut wire, &text);
    write_event(&mut wire, text.as_bytes());
    write_event_with_id(&mut wire, u64::from(*a), text.as_bytes());
    let read = parse(usize::MAX, std::iter::once(&wire[..]));
    let want = text.replace("\r\n", "\n").replace('\r', "\n");
    assert_eq!(read.events.len(), 2, "{:?}", String::from_utf8_lossy(&wire));
    for event in &read.events {
        assert_eq!(event.event, "message");
        assert_eq!(event.data, want);
    }
    assert_eq!(read.last_event_id, a.to_string());
    assert!(!read.failed);
});
