//! Statement parameters (JSON in, SQL values out) and the row collector shared by both engines.

use serde_json::{Number, Value};

/// One bound parameter, from a JSON primitive of the `params` argument. Parameters are always bound
/// through the driver, never written into the SQL text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Param {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl Param {
    /// Maps a JSON value; arrays and objects are refused (the input schema already does).
    pub(crate) fn from_json(value: &Value) -> Result<Param, String> {
        Ok(match value {
            Value::Null => Param::Null,
            Value::Bool(b) => Param::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Param::Int(i),
                None => Param::Float(n.as_f64().ok_or("a number out of range")?),
            },
            Value::String(s) => Param::Text(s.clone()),
            Value::Array(_) | Value::Object(_) => {
                return Err("parameters must be strings, numbers, booleans or null".to_owned());
            }
        })
    }

    /// The parameter's text form, as PostgreSQL parses it for the inferred parameter type.
    #[cfg(feature = "postgres")]
    pub(crate) fn to_text(&self) -> Option<String> {
        match self {
            Param::Null => None,
            Param::Bool(b) => Some(b.to_string()),
            Param::Int(i) => Some(i.to_string()),
            Param::Float(f) => Some(f.to_string()),
            Param::Text(s) => Some(s.clone()),
        }
    }
}

/// A float as JSON: finite values as numbers, the others as the strings PostgreSQL prints.
pub(crate) fn float(f: f64) -> Value {
    match Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None if f.is_nan() => Value::String("NaN".into()),
        None if f > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

/// Bytes as JSON: `{"base64": "..."}`, so that binary data is never mistaken for text.
pub(crate) fn bytes(b: &[u8]) -> Value {
    use base64::Engine as _;
    let mut map = serde_json::Map::new();
    map.insert(
        "base64".into(),
        Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
    );
    Value::Object(map)
}

/// Why a result stopped short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Truncation {
    MaxRows,
    MaxBytes,
}

impl Truncation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Truncation::MaxRows => "max_rows",
            Truncation::MaxBytes => "max_bytes",
        }
    }
}

/// Gathers rows under the row and byte limits.
#[derive(Debug)]
pub(crate) struct Collector {
    max_rows: usize,
    max_bytes: usize,
    bytes: usize,
    pub(crate) rows: Vec<Vec<Value>>,
    pub(crate) truncated: Option<Truncation>,
}

impl Collector {
    pub(crate) fn new(max_rows: usize, max_bytes: usize) -> Self {
        Collector {
            max_rows,
            max_bytes,
            bytes: 2,
            rows: Vec::new(),
            truncated: None,
        }
    }

    /// Whether more rows are still wanted.
    pub(crate) fn wants_more(&self) -> bool {
        self.truncated.is_none()
    }

    /// Ends the result here, flagged with `why`: a row that cannot be kept was met.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub(crate) fn cut(&mut self, why: Truncation) {
        self.truncated.get_or_insert(why);
    }

    /// Offers one more row: kept if it fits, otherwise the result is flagged truncated and the row
    /// dropped. Returns whether more rows are wanted.
    pub(crate) fn push(&mut self, row: Vec<Value>) -> bool {
        if self.truncated.is_some() {
            return false;
        }
        if self.rows.len() >= self.max_rows {
            self.truncated = Some(Truncation::MaxRows);
            return false;
        }
        // Compact JSON plus the separating comma: exactly what the row adds to `rows`.
        let size = serde_json::to_vec(&row).map_or(usize::MAX, |v| v.len()) + 1;
        if self.bytes.saturating_add(size) > self.max_bytes {
            self.truncated = Some(Truncation::MaxBytes);
            return false;
        }
        self.bytes += size;
        self.rows.push(row);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_from_json() {
        assert_eq!(Param::from_json(&json!(null)), Ok(Param::Null));
        assert_eq!(Param::from_json(&json!(7)), Ok(Param::Int(7)));
        assert_eq!(Param::from_json(&json!(1.5)), Ok(Param::Float(1.5)));
        assert_eq!(
            Param::from_json(&json!(u64::MAX)),
            Ok(Param::Float(u64::MAX as f64))
        );
        assert_eq!(Param::from_json(&json!(true)), Ok(Param::Bool(true)));
        assert_eq!(Param::from_json(&json!("x")), Ok(Param::Text("x".into())));
        assert!(Param::from_json(&json!([1])).is_err());
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn params_as_text() {
        assert_eq!(Param::Bool(false).to_text().as_deref(), Some("false"));
        assert_eq!(Param::Null.to_text(), None);
    }

    #[test]
    fn special_values() {
        assert_eq!(float(f64::NAN), json!("NaN"));
        assert_eq!(float(f64::NEG_INFINITY), json!("-Infinity"));
        assert_eq!(float(2.5), json!(2.5));
        assert_eq!(bytes(b"hi"), json!({"base64": "aGk="}));
    }

    #[test]
    fn collector_stops_at_rows_then_bytes() {
        let mut c = Collector::new(2, 1024);
        assert!(c.push(vec![json!(1)]));
        assert!(c.push(vec![json!(2)]));
        assert!(!c.push(vec![json!(3)]));
        assert_eq!(c.truncated, Some(Truncation::MaxRows));
        assert_eq!(c.rows.len(), 2);

        let mut c = Collector::new(100, 40);
        assert!(c.push(vec![json!("0123456789")])); // 14 bytes and a comma, after the 2 of `[]`
        assert!(c.push(vec![json!("0123456789")]));
        assert!(!c.push(vec![json!("0123456789")]));
        assert_eq!(c.truncated, Some(Truncation::MaxBytes));
        assert_eq!(c.rows.len(), 2);
        assert!(!c.wants_more());
    }
}
