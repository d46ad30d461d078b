//! [`Redial`]: one connection to a broker, opened again when it broke.
//!
//! A [`Connection`] never reopens itself (a request pending on a broken connection may or may
//! not have been applied, so only its owner can decide what to do next). Owners that simply
//! want "a live connection to that broker" — the [`Client`](crate::Client)'s shared connection,
//! each [`Consumer`](crate::Consumer), the producer's task — compose this type instead of
//! writing the redial themselves.
//!
//! * [`Redial::connection`] returns the current connection when it is open, and otherwise
//!   dials a new one.
//! * **No lock is held across a connect.** The state is a `std::sync::Mutex` held only to look
//!   at or replace the current connection. A connect can take up to `connect_timeout_ms`
//!   (5 s by default) when the broker is unreachable; a caller that finds no live connection
//!   dials on its own, so it is never queued behind another caller's slow attempt, and one that
//!   finds the connection another caller just installed uses it. When two dials succeed at
//!   once, the first to finish is installed and the other connection is dropped (closed): all
//!   callers end up sharing one connection.
//! * Nothing pending on a broken connection is retried here: whether to repeat a request is
//!   the caller's decision (a FETCH is safe to repeat, a PRODUCE may have been applied).
//! * [`Redial::connections_opened`] counts the connections installed, the first included, so
//!   a reader can tell when it may be talking to a restarted broker.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;

use crate::connection::{Connection, ConnectionConfig};
use crate::error::ClientError;

/// How a [`Redial`] opens a connection. [`Redial::new`] uses [`Connection::connect`]; tests and
/// callers with their own transport needs pass another with [`Redial::with_dialer`].
pub type Dialer =
    Arc<dyn Fn() -> BoxFuture<'static, Result<Connection, ClientError>> + Send + Sync>;

/// A connection to one broker address, redialed on demand. Cheap to clone; clones share the
/// connection.
#[derive(Clone)]
pub struct Redial {
    inner: Arc<Inner>,
}

struct Inner {
    addr: String,
    dial: Dialer,
    current: Mutex<Option<Connection>>,
    opened: AtomicU64,
}

impl fmt::Debug for Redial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redial")
            .field("addr", &self.inner.addr)
            .field("current", &*self.current_slot())
            .field("connections_opened", &self.connections_opened())
            .finish()
    }
}

impl Redial {
    /// Redials `addr` with [`Connection::connect`] and `config`. Opens nothing yet: the first
    /// [`Redial::connection`] call dials.
    pub fn new(addr: impl Into<String>, config: ConnectionConfig) -> Self {
        let addr = addr.into();
        let target = addr.clone();
        let dial: Dialer = Arc::new(move || {
            let addr = target.clone();
            let config = config.clone();
            Box::pin(async move { Connection::connect(&addr, config).await })
        });
        Self::with_dialer(addr, dial)
    }

    /// Redials with `dial`; `addr` is only for messages.
    pub fn with_dialer(addr: impl Into<String>, dial: Dialer) -> Self {
        Self {
            inner: Arc::new(Inner {
                addr: addr.into(),
                dial,
                current: Mutex::new(None),
                opened: AtomicU64::new(0),
            }),
        }
    }

    /// Like [`Redial::new`], but dials at once, so an unreachable broker is reported now.
    pub async fn connect(
        addr: impl Into<String>,
        config: ConnectionConfig,
    ) -> Result<Self, ClientError> {
        let redial = Self::new(addr, config);
        redial.connection().await?;
        Ok(redial)
    }

    /// The address this redials.
    pub fn addr(&self) -> &str {
        &self.inner.addr
    }

    /// Connections installed so far, the first one included.
    pub fn connections_opened(&self) -> u64 {
        self.inner.opened.load(Ordering::Relaxed)
    }

    /// The current connection if it is open; never dials.
    pub fn current(&self) -> Option<Connection> {
        self.current_slot()
            .as_ref()
            .filter(|connection| !connection.is_closed())
            .cloned()
    }

    /// The current connection, or a new one when there is none or it has closed. The dial
    /// happens without any lock held (see the module docs).
    pub async fn connection(&self) -> Result<Connection, ClientError> {
        let broken = {
            let current = self.current_slot();
            match current.as_ref() {
                Some(connection) if !connection.is_closed() => return Ok(connection.clone()),
                Some(connection) => connection.close_reason(),
                None => None,
            }
        };
        if let Some(reason) = broken {
            tracing::info!(addr = %self.inner.addr, %reason, "redialing a closed connection");
        }
        let fresh = (self.inner.dial)().await?;
        let mut current = self.current_slot();
        if let Some(installed) = current.as_ref()
            && !installed.is_closed()
        {
            // Another caller's dial finished first: share its connection, close ours.
            let installed = installed.clone();
            drop(current);
            fresh.close();
            return Ok(installed);
        }
        *current = Some(fresh.clone());
        self.inner.opened.fetch_add(1, Ordering::Relaxed);
        Ok(fresh)
    }

    /// Closes the current connection (pending requests fail); the next
    /// [`Redial::connection`] dials again.
    pub fn close(&self) {
        if let Some(connection) = self.current_slot().as_ref() {
            connection.close();
        }
    }

    fn current_slot(&self) -> MutexGuard<'_, Option<Connection>> {
        // Held only to read or swap an `Option`; nothing can panic under it.
        self.inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
