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
    /// `dir`, and waits until JetStream answers on every node.
    pub fn start(dir: &Path, nodes: usize) -> anyhow::Result<Self> {
        if !(1..=MAX_NODES).contains(&nodes) {
            bail!("a cluster has 1..={MAX_NODES} nodes, not {nodes}");
        }
        let binary = server_binary()?;
        // Three ports a node: client, cluster routes, monitoring. Asked from the kernel and
        // released just before the servers bind them: a race with other programs on this
        // machine is possible but rare, and a failed bind fails `start` loudly.
        let ports: Vec<[u16; 3]> = (0..nodes)
            .map(|_| Ok([free_port()?, free_port()?, free_port()?]))
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
            node.spawn(&binary)?;
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

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
