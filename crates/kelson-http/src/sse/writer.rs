//! The event-stream writer the server uses.

/// Appends one event with the default type (`message`) whose data is `data`.
///
/// Each line of `data` becomes one `data:` line, so the receiver joins them back with `\n`. Compact
/// JSON never contains a raw line break, so a JSON-RPC message is one line. An event stream cannot
/// carry a carriage return in data: CRLF and lone CR arrive as `\n`, which inside JSON text is
/// insignificant whitespace between tokens (a break inside a JSON string is always escaped).
/// No `id:` or `retry:` is written: 2026-07-28 streams are not resumable.
pub fn write_event(out: &mut Vec<u8>, data: &[u8]) {
    out.reserve(data.len() + 8);
    write_data(out, data);
}

/// Appends one event with an `id:` field, for the resumable streams of the handshake era (a client
/// that reconnects names the last id it saw in `Last-Event-ID`).
///
/// An id holds no line break or NUL (the parser would end the field there, or ignore it); the
/// server's ids are decimal numbers.
pub fn write_event_with_id(out: &mut Vec<u8>, id: u64, data: &[u8]) {
    out.reserve(data.len() + 32);
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(id.to_string().as_bytes());
    out.push(b'\n');
    write_data(out, data);
}

fn write_data(out: &mut Vec<u8>, data: &[u8]) {
    for line in lines(data) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Appends a comment, which receivers ignore; servers send one periodically as a keep-alive.
///
/// Every line of `text` becomes its own comment line, so a line break in `text` cannot start a field.
/// An empty `text` writes the bare `:` line.
pub fn write_comment(out: &mut Vec<u8>, text: &str) {
    for line in lines(text.as_bytes()) {
        out.push(b':');
        if !line.is_empty() {
            out.push(b' ');
            out.extend_from_slice(line);
        }
        out.push(b'\n');
    }
}

/// Splits on LF, CRLF and CR, as the parser does. An empty input is one empty line.
fn lines(mut text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match text.iter().position(|&b| b == b'\n' || b == b'\r') {
            None => {
                done = true;
                Some(text)
            }
            Some(end) => {
                let line = &text[..end];
                let skip = if text[end..].starts_with(b"\r\n") {
                    2
                } else {
                    1
                };
                text = &text[end + skip..];
                Some(line)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &[u8]) -> String {
        let mut out = Vec::new();
        write_event(&mut out, data);
        String::from_utf8(out).unwrap()
    }

    fn comment(text: &str) -> String {
        let mut out = Vec::new();
        write_comment(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_json_message_is_one_data_line() {
        assert_eq!(event(br#"{"a":1}"#), "data: {\"a\":1}\n\n");
        assert_eq!(event(b""), "data: \n\n");
    }

    #[test]
    fn an_id_comes_before_the_data() {
        let mut out = Vec::new();
        write_event_with_id(&mut out, 42, br#"{"a":1}"#);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "id: 42\ndata: {\"a\":1}\n\n"
        );
    }

    #[test]
    fn line_breaks_become_data_lines() {
        assert_eq!(event(b"a\nb"), "data: a\ndata: b\n\n");
        assert_eq!(
            event(b"a\r\nb\rc\n"),
            "data: a\ndata: b\ndata: c\ndata: \n\n"
        );
    }

    #[test]
    fn comments_stay_comments() {
        assert_eq!(comment(""), ":\n");
        assert_eq!(comment("keep-alive"), ": keep-alive\n");
        assert_eq!(comment("a\ndata: b"), ": a\n: data: b\n");
    }
}
