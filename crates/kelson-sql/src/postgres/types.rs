//! PostgreSQL values: result columns decoded from the binary format into JSON. (Parameters go out
//! in text format, which the server parses for the type it inferred: see `wire`.)
//!
//! Sending parameters in text format lets one JSON value bind to any parameter type (numeric,
//! date, uuid, enum ...) without a table of conversions; the server reports a value that does not
//! parse as an ordinary SQL error.

use std::fmt::Write as _;

use serde_json::Value;
use tokio_postgres::types::{Kind, Type};

/// Decodes one binary value; a type this adapter cannot show becomes a hint to cast it to text.
pub(crate) fn decode(ty: &Type, raw: &[u8]) -> Value {
    decode_known(ty, raw).unwrap_or_else(|| {
        Value::String(format!(
            "<{} value: cast it to text in the query, e.g. column::text>",
            ty.name()
        ))
    })
}

fn be<const N: usize>(raw: &[u8]) -> Option<[u8; N]> {
    raw.try_into().ok()
}

fn decode_known(ty: &Type, raw: &[u8]) -> Option<Value> {
    let text = || {
        std::str::from_utf8(raw)
            .ok()
            .map(|s| Value::String(s.to_owned()))
    };
    match *ty {
        Type::BOOL => Some(Value::Bool(*raw.first()? != 0)),
        Type::INT2 => Some(Value::from(i16::from_be_bytes(be(raw)?))),
        Type::INT4 => Some(Value::from(i32::from_be_bytes(be(raw)?))),
        Type::INT8 => Some(Value::from(i64::from_be_bytes(be(raw)?))),
        Type::OID | Type::XID | Type::CID | Type::REGPROC | Type::REGCLASS | Type::REGTYPE => {
            Some(Value::from(u32::from_be_bytes(be(raw)?)))
        }
        Type::FLOAT4 => Some(crate::value::float(f64::from(f32::from_be_bytes(be(raw)?)))),
        Type::FLOAT8 => Some(crate::value::float(f64::from_be_bytes(be(raw)?))),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::XML => {
            text()
        }
        Type::CHAR => Some(Value::String(char::from(*raw.first()?).to_string())),
        Type::JSON => serde_json::from_slice(raw).ok(),
        Type::JSONB => match raw.split_first()? {
            (1, rest) => serde_json::from_slice(rest).ok(),
            _ => None,
        },
        Type::BYTEA => Some(crate::value::bytes(raw)),
        Type::UUID => {
            let b: [u8; 16] = be(raw)?;
            let mut s = String::with_capacity(36);
            for (i, byte) in b.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    s.push('-');
                }
                let _ = write!(s, "{byte:02x}");
            }
            Some(Value::String(s))
        }
        Type::NUMERIC => numeric(raw).map(Value::String),
        Type::MONEY => {
            let cents = i64::from_be_bytes(be(raw)?);
            let sign = if cents < 0 { "-" } else { "" };
            let abs = cents.unsigned_abs();
            Some(Value::String(format!(
                "{sign}{}.{:02}",
                abs / 100,
                abs % 100
            )))
        }
        Type::DATE => Some(Value::String(date(i32::from_be_bytes(be(raw)?)))),
        Type::TIMESTAMP => Some(Value::String(timestamp(i64::from_be_bytes(be(raw)?), ""))),
        Type::TIMESTAMPTZ => Some(Value::String(timestamp(
            i64::from_be_bytes(be(raw)?),
            "+00",
        ))),
        Type::TIME => Some(Value::String(time_of_day(i64::from_be_bytes(be(raw)?)))),
        Type::TIMETZ => {
            let micros = i64::from_be_bytes(be(raw.get(..8)?)?);
            // Seconds west of UTC, as PostgreSQL stores it.
            let west = i32::from_be_bytes(be(raw.get(8..12)?)?);
            Some(Value::String(format!(
                "{}{}",
                time_of_day(micros),
                offset(-west)
            )))
        }
        Type::INTERVAL => {
            let micros = i64::from_be_bytes(be(raw.get(..8)?)?);
            let days = i32::from_be_bytes(be(raw.get(8..12)?)?);
            let months = i32::from_be_bytes(be(raw.get(12..16)?)?);
            Some(Value::String(interval(months, days, micros)))
        }
        Type::INET | Type::CIDR => inet(raw).map(Value::String),
        _ => match ty.kind() {
            Kind::Enum(_) => text(),
            Kind::Domain(base) => decode_known(base, raw),
            Kind::Array(element) => array(element, raw),
            _ if ty.name() == "citext" => text(),
            _ => None,
        },
    }
}

