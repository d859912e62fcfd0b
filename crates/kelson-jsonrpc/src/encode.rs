use serde::Serialize;
use serde_json::value::RawValue;

use crate::{ErrorObject, Id};

// The writers append straight into a caller-owned buffer: the fixed parts of the envelope are byte
// literals, so a response costs one serialization of its payload and nothing else. Output is compact
// JSON without newlines, as the stdio transport requires (spec 2026-07-28 basic/transports: stdio).

fn write_id(out: &mut Vec<u8>, id: &Id) {
    match id {
        Id::Int(n) => write_integer(out, *n),
        // Writing a string into a Vec cannot fail.
        Id::Str(s) => serde_json::to_writer(&mut *out, &**s).expect("string serializes"),
    }
}

/// Appends `n` in decimal. Every response carries its id, most often an integer: this spares each
/// one the formatting machinery of `write!`.
fn write_integer(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends `{"jsonrpc":"2.0","id":ID,"result":RESULT}`.
pub fn write_result<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &Id,
    result: &T,
) -> serde_json::Result<()> {
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_id(out, id);
    out.extend_from_slice(br#","result":"#);
    if let Err(err) = serde_json::to_writer(&mut *out, result) {
        out.truncate(start);
        return Err(err);
    }
    out.push(b'}');
    Ok(())
}

/// Appends a result response whose result is already-encoded JSON.
pub fn write_result_raw(out: &mut Vec<u8>, id: &Id, result: &RawValue) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_id(out, id);
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result.get().as_bytes());
    out.push(b'}');
}

/// Appends `{"jsonrpc":"2.0","id":ID,"error":ERROR}`; the id is omitted when it could not be read.
pub fn write_error(out: &mut Vec<u8>, id: Option<&Id>, error: &ErrorObject) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    if let Some(id) = id {
        out.extend_from_slice(br#""id":"#);
        write_id(out, id);
        out.push(b',');
    }
    out.extend_from_slice(br#""error":"#);
    // An error object holds only strings, integers and JSON values: it always serializes.
    serde_json::to_writer(&mut *out, error).expect("error object serializes");
    out.push(b'}');
}

/// Appends `{"jsonrpc":"2.0","method":METHOD,"params":PARAMS}`.
pub fn write_notification<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    method: &str,
    params: &T,
) -> serde_json::Result<()> {
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    serde_json::to_writer(&mut *out, method)?;
    out.extend_from_slice(br#","params":"#);
    if let Err(err) = serde_json::to_writer(&mut *out, params) {
        out.truncate(start);
        return Err(err);
    }
    out.push(b'}');
    Ok(())
}

/// Appends `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}`.
pub fn write_request<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &Id,
    method: &str,
    params: &T,
) -> serde_json::Result<()> {
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_id(out, id);
    out.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut *out, method)?;
    out.extend_from_slice(br#","params":"#);
    if let Err(err) = serde_json::to_writer(&mut *out, params) {
        out.truncate(start);
        return Err(err);
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, decode};
    use serde_json::json;

    #[test]
    fn writes_compact_envelopes() {
        let mut out = Vec::new();
        write_result(
            &mut out,
            &Id::from("a\"b"),
            &json!({"resultType": "complete"}),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":"a\"b","result":{"resultType":"complete"}}"#
        );

        let mut out = Vec::new();
        write_error(&mut out, None, &ErrorObject::parse_error("eof"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error: eof"}}"#
        );

        let mut out = Vec::new();
        write_request(&mut out, &Id::Int(-3), "tools/list", &json!({"_meta": {}})).unwrap();
        let Message::Request(r) = decode(&out).unwrap() else {
            panic!()
        };
        assert_eq!(r.id, Id::Int(-3));
    }

    #[test]
    fn integer_ids_are_written_as_format_would() {
        for n in [0, 1, 9, 10, -1, -10, 1_234_567, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            write_id(&mut out, &Id::Int(n));
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }
}
