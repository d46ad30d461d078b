//! A local NATS JetStream cluster from an installed `nats-server`, for `--spawn-nats`, the tests
//! and the experiment: every node on 127.0.0.1 with its own ports and store directory, started
//! and stopped by its pid (a SIGKILL is `Child::kill`).
//!
//! Debian's package installs the server as `/usr/sbin/nats-server` (`apt-get install
//! nats-server`, 2.9.10 on Debian 12). `NATS_SERVER` names another binary.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::engine::JetStreamEngine;

/// How long a cluster may take to elect its meta leader before `start` gives up. Measured
/// 0.3–0.6 s on a 2-core VM; the limit leaves room for a loaded CI machine.
pub const CLUSTER_READY_LIMIT: Duration = Duration::from_secs(30);
/// Most nodes one cluster may have.
pub const MAX_NODES: usize = 5;
/// Times [`NatsCluster::start`] starts a cluster whose node lost a port race, in all.
pub const MAX_START_ATTEMPTS: u32 = 3;
/// Ports are chosen at random in `LOWEST_CHOSEN_PORT..` the kernel's ephemeral range.
const LOWEST_CHOSEN_PORT: u16 = 20_000;
/// Linux's default first ephemeral port, if `/proc` cannot be read.
const DEFAULT_EPHEMERAL_LOW_PORT: u16 = 32_768;
/// Random ports tried before falling back to the kernel's choice.
const MAX_PORT_TRIES: u32 = 64;

/// One node: its ports, its directory, its process (None while it is down).
#[derive(Debug)]
struct Node {
    name: String,
    client: SocketAddr,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// A running cluster. Dropping it kills every node.
#[derive(Debug)]
pub struct NatsCluster {
    nodes: Vec<Node>,
}

/// The server binary: `NATS_SERVER`, else `nats-server` on `PATH`, else Debian's path.
pub fn server_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file());
    let debian = PathBuf::from("/usr/sbin/nats-server");
    on_path
        .or_else(|| debian.is_file().then_some(debian))
        .context("nats-server is not installed: `apt-get install nats-server` (or set NATS_SERVER)")
}

