//! Exact decimal numbers, so that an integer header compares numerically with the body without
//! going through a lossy `f64`.

/// An exact decimal: sign, significant digits without leading or trailing zeros, and a power of ten.
/// Zero is always `{ negative: false, digits: "", exponent: 0 }`, so equal numbers compare equal.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

/// Reads a decimal number: an optional sign, digits, an optional fraction and an optional exponent, as
/// in JSON but also accepting `+` and leading zeros. Exact, so `9007199254740993` stays itself.
pub(super) fn parse_decimal(text: &str) -> Option<Decimal> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent_text) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (int, frac) = match mantissa.split_once('.') {
        Some((int, frac)) if all_digits(frac) => (int, frac),
        Some(_) => return None,
        None => (mantissa, ""),
    };
    if !all_digits(int) {
        return None;
    }
    let mut exponent = match exponent_text {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if !all_digits(digits) {
                return None;
            }
            let digits = digits.trim_start_matches('0');
            // Beyond 18 digits the magnitude dwarfs any JSON number, unless the mantissa is zero.
            if digits.len() > 18 {
                return int
                    .bytes()
                    .chain(frac.bytes())
                    .all(|b| b == b'0')
                    .then(zero);
            }
            let magnitude: i64 = if digits.is_empty() {
                0
            } else {
                digits.parse().ok()?
            };
            if e.starts_with('-') {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    let mut digits: String = int.chars().chain(frac.chars()).collect();
    exponent = exponent.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let significant = digits.trim_start_matches('0').len();
    digits.drain(..digits.len() - significant);
    if digits.is_empty() {
        return Some(zero());
    }
    let kept = digits.trim_end_matches('0').len();
    exponent = exponent.checked_add(i64::try_from(digits.len() - kept).ok()?)?;
    digits.truncate(kept);
    Some(Decimal {
        negative,
        digits,
        exponent,
    })
}

fn zero() -> Decimal {
    Decimal {
        negative: false,
        digits: String::new(),
        exponent: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(negative: bool, digits: &str, exponent: i64) -> Option<Decimal> {
        Some(Decimal {
            negative,
            digits: digits.to_owned(),
            exponent,
        })
    }

    #[test]
    fn equal_numbers_normalize_equally() {
        for text in [
            "42", "42.0", "4.2e1", "420E-1", "+42", "0042", "4200e-2", "0.42e+2",
        ] {
            assert_eq!(parse_decimal(text), d(false, "42", 0), "{text}");
        }
        assert_eq!(parse_decimal("-1200"), d(true, "12", 2));
        assert_eq!(parse_decimal("0.005"), d(false, "5", -3));
        for text in ["0", "-0", "0.000", "0e5", "-0e-999999999999999999999"] {
            assert_eq!(parse_decimal(text), Some(zero()), "{text}");
        }
    }

    #[test]
    fn malformed_numbers_are_refused() {
        for text in [
            "", "-", "+", ".5", "5.", "1e", "1e+", "0x10", "1_000", "1 0", "--1", "1.2.3", "1e2e3",
            "١",
        ] {
            assert_eq!(parse_decimal(text), None, "{text:?}");
        }
        // A huge exponent on a non-zero mantissa equals no JSON number.
        assert_eq!(parse_decimal("1e9999999999999999999"), None);
    }
}