/// The binary array format: dimensions, then every element with its length (-1 for NULL).
fn array(element: &Type, raw: &[u8]) -> Option<Value> {
    let int = |at: usize| -> Option<i32> { Some(i32::from_be_bytes(be(raw.get(at..at + 4)?)?)) };
    let ndim = usize::try_from(int(0)?).ok()?;
    if ndim == 0 {
        return Some(Value::Array(Vec::new()));
    }
    if ndim > 6 {
        return None;
    }
    let mut dims = Vec::with_capacity(ndim);
    for d in 0..ndim {
        dims.push(usize::try_from(int(12 + d * 8)?).ok()?);
    }
    let mut at = 12 + ndim * 8;
    let total: usize = dims.iter().try_fold(1usize, |acc, d| acc.checked_mul(*d))?;
    let mut flat = Vec::with_capacity(total.min(raw.len()));
    for _ in 0..total {
        let len = int(at)?;
        at += 4;
        if len < 0 {
            flat.push(Value::Null);
        } else {
            let len = usize::try_from(len).ok()?;
            flat.push(decode(element, raw.get(at..at + len)?));
            at += len;
        }
    }
    // Fold the flat list into nested arrays, innermost dimension first.
    for &d in dims[1..].iter().rev() {
        if d == 0 {
            return Some(Value::Array(Vec::new()));
        }
        let mut it = flat.into_iter();
        let mut grouped = Vec::new();
        loop {
            let chunk: Vec<Value> = it.by_ref().take(d).collect();
            if chunk.is_empty() {
                break;
            }
            grouped.push(Value::Array(chunk));
        }
        flat = grouped;
    }
    Some(Value::Array(flat))
}

/// NUMERIC's binary form: base-10000 digits with a weight, a sign and a display scale.
fn numeric(raw: &[u8]) -> Option<String> {
    let word = |at: usize| -> Option<u16> { Some(u16::from_be_bytes(be(raw.get(at..at + 2)?)?)) };
    let ndigits = usize::from(word(0)?);
    let weight = i32::from(word(2)? as i16);
    let sign = word(4)?;
    let dscale = usize::from(word(6)?);
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    let digits: Vec<u16> = (0..ndigits)
        .map(|i| word(8 + i * 2))
        .collect::<Option<_>>()?;
    let digit = |i: i32| -> u16 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                let _ = write!(out, "{}", digit(i));
            } else {
                let _ = write!(out, "{:04}", digit(i));
            }
        }
    }
    if dscale > 0 {
        out.push('.');
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            let _ = write!(frac, "{:04}", digit(i));
            i += 1;
        }
        frac.truncate(dscale);
        out.push_str(&frac);
    }
    Some(out)
}

/// Days between 1970-01-01 and PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_DAYS: i64 = 10_957;

