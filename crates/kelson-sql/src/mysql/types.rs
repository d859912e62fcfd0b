//! MySQL and MariaDB values to JSON, from the text protocol (a call's results, see
//! [`super::calls`]) or the binary one (the catalog's), and the type names result columns report.
//!
//! Integers (YEAR too) are JSON numbers, BIGINT UNSIGNED included; FLOAT and DOUBLE are numbers
//! (as the server writes them: FLOAT to six significant digits, so 0.1 stays 0.1); DECIMAL is a string, every digit kept;
//! DATE, DATETIME and TIMESTAMP are ISO-8601 (TIMESTAMP in UTC with `Z`: each call sets the
//! session's `time_zone` to `+00:00`), TIME is `[-]HH:MM:SS[.ffffff]` with hours past 24 as
//! MySQL allows; zero dates (`0000-00-00`) stay as MySQL writes them, since ISO-8601 has no such
//! day. Text is a string; binary strings and BLOBs are `{"base64": ...}`; BIT is a string of
//! binary digits as wide as the column; ENUM is a string and SET an array of strings; JSON
//! (MySQL's type, and MariaDB's JSON columns, which are LONGTEXT with a `json_valid` check) is
//! JSON; spatial values are `{"srid": N, "wkb": {"base64": ...}}`, the well-known binary after
//! MySQL's four-byte SRID.

use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::{Column, Value as MyValue};
use serde_json::{Map, Value};

use super::json::JsonColumn;
use crate::output::Column as ResultColumn;
use crate::value::{bytes, float};

/// The character set number of binary strings.
const BINARY_CHARSET: u16 = 63;

/// How a column's values are turned into JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Number,
    Decimal,
    Date,
    DateTime,
    /// TIMESTAMP: UTC, with `Z`.
    Timestamp,
    Time,
    Text,
    Binary,
    Bit(u32),
    Set,
    Json,
    Geometry,
}

/// A result column's kind, from its metadata. `json` says that the column is known to hold
/// JSON (MariaDB's JSON columns carry no mark of their own in the metadata).
pub(crate) fn kind(column: &Column, json: bool) -> Kind {
    use ColumnType::*;
    let binary = column.character_set() == BINARY_CHARSET;
    match column.column_type() {
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG
        | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_YEAR | MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE
        | MYSQL_TYPE_NULL => Kind::Number,
        MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => Kind::Decimal,
        MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => Kind::Date,
        MYSQL_TYPE_DATETIME | MYSQL_TYPE_DATETIME2 => Kind::DateTime,
        MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_TIMESTAMP2 => Kind::Timestamp,
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => Kind::Time,
        MYSQL_TYPE_BIT => Kind::Bit(column.column_length()),
        MYSQL_TYPE_JSON => Kind::Json,
        MYSQL_TYPE_GEOMETRY => Kind::Geometry,
        MYSQL_TYPE_SET => Kind::Set,
        _ if column.flags().contains(ColumnFlags::SET_FLAG) => Kind::Set,
        _ if column.flags().contains(ColumnFlags::ENUM_FLAG) => Kind::Text,
        _ if json => Kind::Json,
        _ if binary => Kind::Binary,
        _ => Kind::Text,
    }
}

