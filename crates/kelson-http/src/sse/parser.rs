//! The incremental event-stream parser.

use std::collections::VecDeque;
use std::mem;

/// The default bound on one event: 16 MiB, room for a large tool result with embedded images.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

/// The UTF-8 byte order mark, which a stream may start with and which is not content.
const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` type, `message` when the event named none.
    pub event: String,
    /// The `data:` lines joined with `\n`. Invalid UTF-8 is replaced with U+FFFD, as browsers do.
    pub data: String,
}

/// Why the stream cannot be read further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event (or one line, comments included) grew past the configured bound, so a peer cannot
    /// make the client buffer without limit.
    #[error("a server-sent event exceeds the limit of {limit} bytes")]
    EventTooLarge {
        /// The bound that was exceeded.
        limit: usize,
    },
}

/// An incremental parser of `text/event-stream` bodies.
///
/// Feed it the body in chunks of any size with [`feed`](Self::feed), and take the completed events with
/// [`next_event`](Self::next_event) after each call. It accepts LF, CRLF and CR line endings, even when a
/// CRLF is split between two chunks, skips one UTF-8 byte order mark at the start, ignores comment lines
/// and unknown fields, and follows `id:` and `retry:` without acting on them. An event that the stream
/// ends in the middle of is never dispatched, as the SSE algorithm requires.
#[derive(Debug)]
pub struct SseParser {
    max_event_size: usize,
    /// How many BOM bytes have matched so far, or `None` once the start of the stream is settled.
    bom_matched: Option<usize>,
    /// The unfinished line carried over from earlier chunks.
    line: Vec<u8>,
    /// The last chunk ended in CR, so an LF that starts the next one completes a CRLF.
    after_cr: bool,
    /// The data lines of the current event, joined with LF.
    data: Vec<u8>,
    /// Whether the current event has a `data` field; its data may still be empty.
    has_data: bool,
    event_type: String,
    last_event_id: String,
    retry: Option<u64>,
    ready: VecDeque<SseEvent>,
    failed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser for a new stream, bounded by [`DEFAULT_MAX_EVENT_SIZE`].
    pub fn new() -> Self {
        Self::with_max_event_size(DEFAULT_MAX_EVENT_SIZE)
    }

    /// A parser for a new stream whose events, and lines, may not exceed `max_event_size` bytes.
    pub fn with_max_event_size(max_event_size: usize) -> Self {
        SseParser {
            max_event_size,
            bom_matched: Some(0),
            line: Vec::new(),
            after_cr: false,
            data: Vec::new(),
            has_data: false,
            event_type: String::new(),
            last_event_id: String::new(),
            retry: None,
            ready: VecDeque::new(),
            failed: false,
        }
    }

    /// Parses the next chunk of the body.
    ///
    /// Events completed by this chunk are queued for [`next_event`](Self::next_event). Once an error is
    /// returned the stream is unusable and every later call returns it again; events queued before it
    /// can still be taken.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<(), SseError> {
        if self.failed {
            return Err(self.too_large());
        }
        if let Some(before) = self.bom_matched {
            let matched = chunk
                .iter()
                .zip(&BOM[before..])
                .take_while(|(got, want)| got == want)
                .count();
            if before + matched == BOM.len() {
                self.bom_matched = None;
                chunk = &chunk[matched..];
            } else if matched == chunk.len() {
                // Every byte so far matches; the next chunk decides.
                self.bom_matched = Some(before + matched);
                return Ok(());
            } else {
                // Not a BOM: the bytes held back from earlier chunks are content.
                self.bom_matched = None;
                self.process(&BOM[..before])?;
            }
        }
        self.process(chunk)
    }

    /// Takes the oldest completed event, if any.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// The last `id:` seen. MCP 2026-07-28 streams are not resumable, so nothing acts on it.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The last valid `retry:` in milliseconds. MCP 2026-07-28 clients never reconnect a stream.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    fn process(&mut self, mut input: &[u8]) -> Result<(), SseError> {
        if self.after_cr && !input.is_empty() {
            self.after_cr = false;
            if input[0] == b'\n' {
                input = &input[1..];
            }
        }
        while !input.is_empty() {
            let Some(end) = input.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.check_size(self.line.len() + input.len())?;
                self.line.extend_from_slice(input);
                return Ok(());
            };
            let content = &input[..end];
            self.check_size(self.line.len() + content.len())?;
            if self.line.is_empty() {
                self.line_done(content);
            } else {
                let mut line = mem::take(&mut self.line);
                line.extend_from_slice(content);
                self.line_done(&line);
                line.clear();
                self.line = line;
            }
            let ended_by_cr = input[end] == b'\r';
            input = &input[end + 1..];
            if ended_by_cr {
                match input.first() {
                    Some(b'\n') => input = &input[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        Ok(())
    }

    /// Interprets one complete line (WHATWG HTML, "event stream interpretation").
    fn line_done(&mut self, line: &[u8]) {
        let (field, value) = match line.iter().position(|&b| b == b':') {
            None if line.is_empty() => return self.dispatch(),
            // A line that starts with a colon is a comment.
            Some(0) => return,
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event_type = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.last_event_id = String::from_utf8_lossy(value).into_owned();
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only, so the text is ASCII; a value too large for u64 is ignored.
                if let Ok(ms) = String::from_utf8_lossy(value).parse() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    /// Ends the current event at a blank line; an event without data is dropped.
    fn dispatch(&mut self) {
        let event_type = mem::take(&mut self.event_type);
        if !mem::replace(&mut self.has_data, false) {
            return;
        }
        let data = match String::from_utf8(mem::take(&mut self.data)) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let event = if event_type.is_empty() {
            "message".to_owned()
        } else {
            event_type
        };
        self.ready.push_back(SseEvent { event, data });
    }

    /// Fails once the event being built, with the line at hand, would pass the bound.
    fn check_size(&mut self, line_len: usize) -> Result<(), SseError> {
        let size = self.data.len() + self.event_type.len() + line_len;
        if size > self.max_event_size {
            self.failed = true;
            return Err(self.too_large());
        }
        Ok(())
    }

    fn too_large(&self) -> SseError {
        SseError::EventTooLarge {
            limit: self.max_event_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in chunks {
            parser.feed(chunk).unwrap();
            while let Some(e) = parser.next_event() {
                events.push((e.event, e.data));
            }
        }
        events
    }

    fn message(data: &str) -> (String, String) {
        ("message".to_owned(), data.to_owned())
    }

    #[test]
    fn every_line_ending_is_accepted() {
        let want = vec![message("a\nb"), message("c")];
        assert_eq!(parse(&[b"data: a\ndata: b\n\ndata: c\n\n"]), want);
        assert_eq!(parse(&[b"data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"]), want);
        assert_eq!(parse(&[b"data: a\rdata: b\r\rdata: c\r\r"]), want);
        assert_eq!(
            parse(&[
                b"data: a\r",
                b"\ndata: b\r",
                b"\n\r",
                b"\n",
                b"data: c\r\n\r",
                b"\n"
            ]),
            want
        );
    }

    #[test]
    fn a_split_crlf_is_one_line_ending() {
        // "\r" then "\n" in the next chunk must not count as an empty line (which would dispatch).
        assert_eq!(
            parse(&[b"data: a\r", b"\ndata: b\r\n\r\n"]),
            vec![message("a\nb")]
        );
        // A CR followed by another CR is two line endings.
        assert_eq!(parse(&[b"data: a\r", b"\r"]), vec![message("a")]);
        // An empty chunk between CR and LF changes nothing.
        assert_eq!(
            parse(&[b"data: a\r", b"", b"\ndata: b\n\n"]),
            vec![message("a\nb")]
        );
    }

    #[test]
    fn fields_follow_the_sse_rules() {
        let stream = b": a comment\n\
                       event: notice\n\
                       data:no space\n\
                       data:  two spaces\n\
                       data\n\
                       unknown: field\n\
                       id: 7\n\
                       retry: 1500\n\
                       \n";
        assert_eq!(
            parse(&[stream]),
            vec![("notice".to_owned(), "no space\n two spaces\n".to_owned())]
        );
        let mut parser = SseParser::new();
        parser.feed(stream).unwrap();
        assert_eq!(parser.last_event_id(), "7");
        assert_eq!(parser.retry(), Some(1500));
        parser.feed(b"retry: soon\nid: a\0b\n\n").unwrap();
        assert_eq!(parser.retry(), Some(1500));
        assert_eq!(parser.last_event_id(), "7");
    }

    #[test]
    fn events_without_data_are_dropped() {
        assert_eq!(
            parse(&[b"event: ping\n\n: keep-alive\n\n\n\ndata: x\n\n"]),
            vec![message("x")]
        );
        // The type of a dropped event does not leak into the next one.
        assert_eq!(parse(&[b"event: a\n\ndata: y\n\n"]), vec![message("y")]);
        // An empty data field still makes an event.
        assert_eq!(parse(&[b"data:\n\n"]), vec![message("")]);
    }

    #[test]
    fn an_unfinished_event_is_never_dispatched() {
        assert_eq!(parse(&[b"data: x\n"]), vec![]);
        assert_eq!(parse(&[b"data: x"]), vec![]);
    }

    #[test]
    fn one_leading_bom_is_skipped() {
        assert_eq!(parse(&[b"\xEF\xBB\xBFdata: x\n\n"]), vec![message("x")]);
        assert_eq!(
            parse(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]),
            vec![message("x")]
        );
        // Only at the start, and only once: a second BOM is part of the field name.
        assert_eq!(parse(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"]), vec![]);
        // A partial BOM is content.
        assert_eq!(
            parse(&[b"\xEF", b"\xBBdata: x\n\ndata: y\n\n"]),
            vec![message("y")]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(parse(&[b"data: \xFFok\n\n"]), vec![message("\u{FFFD}ok")]);
    }

    #[test]
    fn oversized_events_and_lines_are_refused() {
        let mut parser = SseParser::with_max_event_size(16);
        parser.feed(b"data: 0123456789\n\n").unwrap();
        assert_eq!(parser.next_event().unwrap().data, "0123456789");
        // Many data lines that together pass the bound.
        assert!(parser.feed(b"data: 0123456\ndata: 0123456\n").is_err());
        assert_eq!(
            parser.feed(b"\n"),
            Err(SseError::EventTooLarge { limit: 16 })
        );

        // One line that never ends, fed in small pieces.
        let mut parser = SseParser::with_max_event_size(16);
        let mut result = Ok(());
        for _ in 0..10 {
            result = result.and_then(|()| parser.feed(b": aaaa"));
        }
        assert_eq!(result, Err(SseError::EventTooLarge { limit: 16 }));
    }
}