impl NatsCluster {
    /// Starts `nodes` nodes (1 for a single server, 3 for an R3 cluster) with their data under
    /// `dir`, and waits until JetStream answers on every node. A node that finds one of its
    /// ports taken (another program bound it between our choice and the node's bind) fails the
    /// attempt; the cluster is then started afresh on new ports, at most
    /// [`MAX_START_ATTEMPTS`] times.
    pub fn start(dir: &Path, nodes: usize) -> anyhow::Result<Self> {
        if !(1..=MAX_NODES).contains(&nodes) {
            bail!("a cluster has 1..={MAX_NODES} nodes, not {nodes}");
        }
        let binary = server_binary()?;
        let mut attempt = 1;
        loop {
            match Self::start_once(&binary, dir, nodes) {
                Err(error)
                    if attempt < MAX_START_ATTEMPTS
                        && format!("{error:#}").contains("address already in use") =>
                {
                    tracing::warn!(attempt, %error, "a nats-server lost a port race; starting the cluster again on new ports");
                    // The failed attempt's nodes are gone (dropped); so must their stores be.
                    for index in 0..nodes {
                        let node_dir = dir.join(format!("n{index}"));
                        if node_dir.exists() {
                            std::fs::remove_dir_all(&node_dir)
                                .with_context(|| format!("cannot remove {}", node_dir.display()))?;
                        }
                    }
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn start_once(binary: &Path, dir: &Path, nodes: usize) -> anyhow::Result<Self> {
        // Three ports a node: client, cluster routes, monitoring, chosen below the kernel's
        // ephemeral range (`free_port`) and released just before the servers bind them.
        let mut chosen = std::collections::BTreeSet::new();
        let mut distinct_port = || -> anyhow::Result<u16> {
            loop {
                let port = free_port()?;
                if chosen.insert(port) {
                    return Ok(port);
                }
            }
        };
        let ports: Vec<[u16; 3]> = (0..nodes)
            .map(|_| Ok([distinct_port()?, distinct_port()?, distinct_port()?]))
            .collect::<anyhow::Result<_>>()?;
        let routes: Vec<String> = ports
            .iter()
            .map(|[_, cluster, _]| format!("nats-route://127.0.0.1:{cluster}"))
            .collect();
        let mut cluster = Self { nodes: Vec::new() };
        for (index, [client, route, http]) in ports.iter().enumerate() {
            let name = format!("n{index}");
            let node_dir = dir.join(&name);
            std::fs::create_dir_all(&node_dir)
                .with_context(|| format!("cannot create {}", node_dir.display()))?;
            let cluster_block = if nodes > 1 {
                format!(
                    "cluster {{\n  name: booblik\n  listen: 127.0.0.1:{route}\n  routes: [{}]\n}}\n",
                    routes.join(", ")
                )
            } else {
                String::new()
            };
            let config = format!(
                "server_name: {name}\nlisten: 127.0.0.1:{client}\nhttp: 127.0.0.1:{http}\n\
                 jetstream {{ store_dir: {:?} }}\n{cluster_block}",
                node_dir.join("store").display().to_string()
            );
            let config_path = dir.join(format!("{name}.conf"));
            std::fs::write(&config_path, config)
                .with_context(|| format!("cannot write {}", config_path.display()))?;
            let mut node = Node {
                name,
                client: SocketAddr::from(([127, 0, 0, 1], *client)),
                config: config_path,
                log: dir.join(format!("n{index}.log")),
                child: None,
            };
            node.spawn(binary)?;
            cluster.nodes.push(node);
        }
        for index in 0..nodes {
            cluster.wait_listening(index)?;
        }
        Ok(cluster)
    }

    /// `nats://` URLs of every node, up or down.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|node| format!("nats://{}", node.client))
            .collect()
    }

    /// The index of the node named `name` (`n0`, `n1`, …), as JetStream reports leaders.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|node| node.name == name)
    }

    /// SIGKILLs the node leading the stream `name` (asked of `engine`, a client of this
    /// cluster) and waits for it to exit; returns the node's name and index.
    pub async fn kill_stream_leader(
        &mut self,
        engine: &JetStreamEngine,
        name: &str,
    ) -> anyhow::Result<(String, usize)> {
        let leader = stream_leader(engine, name)
            .await
            .with_context(|| format!("the stream {name} has no leader"))?;
        let index = self.index_of(&leader).with_context(|| {
            format!("the leader {leader} of {name} is not a node of this cluster")
        })?;
        self.kill(index)?;
        Ok((leader, index))
    }

    /// SIGKILLs node `index` and waits for it to exit.
    pub fn kill(&mut self, index: usize) -> anyhow::Result<()> {
        let node = &mut self.nodes[index];
        if let Some(mut child) = node.child.take() {
            child
                .kill()
                .with_context(|| format!("cannot kill {}", node.name))?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts node `index` again (after [`kill`](Self::kill)) over its old store.
    pub fn restart(&mut self, index: usize) -> anyhow::Result<()> {
        let binary = server_binary()?;
        self.nodes[index].spawn(&binary)?;
        self.wait_listening(index)
    }

    fn wait_listening(&mut self, index: usize) -> anyhow::Result<()> {
        let deadline = Instant::now() + CLUSTER_READY_LIMIT;
        let node = &mut self.nodes[index];
        loop {
            if TcpStream::connect_timeout(&node.client, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if let Some(child) = &mut node.child
                && let Some(status) = child.try_wait()?
            {
                let log = std::fs::read_to_string(&node.log).unwrap_or_default();
                bail!("nats-server {} exited with {status}:\n{log}", node.name);
            }
            if Instant::now() > deadline {
                bail!(
                    "nats-server {} did not listen on {} within {CLUSTER_READY_LIMIT:?}",
                    node.name,
                    node.client
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The node leading the stream `name` now, as JetStream names it (see
/// [`NatsCluster::index_of`]): `None` while the stream does not exist, cannot be asked, or has
/// no leader.
pub async fn stream_leader(engine: &JetStreamEngine, name: &str) -> Option<String> {
    let stream = engine.context().get_stream(name).await.ok()?;
    stream.get_info().await.ok()?.cluster?.leader
}

impl Node {
    fn spawn(&mut self, binary: &Path) -> anyhow::Result<()> {
        let log = std::fs::File::create(&self.log)
            .with_context(|| format!("cannot create {}", self.log.display()))?;
        // A process group of its own: Ctrl-C in a terminal signals the whole foreground group,
        // and the demo must keep its cluster up until its readers caught up and its checks ran.
        let child = Command::new(binary)
            .process_group(0)
            .arg("-c")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        self.child = Some(child);
        Ok(())
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A port no one listens on now, below the kernel's ephemeral range.
///
/// Why not port 0's choice: that comes from the ephemeral range, which `connect` draws its
/// source ports from. The nodes connect to each other's route ports as they start, some before
/// the peer listens, and a connection to 127.0.0.1:P from source port P connects to itself (TCP's
/// simultaneous open) and holds P: the likely cause of a node that failed with "address already
/// in use" on its route port in a local CI run (2026-12-06; not reproduced). A port below the
/// range is never a source port.
fn free_port() -> anyhow::Result<u16> {
    let ephemeral_low = ephemeral_low_port();
    let low = LOWEST_CHOSEN_PORT.min(ephemeral_low.saturating_sub(1));
    if low < ephemeral_low {
        for _ in 0..MAX_PORT_TRIES {
            let port = rand::random_range(low..ephemeral_low);
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    // A machine whose low ports are all taken: the kernel's choice, with its rare race.
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The first port of the kernel's ephemeral range (Linux's default if `/proc` says nothing).
fn ephemeral_low_port() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_LOW_PORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chosen_port_is_free_and_below_the_ephemeral_range() {
        let ephemeral_low = ephemeral_low_port();
        for _ in 0..20 {
            let port = free_port().unwrap();
            assert!(
                port < ephemeral_low,
                "{port} is in the ephemeral range (from {ephemeral_low}): a connect could take it"
            );
            assert!(
                TcpListener::bind(("127.0.0.1", port)).is_ok(),
                "{port} was handed out taken"
            );
        }
    }
}
