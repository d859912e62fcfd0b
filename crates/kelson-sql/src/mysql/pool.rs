//! MySQL's connections in the shared pool ([`crate::remote`]): mysql_async connections, pinged
//! before use after a while idle, stopped with `KILL QUERY` from a side connection.
//!
//! A connection goes back to the pool only when its call ended cleanly and its session was reset
//! (`COM_RESET_CONNECTION`, see [`super::settle`]).

use std::sync::Arc;
use std::time::Duration;

use mysql_async::Conn;
use mysql_async::prelude::Queryable as _;

use super::options::Prepared;
use crate::remote::{Connector, Lent, Pool, Stopper};

/// How long a connection may stay idle before it is pinged when lent again.
const IDLE_CHECK: Duration = Duration::from_secs(30);

/// Why no connection was lent.
pub(crate) type GetError = crate::remote::GetError<ConnectError>;

/// Why a new connection was not opened.
pub(crate) enum ConnectError {
    /// The server or the driver refused it.
    Driver(mysql_async::Error),
    /// No connection within the connect timeout.
    Timeout(Duration),
}

/// How the pool opens and looks after MySQL connections.
pub(crate) struct MyConnector {
    prepared: Arc<Prepared>,
}

/// Stops the statement of connection `id` with `KILL QUERY`.
#[derive(Clone)]
pub(crate) struct Kill {
    prepared: Arc<Prepared>,
    id: u32,
}

impl Connector for MyConnector {
    type Conn = Conn;
    type Error = ConnectError;
    type Stopper = Kill;

    async fn connect(&self) -> Result<Conn, ConnectError> {
        connect(&self.prepared).await
    }

    async fn ready(&self, conn: &mut Conn, idle_for: Duration) -> bool {
        // The server closes connections idle for longer than its `wait_timeout`: one that waited
        // a while is checked before a call relies on it.
        idle_for < IDLE_CHECK || conn.ping().await.is_ok()
    }

    fn stopper(&self, conn: &Conn) -> Kill {
        Kill {
            prepared: self.prepared.clone(),
            id: conn.id(),
        }
    }
}

impl Stopper for Kill {
    const ENGINE: &'static str = "MySQL";

    async fn stop(&self) -> Result<(), String> {
        kill_query(&self.prepared, self.id).await
    }
}

pub(crate) type MyPool = Pool<MyConnector>;

/// A connection lent to one call.
pub(crate) type MyConn = Lent<MyConnector>;

/// Opens a connection, within the connect timeout.
pub(crate) async fn connect(prepared: &Prepared) -> Result<Conn, ConnectError> {
    match tokio::time::timeout(prepared.connect_timeout, Conn::new(prepared.opts.clone())).await {
        Ok(conn) => conn.map_err(ConnectError::Driver),
        Err(_) => Err(ConnectError::Timeout(prepared.connect_timeout)),
    }
}

/// Stops the statement running on connection `id`, from a connection of its own: the one running
/// it is busy reading the statement's results. The account may kill its own statements without
/// any privilege.
pub(crate) async fn kill_query(prepared: &Prepared, id: u32) -> Result<(), String> {
    let mut side = connect(prepared)
        .await
        .map_err(|e| super::errors::connect_error(&e, prepared))?;
    let killed = side.query_drop(format!("KILL QUERY {id}")).await;
    let _ = side.disconnect().await;
    killed.map_err(|e| e.to_string())
}

impl Pool<MyConnector> {
    pub(crate) fn mysql(prepared: Prepared, size: usize) -> MyPool {
        Pool::new(
            MyConnector {
                prepared: Arc::new(prepared),
            },
            size,
        )
    }

    pub(crate) fn prepared(&self) -> &Prepared {
        &self.connector().prepared
    }

    /// The same, for a call's job, which outlives any borrow of the pool.
    pub(crate) fn shared_prepared(&self) -> Arc<Prepared> {
        self.connector().prepared.clone()
    }
}