/// The type name a result column reports: MySQL's name for it, `UNSIGNED` added where it applies.
pub(crate) fn type_name(column: &Column, json: bool) -> String {
    use ColumnType::*;
    let flags = column.flags();
    let binary = column.character_set() == BINARY_CHARSET;
    let name = match column.column_type() {
        MYSQL_TYPE_TINY => "TINYINT",
        MYSQL_TYPE_SHORT => "SMALLINT",
        MYSQL_TYPE_INT24 => "MEDIUMINT",
        MYSQL_TYPE_LONG => "INT",
        MYSQL_TYPE_LONGLONG => "BIGINT",
        MYSQL_TYPE_YEAR => "YEAR",
        MYSQL_TYPE_FLOAT => "FLOAT",
        MYSQL_TYPE_DOUBLE => "DOUBLE",
        MYSQL_TYPE_NULL => "NULL",
        MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => "DECIMAL",
        MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => "DATE",
        MYSQL_TYPE_DATETIME | MYSQL_TYPE_DATETIME2 => "DATETIME",
        MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_TIMESTAMP2 => "TIMESTAMP",
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => "TIME",
        MYSQL_TYPE_BIT => "BIT",
        MYSQL_TYPE_JSON => "JSON",
        MYSQL_TYPE_GEOMETRY => "GEOMETRY",
        MYSQL_TYPE_ENUM => "ENUM",
        MYSQL_TYPE_SET => "SET",
        _ if flags.contains(ColumnFlags::ENUM_FLAG) => "ENUM",
        _ if flags.contains(ColumnFlags::SET_FLAG) => "SET",
        _ if json => "JSON",
        MYSQL_TYPE_TINY_BLOB | MYSQL_TYPE_MEDIUM_BLOB | MYSQL_TYPE_LONG_BLOB | MYSQL_TYPE_BLOB => {
            if binary {
                "BLOB"
            } else {
                "TEXT"
            }
        }
        MYSQL_TYPE_STRING => {
            if binary {
                "BINARY"
            } else {
                "CHAR"
            }
        }
        MYSQL_TYPE_VAR_STRING | MYSQL_TYPE_VARCHAR => {
            if binary {
                "VARBINARY"
            } else {
                "VARCHAR"
            }
        }
        MYSQL_TYPE_VECTOR => "VECTOR",
        _ => "UNKNOWN",
    };
    let numeric = matches!(
        column.column_type(),
        MYSQL_TYPE_TINY
            | MYSQL_TYPE_SHORT
            | MYSQL_TYPE_INT24
            | MYSQL_TYPE_LONG
            | MYSQL_TYPE_LONGLONG
            | MYSQL_TYPE_DECIMAL
            | MYSQL_TYPE_NEWDECIMAL
            | MYSQL_TYPE_FLOAT
            | MYSQL_TYPE_DOUBLE
    );
    if numeric && flags.contains(ColumnFlags::UNSIGNED_FLAG) {
        format!("{name} UNSIGNED")
    } else {
        name.to_owned()
    }
}

/// The columns of a result as it came, with how each is decoded. `json` names the table columns
/// known to hold JSON.
pub(crate) fn columns(meta: &[Column], json: &[JsonColumn]) -> (Vec<ResultColumn>, Vec<Kind>) {
    meta.iter()
        .map(|c| {
            let is_json = is_json(c, json);
            (
                ResultColumn {
                    name: c.name_str().into_owned(),
                    ty: Some(type_name(c, is_json)),
                },
                kind(c, is_json),
            )
        })
        .unzip()
}

/// How each column of a result is decoded.
pub(crate) fn kinds(meta: &[Column], json: &[JsonColumn]) -> Vec<Kind> {
    meta.iter().map(|c| kind(c, is_json(c, json))).collect()
}

fn is_json(c: &Column, json: &[JsonColumn]) -> bool {
    json.iter()
        .any(|(s, t, n)| *s == c.schema_str() && *t == c.org_table_str() && *n == c.org_name_str())
}

/// One row as JSON, or `None` when a value is larger than `cap` bytes.
pub(crate) fn values(row: mysql_async::Row, kinds: &[Kind], cap: usize) -> Option<Vec<Value>> {
    let raw = row.unwrap_raw();
    if raw.iter().flatten().any(|v| wire_len(v) > cap) {
        return None;
    }
    Some(
        raw.into_iter()
            .zip(kinds)
            .map(|(v, kind)| decode(*kind, v.unwrap_or(MyValue::NULL)))
            .collect(),
    )
}

/// The size a value takes on the wire, to hold it against the value cap before it is decoded.
pub(crate) fn wire_len(value: &MyValue) -> usize {
    match value {
        MyValue::Bytes(b) => b.len(),
        _ => 16,
    }
}

/// One value as JSON.
pub(crate) fn decode(kind: Kind, value: MyValue) -> Value {
    match value {
        MyValue::NULL => Value::Null,
        MyValue::Int(i) => Value::from(i),
        MyValue::UInt(u) => Value::from(u),
        // The shortest decimal that reads back as the same f32, so FLOAT 0.1 is 0.1.
        MyValue::Float(f) => f.to_string().parse::<f64>().map_or(Value::Null, float),
        MyValue::Double(d) => float(d),
        MyValue::Date(y, mo, d, h, mi, s, us) => {
            date(kind, [y, mo.into(), d.into()], [h, mi, s], us)
        }
        MyValue::Time(negative, days, h, mi, s, us) => {
            let hours = u64::from(days) * 24 + u64::from(h);
            let sign = if negative { "-" } else { "" };
            Value::String(format!("{sign}{hours:02}:{mi:02}:{s:02}{}", fraction(us)))
        }
        MyValue::Bytes(b) => from_bytes(kind, b),
    }
}

