//! Broker URLs: `nats://[user:password@|token@]host[:4222]` and
//! `redis://[[user]:password@]host[:6379][/db]`.

use std::fmt;

use crate::BrokerError;

/// Which broker, where, and how to log in.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub kind: Kind,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Nats,
    Redis,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the password.
        f.write_str(&self.to_string())
    }
}

/// The URL without its credentials, for logs.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.kind {
            Kind::Nats => "nats",
            Kind::Redis => "redis",
        };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

impl Target {
    pub(crate) fn parse(text: &str) -> Result<Target, BrokerError> {
        let bad = |why: &str| BrokerError::Url(why.to_owned());
        let url = url::Url::parse(text).map_err(|e| bad(&format!("not a URL ({e})")))?;
        let (kind, default_port) = match url.scheme() {
            "nats" => (Kind::Nats, 4222),
            "redis" => (Kind::Redis, 6379),
            "tls" | "rediss" => {
                return Err(bad(
                    "TLS to the broker is not supported yet: reach it over loopback or a private network (nats:// or redis://)",
                ));
            }
            other => {
                return Err(bad(&format!(
                    "unsupported scheme \"{other}\": use nats://host:4222 or redis://host:6379"
                )));
            }
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(bad("no host")),
        };
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("a broker URL takes no query or fragment"));
        }
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let user = (!url.username().is_empty()).then(|| decode(url.username()));
        let password = url.password().map(decode);
        match kind {
            Kind::Nats if url.path() != "" && url.path() != "/" => {
                return Err(bad("a NATS URL has no path"));
            }
            Kind::Redis if url.path() != "" && url.path() != "/" && url.path() != "/0" => {
                // Pub/sub channels are global to a Redis server: the database number does not
                // separate them, so a URL that names one would promise what it cannot keep.
                return Err(bad(
                    "pub/sub ignores the database number; leave it out (use another channel to separate deployments)",
                ));
            }
            _ => {}
        }
        Ok(Target {
            kind,
            host,
            port: url.port().unwrap_or(default_port),
            user,
            password,
        })
    }

    pub(crate) fn addr(&self) -> (String, u16) {
        (self.host.clone(), self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_broker_the_address_and_the_credentials() {
        let t = Target::parse("nats://127.0.0.1").unwrap();
        assert_eq!(
            (t.kind, t.port, t.user, t.password),
            (Kind::Nats, 4222, None, None)
        );
        let t = Target::parse("nats://alice:s%40cret@nats.internal:4333").unwrap();
        assert_eq!(t.host, "nats.internal");
        assert_eq!(t.port, 4333);
        assert_eq!(t.user.as_deref(), Some("alice"));
        assert_eq!(t.password.as_deref(), Some("s@cret"));
        // Neither Debug nor Display shows the password.
        assert_eq!(format!("{t:?}"), "nats://nats.internal:4333");
        assert_eq!(t.to_string(), "nats://nats.internal:4333");

        let t = Target::parse("redis://:pw@[::1]").unwrap();
        assert_eq!((t.kind, t.port), (Kind::Redis, 6379));
        assert_eq!(t.host, "::1");
        assert_eq!(t.user, None);
        assert_eq!(t.password.as_deref(), Some("pw"));
        assert_eq!(t.to_string(), "redis://[::1]:6379");
        assert!(Target::parse("redis://localhost/0").is_ok());
    }

    #[test]
    fn what_cannot_work_is_refused_in_words() {
        for (url, says) in [
            ("amqp://localhost", "unsupported scheme \"amqp\""),
            (
                "rediss://localhost",
                "TLS to the broker is not supported yet",
            ),
            ("redis://localhost/3", "pub/sub ignores the database number"),
            ("nats://localhost/x", "a NATS URL has no path"),
            ("nats://localhost?x=1", "no query"),
            ("localhost:4222", "unsupported scheme"),
            ("nats://", "no host"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
    }
}
