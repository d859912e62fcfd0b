//! A TCP proxy that records what a client sends between two answers of the server (a flight):
//! the round trips a call costs, as seen on the wire.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// What the adapter sent, per connection, in flights: the bytes it wrote between two answers of
/// the server.
type Flights = Arc<Mutex<Vec<(usize, Vec<u8>)>>>;

/// A TCP proxy in front of the test's database server that records the client's flights.
pub struct Proxy {
    pub port: u16,
    flights: Flights,
}

impl Proxy {
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let flights: Flights = Arc::default();
        let recorded = flights.clone();
        tokio::spawn(async move {
            let mut id = 0;
            while let Ok((client, _)) = listener.accept().await {
                id += 1;
                let server = TcpStream::connect(upstream).await.unwrap();
                tokio::spawn(relay(id, client, server, recorded.clone()));
            }
        });
        Proxy { port, flights }
    }

    /// Each flight that holds `marker`.
    pub fn flights_with(&self, marker: &str) -> Vec<Vec<u8>> {
        let flights = self.flights.lock().unwrap();
        flights
            .iter()
            .filter(|(_, bytes)| contains(bytes, marker.as_bytes()))
            .map(|(_, bytes)| bytes.clone())
            .collect()
    }

    /// The flights of the connection that sent `marker`, from the first one holding it on.
    pub fn flights_from(&self, marker: &str) -> Vec<Vec<u8>> {
        let flights = self.flights.lock().unwrap();
        let Some(at) = flights
            .iter()
            .position(|(_, bytes)| contains(bytes, marker.as_bytes()))
        else {
            return Vec::new();
        };
        let conn = flights[at].0;
        flights[at..]
            .iter()
            .filter(|(c, _)| *c == conn)
            .map(|(_, bytes)| bytes.clone())
            .collect()
    }

    /// The flight the same connection sent after the one holding `marker`.
    pub fn flight_after(&self, marker: &str) -> Option<Vec<u8>> {
        let flights = self.flights.lock().unwrap();
        let at = flights
            .iter()
            .position(|(_, bytes)| contains(bytes, marker.as_bytes()))?;
        let conn = flights[at].0;
        flights[at + 1..]
            .iter()
            .find(|(c, _)| *c == conn)
            .map(|(_, bytes)| bytes.clone())
    }
}

async fn relay(conn: usize, client: TcpStream, server: TcpStream, flights: Flights) {
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = server.into_split();
    // Set when the server has answered since the client last wrote: the client's next bytes start
    // a new flight.
    let answered = Arc::new(AtomicBool::new(true));
    let seen = answered.clone();
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            {
                let mut flights = flights.lock().unwrap();
                let last = flights.iter().rposition(|(c, _)| *c == conn);
                match last {
                    Some(i) if !seen.swap(false, Ordering::SeqCst) => {
                        flights[i].1.extend_from_slice(&buf[..n])
                    }
                    _ => flights.push((conn, buf[..n].to_vec())),
                }
            }
            if server_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match server_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            answered.store(true, Ordering::SeqCst);
            if client_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(up, down);
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
