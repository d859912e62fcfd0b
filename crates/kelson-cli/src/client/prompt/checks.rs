//! The checks of a form's answers: string lengths and formats, number ranges.

use kelson_types::{NumberSchema, NumberType, StringFormat, StringSchema};

/// A format's name, for a field's hint.
pub(super) fn format_name(format: &StringFormat) -> &'static str {
    match format {
        StringFormat::Email => "email",
        StringFormat::Uri => "URI",
        StringFormat::Date => "date YYYY-MM-DD",
        StringFormat::DateTime => "date-time YYYY-MM-DDTHH:MM:SSZ",
    }
}

/// The checks of a string field: length in characters, then format.
pub(super) fn check_string(s: &StringSchema, value: &str) -> Result<(), String> {
    let len = value.chars().count() as u64;
    if let Some(min) = s.min_length
        && len < min
    {
        return Err(format!("at least {min} characters, please ({len} given)"));
    }
    if let Some(max) = s.max_length
        && len > max
    {
        return Err(format!("at most {max} characters, please ({len} given)"));
    }
    let ok = match &s.format {
        None => true,
        Some(StringFormat::Email) => is_email(value),
        Some(StringFormat::Uri) => is_uri(value),
        Some(StringFormat::Date) => is_date(value),
        Some(StringFormat::DateTime) => is_date_time(value),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "not a valid {}",
            format_name(s.format.as_ref().expect("a format failed"))
        ))
    }
}

fn is_email(value: &str) -> bool {
    let Some((local, domain)) = value.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !value.chars().any(char::is_whitespace)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

fn is_uri(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn digits(text: &str, n: usize) -> Option<u32> {
    (text.len() == n && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

fn is_date(value: &str) -> bool {
    let mut parts = value.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
fn is_date_time(value: &str) -> bool {
    let Some((date, time)) = value.split_once(['T', 't']) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let (clock, zone) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        (clock, None)
    } else if let Some(at) = time.rfind(['+', '-']) {
        (&time[..at], Some(&time[at + 1..]))
    } else {
        return false;
    };
    let clock = clock.split_once('.').map_or(clock, |(c, frac)| {
        if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) {
            c
        } else {
            ""
        }
    });
    let hms: Vec<&str> = clock.split(':').collect();
    let ok_clock = hms.len() == 3
        && digits(hms[0], 2).is_some_and(|h| h < 24)
        && digits(hms[1], 2).is_some_and(|m| m < 60)
        && digits(hms[2], 2).is_some_and(|s| s <= 60);
    let ok_zone = zone.is_none_or(|z| {
        z.split_once(':').is_some_and(|(h, m)| {
            digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60)
        })
    });
    ok_clock && ok_zone
}

/// Parses and range-checks a number field's answer.
pub(super) fn parse_number(n: &NumberSchema, text: &str) -> Result<serde_json::Number, String> {
    let integer = n.r#type == NumberType::Integer;
    let (value, number) = if integer {
        let v: i64 = text
            .parse()
            .map_err(|_| format!("{text:?} is not a whole number"))?;
        (v as f64, serde_json::Number::from(v))
    } else {
        let v: f64 = text
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("{text:?} is not a number"))?;
        let number = match text.parse::<i64>() {
            Ok(i) => serde_json::Number::from(i),
            Err(_) => serde_json::Number::from_f64(v).ok_or("not a finite number")?,
        };
        (v, number)
    };
    if let Some(min) = n.minimum
        && value < min
    {
        return Err(format!("at least {min}, please"));
    }
    if let Some(max) = n.maximum
        && value > max
    {
        return Err(format!("at most {max}, please"));
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert!(
            is_email("a@b.co") && !is_email("a@b") && !is_email("a b@c.d") && !is_email("@b.c")
        );
        assert!(is_uri("https://x") && is_uri("urn:isbn:1") && !is_uri("nope") && !is_uri("1x:y"));
        assert!(is_date("2024-02-29") && !is_date("2023-02-29") && !is_date("2024-13-01"));
        assert!(is_date_time("2024-01-02T03:04:05Z"));
        assert!(is_date_time("2024-01-02T03:04:05.123+05:30"));
        assert!(!is_date_time("2024-01-02 03:04:05Z") && !is_date_time("2024-01-02T25:00:00Z"));
        assert!(!is_date_time("2024-01-02T03:04:05"));
        let n = NumberSchema::number().with_range(Some(-1.0), Some(1.0));
        assert_eq!(parse_number(&n, "0.5").unwrap().as_f64(), Some(0.5));
        assert_eq!(parse_number(&n, "1").unwrap().as_i64(), Some(1));
        assert!(parse_number(&n, "2").is_err() && parse_number(&n, "NaN").is_err());
    }
}