fn fraction(us: u32) -> String {
    if us == 0 {
        String::new()
    } else {
        format!(".{us:06}")
    }
}

fn date(kind: Kind, [y, mo, d]: [u16; 3], [h, mi, s]: [u8; 3], us: u32) -> Value {
    let day = format!("{y:04}-{mo:02}-{d:02}");
    Value::String(match kind {
        Kind::Date => day,
        // A zero date has no ISO-8601 form: it stays as MySQL writes it.
        _ if y == 0 && mo == 0 && d == 0 => format!("{day} {h:02}:{mi:02}:{s:02}{}", fraction(us)),
        Kind::Timestamp => format!("{day}T{h:02}:{mi:02}:{s:02}{}Z", fraction(us)),
        _ => format!("{day}T{h:02}:{mi:02}:{s:02}{}", fraction(us)),
    })
}

/// A date-time or time as the text protocol writes it (`2025-03-04 05:06:07.120`, fractions as
/// many digits as the column keeps), written as the binary protocol's values are: ISO-8601 with
/// `T` (and `Z` for TIMESTAMP), a fraction of six digits or none when it is zero; a zero date
/// stays as MySQL writes it.
fn temporal(kind: Kind, t: &str) -> String {
    let (whole, fraction) = match t.split_once('.') {
        Some((whole, f)) if f.bytes().all(|b| b.is_ascii_digit()) && f.len() <= 6 => (whole, f),
        Some(_) => return t.to_owned(),
        None => (t, ""),
    };
    let fraction = if fraction.bytes().all(|b| b == b'0') {
        String::new()
    } else {
        format!(".{fraction:0<6}")
    };
    if kind == Kind::Time {
        return format!("{whole}{fraction}");
    }
    match whole.split_once(' ') {
        Some((day, _)) if day.starts_with("0000-00-00") => format!("{whole}{fraction}"),
        Some((day, time)) if kind == Kind::Timestamp => format!("{day}T{time}{fraction}Z"),
        Some((day, time)) => format!("{day}T{time}{fraction}"),
        None => format!("{whole}{fraction}"),
    }
}

