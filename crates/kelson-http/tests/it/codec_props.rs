//! The value codec round-trips every string and always produces a valid header value.

use http::HeaderValue;
use kelson_http::{decode_value, encode_header_value, encode_value};
use proptest::prelude::*;

/// Strings biased towards the codec's edge cases: the sentinel markers, blanks and controls.
fn tricky() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("=?base64?".to_owned()),
        Just("?=".to_owned()),
        Just(" ".to_owned()),
        Just("\t".to_owned()),
        Just("\r\n".to_owned()),
        Just("\u{7f}".to_owned()),
        "[a-zA-Z0-9=?/+]{0,4}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|parts| parts.concat())
}

fn assert_round_trip(s: &str) -> Result<(), TestCaseError> {
    let encoded = encode_value(s);
    let header = HeaderValue::from_str(&encoded);
    prop_assert!(header.is_ok(), "{encoded:?} is not a header value");
    // Nothing for HTTP parsing to trim, and no byte the decoder refuses.
    prop_assert!(!encoded.starts_with([' ', '\t']) && !encoded.ends_with([' ', '\t']));
    prop_assert!(encoded.bytes().all(|b| b == b' ' || b.is_ascii_graphic()));
    prop_assert_eq!(decode_value(encoded.as_ref()).unwrap(), s);
    let header = header.unwrap();
    prop_assert_eq!(decode_value(&header).unwrap(), s);
    prop_assert_eq!(encode_header_value(s), encoded.as_ref());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_string_round_trips(s in any::<String>()) {
        assert_round_trip(&s)?;
    }

    #[test]
    fn tricky_strings_round_trip(s in tricky()) {
        assert_round_trip(&s)?;
    }

    #[test]
    fn plain_values_travel_unchanged(s in "[!-~]([ -~]{0,30}[!-~])?") {
        prop_assume!(!(s.starts_with("=?base64?") && s.ends_with("?=")));
        prop_assert_eq!(encode_value(&s), s.as_str());
    }

    #[test]
    fn decoding_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let _ = decode_value(bytes.as_slice());
        let mut sentinel = b"=?base64?".to_vec();
        sentinel.extend_from_slice(&bytes);
        sentinel.extend_from_slice(b"?=");
        let _ = decode_value(sentinel.as_slice());
    }

    #[test]
    fn surrounding_whitespace_never_matters(s in any::<String>(), pad in "[ \t]{0,3}", tail in "[ \t]{0,3}") {
        let wire = format!("{pad}{}{tail}", encode_value(&s));
        prop_assert_eq!(decode_value(wire.as_str()).unwrap(), s);
    }
}
