//! The value forms every command shares, so that a flag reads the same wherever it appears:
//! durations (`--timeout`, `-d`, `--query-timeout`, the configuration file's timeouts) and the
//! addresses `kelson serve` listens on (`--http`, `--metrics-addr`, and their keys in the file).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Parses a duration: a number of seconds (`30`, `1.5`), or a number with a unit: `ms`, `s`, `m`
/// (or `min`), `h` (`500ms`, `30s`, `2m`).
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    let value: f64 = number.parse().unwrap_or(f64::NAN);
    Duration::try_from_secs_f64(value * scale).map_err(|_| {
        format!(
            "invalid duration {text:?}: use a number of seconds, or a number followed by ms, s, m or h (\"500ms\", \"30s\")"
        )
    })
}

/// Parses a duration as [`duration`] does, or `off`.
pub(crate) fn duration_or_off(text: &str) -> Result<DurationOrOff, String> {
    if text.trim().eq_ignore_ascii_case("off") {
        Ok(DurationOrOff(None))
    } else {
        duration(text)
            .map(|d| DurationOrOff(Some(d)))
            .map_err(|e| format!("{e}, or off"))
    }
}

/// A duration, or `off` (`None`). A type of its own because clap reads a field of type
/// `Option<Option<T>>` as a flag whose value may be left out, and would expect the parser to
/// return a bare `T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DurationOrOff(pub(crate) Option<Duration>);

/// Parses an address to listen on: `PORT` (on loopback, `127.0.0.1`), or `HOST:PORT` where HOST is
/// an IP address (`0.0.0.0`, `[::1]`) or `localhost` (`127.0.0.1`). Other host names are refused
/// rather than resolved, so that the address bound is the one written.
pub(crate) fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    let invalid = || {
        format!(
            "invalid address {text:?}: give a port (8080, on 127.0.0.1) or HOST:PORT, HOST being \
             an IP address or localhost (127.0.0.1:8080, localhost:8080, 0.0.0.0:8080, [::1]:8080)"
        )
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let port: u16 = text.parse().map_err(|_| invalid())?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let (host, port) = text.rsplit_once(':').ok_or_else(invalid)?;
    if !host.eq_ignore_ascii_case("localhost") {
        return Err(invalid());
    }
    let port: u16 = port.parse().map_err(|_| invalid())?;
    Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(duration(" 2m ").unwrap(), Duration::from_secs(120));
        assert_eq!(duration("1min").unwrap(), Duration::from_secs(60));
        assert_eq!(duration("1h").unwrap(), Duration::from_secs(3600));
        for bad in ["", "s", "-1", "1d", "abc", "1..2s", "x"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn listen_addresses() {
        let ok = |text: &str| {
            listen_addr(text)
                .unwrap_or_else(|e| panic!("{e}"))
                .to_string()
        };
        assert_eq!(ok("8080"), "127.0.0.1:8080");
        assert_eq!(ok("0"), "127.0.0.1:0");
        assert_eq!(ok("localhost:8080"), "127.0.0.1:8080");
        assert_eq!(ok("LOCALHOST:9"), "127.0.0.1:9");
        assert_eq!(ok("127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(ok("0.0.0.0:80"), "0.0.0.0:80");
        assert_eq!(ok("[::1]:8080"), "[::1]:8080");
        for bad in [
            "",
            "70000",
            "localhost",
            "localhost:",
            "localhost:x",
            "example.com:8080",
            ":8080",
            "127.0.0.1",
        ] {
            let e = listen_addr(bad).unwrap_err();
            assert!(e.starts_with("invalid address"), "{bad}: {e}");
        }
    }
}
