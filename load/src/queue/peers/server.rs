//! Starting and stopping a peer's server: the installed `redis-server` or PostgreSQL binaries,
//! on 127.0.0.1 on a free port, with a temporary data directory, stopped by its pid.
//!
//! PostgreSQL refuses to run as root; when the harness is root, `initdb` and `postgres` run as
//! the `nobody` user (the data directory is handed to it first).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use rustix::process::{Pid, Signal, kill_process};
use tempfile::TempDir;

/// Longest wait for a started server to accept connections.
pub const SERVER_START_LIMIT: Duration = Duration::from_secs(30);
/// Longest wait for a server to exit after its stop signal, before it is killed.
pub const SERVER_STOP_LIMIT: Duration = Duration::from_secs(10);
/// Longest wait for `initdb`.
const INITDB_LIMIT: Duration = Duration::from_mins(2);
/// The user PostgreSQL runs as when the harness is root.
const UNPRIVILEGED_USER: &str = "nobody";
/// Where Debian installs PostgreSQL's server binaries (`/usr/lib/postgresql/<major>/bin`).
const DEBIAN_POSTGRES_LIB: &str = "/usr/lib/postgresql";

/// A server process the harness started. Dropping it stops the server.
#[derive(Debug)]
pub struct ServerProcess {
    name: &'static str,
    child: Option<Child>,
    stop_signal: Signal,
    dir: TempDir,
}

impl ServerProcess {
    /// The server's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The server's log, for errors.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Whether the process has exited (then: why, from its log).
    pub fn exited(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(format!(
                "{} exited ({status}); its log ends:\n{}",
                self.name,
                self.log_tail()
            )),
            _ => None,
        }
    }

    /// Stops the server: its stop signal by pid, then SIGKILL if it has not exited in
    /// [`SERVER_STOP_LIMIT`].
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = kill_process(Pid::from_child(&child), self.stop_signal);
        let deadline = Instant::now() + SERVER_STOP_LIMIT;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::warn!(server = self.name, "did not stop in time; killing it");
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A free TCP port on 127.0.0.1 (bound and released; the server binds it right after).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

fn log_file(dir: &Path) -> anyhow::Result<(Stdio, Stdio)> {
    let log = File::create(dir.join("server.log")).context("creating the server log")?;
    Ok((Stdio::from(log.try_clone()?), Stdio::from(log)))
}

/// Starts `redis-server` on `port` with a fresh directory; `aof_fsync_always` turns on the
/// append-only file with an fsync before every reply to a write, else no persistence at all.
pub fn start_redis(
    data_parent: &Path,
    port: u16,
    aof_fsync_always: bool,
) -> anyhow::Result<ServerProcess> {
    let binary = find_binary("redis-server", &[])?;
    let dir = tempfile::Builder::new()
        .prefix("booblik-load-redis-")
        .tempdir_in(data_parent)
        .context("a directory for redis-server")?;
    let (out, err) = log_file(dir.path())?;
    let child = Command::new(&binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(dir.path())
        .args(["--save", ""])
        .args(["--appendonly", if aof_fsync_always { "yes" } else { "no" }])
        .args(["--appendfsync", "always", "--daemonize", "no"])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    Ok(ServerProcess {
        name: "redis-server",
        child: Some(child),
        stop_signal: Signal::TERM,
        dir,
    })
}

/// Runs `initdb` into a fresh directory and starts `postgres` on `port` with
/// `synchronous_commit` on or off.
pub fn start_postgres(
    data_parent: &Path,
    port: u16,
    synchronous_commit: bool,
) -> anyhow::Result<ServerProcess> {
    let initdb = find_binary("initdb", &postgres_lib_dirs())?;
    let postgres = find_binary("postgres", &postgres_lib_dirs())?;
    let dir = tempfile::Builder::new()
        .prefix("booblik-load-postgres-")
        .tempdir_in(data_parent)
        .context("a directory for postgres")?;
    let user = if rustix::process::geteuid().is_root() {
        let (uid, gid) = user_ids(UNPRIVILEGED_USER)?;
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
            .with_context(|| format!("handing {} to {UNPRIVILEGED_USER}", dir.path().display()))?;
        Some((uid, gid))
    } else {
        None
    };
    let data = dir.path().join("data");
    let as_user = |command: &mut Command| {
        command.current_dir(dir.path());
        if let Some((uid, gid)) = user {
            std::os::unix::process::CommandExt::uid(command, uid);
            std::os::unix::process::CommandExt::gid(command, gid);
        }
    };
    let (out, err) = log_file(dir.path())?;
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(dir.path().join("server.log"), Some(uid), Some(gid))?;
    }
    let mut command = Command::new(&initdb);
    command
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    as_user(&mut command);
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", initdb.display()))?;
    let deadline = Instant::now() + INITDB_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            bail!("initdb did not finish in {INITDB_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
        bail!("initdb failed ({status}):\n{log}");
    }
    let (out, err) = log_file(dir.path())?;
    let mut command = Command::new(&postgres);
    command
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string()])
        .arg("-k")
        .arg(dir.path())
        .args(["-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!(
            "synchronous_commit={}",
            if synchronous_commit { "on" } else { "off" }
        ))
        .args(["-c", "fsync=on"])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    as_user(&mut command);
    let child = command
        .spawn()
        .with_context(|| format!("starting {}", postgres.display()))?;
    Ok(ServerProcess {
        name: "postgres",
        child: Some(child),
        // Fast shutdown: roll back open transactions, disconnect clients, checkpoint, exit.
        stop_signal: Signal::INT,
        dir,
    })
}

fn postgres_lib_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(DEBIAN_POSTGRES_LIB)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    // The newest major version first.
    dirs.sort();
    dirs.reverse();
    dirs
}

/// `name` on `PATH`, else in one of `extra` directories.
fn find_binary(name: &str, extra: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra.iter().cloned())
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            anyhow!(
                "{name} not found on PATH or in {extra:?}: install it (Debian: apt-get install \
                 redis-server postgresql), or name a running server with --redis-url / \
                 --postgres-url"
            )
        })
}

/// The uid and gid of `user`, from `/etc/passwd`.
fn user_ids(user: &str) -> anyhow::Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&user) && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
        .ok_or_else(|| {
            anyhow!("no user {user} in /etc/passwd to run postgres as (it refuses root)")
        })
}
