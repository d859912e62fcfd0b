//! Whatever the writer frames, the parser reads back, however the stream is cut into chunks.

use kelson_http::sse::{SseParser, write_comment, write_event};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Item {
    Event(String),
    Comment(String),
}

fn item() -> impl Strategy<Value = Item> {
    let text = prop_oneof![
        any::<String>(),
        "[a-z:\r\n ]{0,12}",
        Just(String::new()),
        Just("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_owned()),
    ];
    prop_oneof![
        3 => text.clone().prop_map(Item::Event),
        1 => text.prop_map(Item::Comment),
    ]
}

/// What the parser should report for written `data`: an event stream turns CRLF and CR into LF.
fn normalized(data: &str) -> String {
    data.replace("\r\n", "\n").replace('\r', "\n")
}

/// Cuts `wire` at the given fractions of its length.
fn chunks(wire: &[u8], cuts: &[prop::sample::Index]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
    points.push(0);
    points.push(wire.len());
    points.sort_unstable();
    points
        .windows(2)
        .map(|w| wire[w[0]..w[1]].to_vec())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn written_events_parse_back(
        items in prop::collection::vec(item(), 0..8),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        bom in any::<bool>(),
        ending in prop::sample::select(vec!["\n", "\r\n", "\r"]),
    ) {
        let mut wire = Vec::new();
        if bom {
            wire.extend_from_slice(b"\xEF\xBB\xBF");
        }
        let mut want = Vec::new();
        for item in &items {
            match item {
                Item::Event(data) => {
                    write_event(&mut wire, data.as_bytes());
                    want.push(normalized(data));
                }
                Item::Comment(text) => write_comment(&mut wire, text),
            }
        }
        // The writer ends lines with LF and never writes a CR, so the same stream can be rewritten with
        // any of the three line endings a server may use.
        let wire = String::from_utf8(wire).unwrap().replace('\n', ending).into_bytes();
        let mut parser = SseParser::new();
        let mut got = Vec::new();
        for chunk in chunks(&wire, &cuts) {
            parser.feed(&chunk).unwrap();
            while let Some(event) = parser.next_event() {
                prop_assert_eq!(&event.event, "message");
                got.push(event.data);
            }
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn one_byte_at_a_time_is_the_same_as_all_at_once(items in prop::collection::vec(item(), 0..6)) {
        let mut wire = Vec::new();
        for item in &items {
            match item {
                Item::Event(data) => write_event(&mut wire, data.as_bytes()),
                Item::Comment(text) => write_comment(&mut wire, text),
            }
        }
        let mut whole = SseParser::new();
        whole.feed(&wire).unwrap();
        let mut bytewise = SseParser::new();
        for b in &wire {
            bytewise.feed(std::slice::from_ref(b)).unwrap();
        }
        loop {
            let (a, b) = (whole.next_event(), bytewise.next_event());
            prop_assert_eq!(&a, &b);
            if a.is_none() {
                break;
            }
        }
    }

    #[test]
    fn arbitrary_input_never_panics_and_stays_bounded(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut parser = SseParser::with_max_event_size(32);
        for chunk in chunks(&bytes, &cuts) {
            if parser.feed(&chunk).is_err() {
                break;
            }
            while let Some(event) = parser.next_event() {
                prop_assert!(event.data.len() <= 32 * 3, "{} bytes", event.data.len());
            }
        }
    }
}