fn text(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn from_bytes(kind: Kind, b: Vec<u8>) -> Value {
    match kind {
        Kind::Binary => bytes(&b),
        Kind::Bit(width) => {
            let mut digits: String = b.iter().map(|byte| format!("{byte:08b}")).collect();
            let width = usize::try_from(width).unwrap_or(usize::MAX);
            if digits.len() > width {
                digits.drain(..digits.len() - width);
            }
            Value::String(digits)
        }
        Kind::Set => {
            let t = text(b);
            if t.is_empty() {
                Value::Array(Vec::new())
            } else {
                Value::Array(t.split(',').map(|s| Value::String(s.to_owned())).collect())
            }
        }
        Kind::Json => serde_json::from_slice(&b).unwrap_or_else(|_| Value::String(text(b))),
        Kind::Geometry if b.len() >= 4 => {
            let srid = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let mut map = Map::new();
            map.insert("srid".into(), Value::from(srid));
            map.insert("wkb".into(), bytes(&b[4..]));
            Value::Object(map)
        }
        Kind::Geometry => bytes(&b),
        // Numbers sent as text (the text protocol, or a server's own choice) are read back as
        // numbers; DECIMAL stays a string, every digit kept.
        Kind::Number => {
            let t = text(b);
            t.parse::<i64>()
                .map(Value::from)
                .or_else(|_| t.parse::<u64>().map(Value::from))
                .or_else(|_| t.parse::<f64>().map(float))
                .unwrap_or(Value::String(t))
        }
        Kind::DateTime | Kind::Timestamp | Kind::Time => Value::String(temporal(kind, &text(b))),
        Kind::Decimal | Kind::Date | Kind::Text => Value::String(text(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars() {
        assert_eq!(decode(Kind::Number, MyValue::Int(-7)), json!(-7));
        assert_eq!(
            decode(Kind::Number, MyValue::UInt(u64::MAX)),
            json!(u64::MAX)
        );
        assert_eq!(decode(Kind::Number, MyValue::Float(0.1)), json!(0.1));
        assert_eq!(
            decode(Kind::Number, MyValue::Double(f64::NAN)),
            json!("NaN")
        );
        assert_eq!(
            decode(Kind::Decimal, MyValue::Bytes(b"12.50".to_vec())),
            json!("12.50")
        );
        assert_eq!(
            decode(Kind::Text, MyValue::Bytes(b"hi".to_vec())),
            json!("hi")
        );
        assert_eq!(
            decode(Kind::Binary, MyValue::Bytes(vec![0, 255])),
            json!({"base64": "AP8="})
        );
        assert_eq!(decode(Kind::Number, MyValue::NULL), Value::Null);
    }

    #[test]
    fn dates_and_times() {
        let at = MyValue::Date(2025, 3, 4, 5, 6, 7, 250_000);
        assert_eq!(
            decode(Kind::DateTime, at.clone()),
            json!("2025-03-04T05:06:07.250000")
        );
        assert_eq!(
            decode(Kind::Timestamp, at),
            json!("2025-03-04T05:06:07.250000Z")
        );
        assert_eq!(
            decode(Kind::Date, MyValue::Date(1999, 12, 31, 0, 0, 0, 0)),
            json!("1999-12-31")
        );
        assert_eq!(
            decode(Kind::DateTime, MyValue::Date(0, 0, 0, 0, 0, 0, 0)),
            json!("0000-00-00 00:00:00")
        );
        assert_eq!(
            decode(Kind::Time, MyValue::Time(true, 1, 2, 3, 4, 0)),
            json!("-26:03:04")
        );
        assert_eq!(
            decode(Kind::Time, MyValue::Time(false, 0, 0, 0, 1, 5)),
            json!("00:00:01.000005")
        );
    }

    #[test]
    fn text_protocol_dates_and_times_read_as_binary_ones() {
        let text = |kind, t: &str| decode(kind, MyValue::Bytes(t.as_bytes().to_vec()));
        assert_eq!(
            text(Kind::DateTime, "2025-03-04 05:06:07"),
            json!("2025-03-04T05:06:07")
        );
        assert_eq!(
            text(Kind::DateTime, "2025-03-04 05:06:07.000000"),
            json!("2025-03-04T05:06:07")
        );
        assert_eq!(
            text(Kind::Timestamp, "2025-03-04 05:06:07.123"),
            json!("2025-03-04T05:06:07.123000Z")
        );
        assert_eq!(
            text(Kind::DateTime, "0000-00-00 00:00:00"),
            json!("0000-00-00 00:00:00")
        );
        assert_eq!(text(Kind::Time, "-838:59:59"), json!("-838:59:59"));
        assert_eq!(text(Kind::Time, "12:00:00.5"), json!("12:00:00.500000"));
        assert_eq!(text(Kind::Date, "2024-02-29"), json!("2024-02-29"));
    }

    #[test]
    fn bits_sets_json_and_geometry() {
        assert_eq!(decode(Kind::Bit(3), MyValue::Bytes(vec![5])), json!("101"));
        assert_eq!(
            decode(Kind::Bit(10), MyValue::Bytes(vec![2, 1])),
            json!("1000000001")
        );
        assert_eq!(
            decode(Kind::Set, MyValue::Bytes(b"a,c".to_vec())),
            json!(["a", "c"])
        );
        assert_eq!(decode(Kind::Set, MyValue::Bytes(Vec::new())), json!([]));
        assert_eq!(
            decode(Kind::Json, MyValue::Bytes(br#"{"k":[1,true]}"#.to_vec())),
            json!({"k": [1, true]})
        );
        let mut point = 4326u32.to_le_bytes().to_vec();
        point.extend_from_slice(&[1, 2]);
        assert_eq!(
            decode(Kind::Geometry, MyValue::Bytes(point)),
            json!({"srid": 4326, "wkb": {"base64": "AQI="}})
        );
    }
}
