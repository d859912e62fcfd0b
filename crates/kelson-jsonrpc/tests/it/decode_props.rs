//! Property tests for the envelope decoder: it never panics, answers every input with a message or
//! the right error code, and round-trips what the writers produce.

use kelson_jsonrpc::{Id, Message, code, decode, write_error, write_notification, write_request};
use proptest::prelude::*;
use serde_json::{Value, json};

fn id_strategy() -> impl Strategy<Value = Id> {
    prop_oneof![any::<i64>().prop_map(Id::Int), ".{0,12}".prop_map(Id::from)]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z\\\\\"\\u{e9}]{0,6}".prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,5}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        match decode(&bytes) {
            Ok(_) => {}
            Err(e) => prop_assert!(e.error.code == code::PARSE_ERROR || e.error.code == code::INVALID_REQUEST),
        }
    }

    #[test]
    fn arbitrary_json_is_never_a_parse_error(value in json_value()) {
        let text = serde_json::to_vec(&value).unwrap();
        if let Err(e) = decode(&text) {
            prop_assert_eq!(e.error.code, code::INVALID_REQUEST);
        }
    }

    #[test]
    fn written_requests_decode_to_the_same_parts(id in id_strategy(), method in "[a-z/]{1,20}", params in prop::collection::btree_map("[a-z]{1,4}", json_leaf(), 0..4)) {
        let params = Value::Object(params.into_iter().collect());
        let mut out = Vec::new();
        write_request(&mut out, &id, &method, &params).unwrap();
        let Message::Request(req) = decode(&out).unwrap() else { panic!("not a request") };
        prop_assert_eq!(&req.id, &id);
        prop_assert_eq!(&*req.method, method.as_str());
        let decoded: Value = serde_json::from_str(req.params.unwrap().get()).unwrap();
        prop_assert_eq!(decoded, params);
    }

    #[test]
    fn written_notifications_are_notifications(method in "[a-z/]{1,20}") {
        let mut out = Vec::new();
        write_notification(&mut out, &method, &json!({})).unwrap();
        let is_notification = matches!(decode(&out).unwrap(), Message::Notification(_));
        prop_assert!(is_notification);
    }

    #[test]
    fn the_id_of_an_invalid_request_survives(id in id_strategy(), bad in prop_oneof![Just("1"), Just("[]"), Just("\"x\""), Just("null")]) {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"m","params":{bad}}}"#, serde_json::to_string(&id).unwrap());
        let e = decode(text.as_bytes()).unwrap_err();
        prop_assert_eq!(e.error.code, code::INVALID_REQUEST);
        prop_assert_eq!(e.id.clone(), Some(id.clone()));
        let mut out = Vec::new();
        write_error(&mut out, e.id.as_ref(), &e.error);
        let Message::Response(resp) = decode(&out).unwrap() else { panic!("not a response") };
        prop_assert_eq!(resp.id, Some(id));
    }
}