fn ymd(days_since_2000: i64) -> String {
    let (y, m, d) = crate::calendar::civil(days_since_2000 + PG_EPOCH_DAYS);
    if y <= 0 {
        // PostgreSQL has no year zero: 1 BC is year 0 of the proleptic calendar.
        format!("{:04}-{m:02}-{d:02} BC", 1 - y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

fn date(days: i32) -> String {
    match days {
        i32::MAX => "infinity".into(),
        i32::MIN => "-infinity".into(),
        d => ymd(i64::from(d)),
    }
}

fn time_of_day(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let mut s = format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    );
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

fn timestamp(micros: i64, zone: &str) -> String {
    match micros {
        i64::MAX => return "infinity".into(),
        i64::MIN => return "-infinity".into(),
        _ => {}
    }
    let days = micros.div_euclid(86_400_000_000);
    let rest = micros.rem_euclid(86_400_000_000);
    let date = ymd(days);
    // A BC suffix goes after the time, as PostgreSQL prints it.
    match date.strip_suffix(" BC") {
        Some(d) => format!("{d} {}{zone} BC", time_of_day(rest)),
        None => format!("{date} {}{zone}", time_of_day(rest)),
    }
}

fn offset(east_seconds: i32) -> String {
    let sign = if east_seconds < 0 { '-' } else { '+' };
    let s = east_seconds.unsigned_abs();
    let (h, m, sec) = (s / 3600, (s / 60) % 60, s % 60);
    match (m, sec) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{sec:02}"),
    }
}

fn interval(months: i32, days: i32, micros: i64) -> String {
    let mut parts = Vec::new();
    let (years, months) = (months / 12, months % 12);
    let unit = |n: i64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if years != 0 {
        parts.push(unit(i64::from(years), "year", "years"));
    }
    if months != 0 {
        parts.push(unit(i64::from(months), "mon", "mons"));
    }
    if days != 0 {
        parts.push(unit(i64::from(days), "day", "days"));
    }
    if micros != 0 || parts.is_empty() {
        let sign = if micros < 0 { "-" } else { "" };
        parts.push(format!(
            "{sign}{}",
            time_of_day(i64::try_from(micros.unsigned_abs()).unwrap_or(i64::MAX))
        ));
    }
    parts.join(" ")
}

/// INET and CIDR: family, prefix bits, is-cidr flag, address length, address bytes.
fn inet(raw: &[u8]) -> Option<String> {
    let (&family, rest) = raw.split_first()?;
    let (&bits, rest) = rest.split_first()?;
    let (&is_cidr, rest) = rest.split_first()?;
    let (&len, addr) = rest.split_first()?;
    if addr.len() != usize::from(len) {
        return None;
    }
    let (ip, max) = match (family, addr.len()) {
        (2, 4) => (std::net::IpAddr::from(<[u8; 4]>::try_from(addr).ok()?), 32),
        (3, 16) => (
            std::net::IpAddr::from(<[u8; 16]>::try_from(addr).ok()?),
            128,
        ),
        _ => return None,
    };
    Some(if is_cidr != 0 || bits != max {
        format!("{ip}/{bits}")
    } else {
        ip.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars() {
        assert_eq!(decode(&Type::INT4, &7i32.to_be_bytes()), json!(7));
        assert_eq!(decode(&Type::BOOL, &[1]), json!(true));
        assert_eq!(decode(&Type::FLOAT8, &2.5f64.to_be_bytes()), json!(2.5));
        assert_eq!(decode(&Type::TEXT, b"hi"), json!("hi"));
        let mut jsonb = vec![1u8];
        jsonb.extend_from_slice(br#"{"a":[1]}"#);
        assert_eq!(decode(&Type::JSONB, &jsonb), json!({"a": [1]}));
        assert_eq!(
            decode(
                &Type::UUID,
                &[
                    0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78, 0x9a,
                    0xbc, 0xde, 0xf0
                ]
            ),
            json!("12345678-9abc-def0-1234-56789abcdef0")
        );
        assert!(
            decode(&Type::POINT, &[0; 16])
                .as_str()
                .unwrap()
                .contains("cast it to text")
        );
    }

    fn numeric_bytes(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(digits.len() as u16).to_be_bytes());
        out.extend_from_slice(&weight.to_be_bytes());
        out.extend_from_slice(&sign.to_be_bytes());
        out.extend_from_slice(&dscale.to_be_bytes());
        for d in digits {
            out.extend_from_slice(&d.to_be_bytes());
        }
        out
    }

    #[test]
    fn numerics() {
        // 12345.678 = [1, 2345, 6780] with weight 1, scale 3.
        assert_eq!(
            numeric(&numeric_bytes(1, 0, 3, &[1, 2345, 6780])).unwrap(),
            "12345.678"
        );
        assert_eq!(
            numeric(&numeric_bytes(0, 0x4000, 2, &[12, 5000])).unwrap(),
            "-12.50"
        );
        assert_eq!(numeric(&numeric_bytes(-1, 0, 4, &[5])).unwrap(), "0.0005");
        assert_eq!(numeric(&numeric_bytes(0, 0, 0, &[])).unwrap(), "0");
        assert_eq!(numeric(&numeric_bytes(2, 0, 0, &[1])).unwrap(), "100000000");
        assert_eq!(numeric(&numeric_bytes(0, 0xC000, 0, &[])).unwrap(), "NaN");
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(date(0), "2000-01-01");
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(date(9190), "2025-02-28");
        assert_eq!(date(i32::MAX), "infinity");
        assert_eq!(
            timestamp(86_400_000_000 + 3_723_000_500, ""),
            "2000-01-02 01:02:03.0005"
        );
        assert_eq!(timestamp(0, "+00"), "2000-01-01 00:00:00+00");
        assert_eq!(time_of_day(45_296_000_000), "12:34:56");
        assert_eq!(offset(19_800), "+05:30");
        assert_eq!(offset(-3600), "-01");
        assert_eq!(
            interval(14, 3, 3_600_000_000),
            "1 year 2 mons 3 days 01:00:00"
        );
        assert_eq!(interval(0, 0, 0), "00:00:00");
        assert_eq!(date(-730_120), "0001-12-31 BC");
    }

    #[test]
    fn arrays_and_addresses() {
        // int4[] {1,NULL,3}
        let mut raw = Vec::new();
        for v in [1i32, 1, 23] {
            raw.extend_from_slice(&v.to_be_bytes());
        }
        raw.extend_from_slice(&3i32.to_be_bytes());
        raw.extend_from_slice(&1i32.to_be_bytes());
        for v in [Some(1i32), None, Some(3)] {
            match v {
                Some(v) => {
                    raw.extend_from_slice(&4i32.to_be_bytes());
                    raw.extend_from_slice(&v.to_be_bytes());
                }
                None => raw.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        assert_eq!(decode(&Type::INT4_ARRAY, &raw), json!([1, null, 3]));
        assert_eq!(inet(&[2, 32, 0, 4, 10, 0, 0, 1]).unwrap(), "10.0.0.1");
        assert_eq!(inet(&[2, 8, 1, 4, 10, 0, 0, 0]).unwrap(), "10.0.0.0/8");
    }
}
