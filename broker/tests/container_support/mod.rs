//! Shared by the `container_*` tests: run the shipped booblik image with testcontainers, reach
//! it from the host, wait until it answers, and kill it for real.
//!
//! These tests exercise what users run, not the library: the static binary in the `FROM
//! scratch` image, its unprivileged user and `/data` directory, and the `health` subcommand as
//! the container's healthcheck. They need a Docker engine and the image, built locally by
//! `samples/compose/build-image.sh` (nothing is ever pulled: the image must already exist), so
//! they are `#[ignore]`d in a plain `cargo test`; `.ci/extra` builds the image and runs them
//! with `-- --ignored`.

#![allow(dead_code)] // each test file uses a different part of this module

use std::future::Future;
use std::time::Duration;

use booblik_client::{Client, ClientError, ConnectionConfig};
use testcontainers::bollard::Docker;
use testcontainers::bollard::query_parameters::{KillContainerOptionsBuilder, RemoveVolumeOptions};
use testcontainers::core::{ContainerPort, IntoContainerPort, Mount, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ContainerRequest, GenericImage, Healthcheck, ImageExt};

/// The image tests run unless `BOOBLIK_IMAGE` names another (same variable as the scripts).
pub const DEFAULT_IMAGE: &str = "booblik:dev";
/// The broker's port inside the container.
pub const BROKER_PORT: u16 = 9092;
/// Where the image keeps the broker's data (owned by its unprivileged user).
pub const DATA_DIR: &str = "/data";
/// Longest wait for a started (or restarted) container to answer METADATA.
pub const READY_WITHIN_MS: u64 = 60_000;
/// Longest wait for any one step of a test (a delivery, a batch).
pub const STEP_WITHIN_MS: u64 = 30_000;
/// Pause between readiness probes.
const PROBE_EVERY_MS: u64 = 200;

/// `(name, tag)` of the image under test.
pub fn image_reference() -> (String, String) {
    let reference = std::env::var("BOOBLIK_IMAGE").unwrap_or_else(|_| DEFAULT_IMAGE.to_owned());
    match reference.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name.to_owned(), tag.to_owned()),
        _ => (reference, "latest".to_owned()),
    }
}

/// The broker from the image with `topics`, its data on the named volume `data_volume` when
/// given (kept across container restarts), its port published on 127.0.0.1 only. Started when
/// the container's own healthcheck (`booblik-broker health`, no shell needed) passes.
pub fn broker_request(topics: &str, data_volume: Option<&str>) -> ContainerRequest<GenericImage> {
    let (name, tag) = image_reference();
    let port: ContainerPort = BROKER_PORT.tcp();
    let request = GenericImage::new(name, tag)
        .with_exposed_port(port)
        .with_wait_for(WaitFor::healthcheck())
        .with_cmd([
            "/booblik-broker".to_owned(),
            format!("--bind=0.0.0.0:{BROKER_PORT}"),
            format!("--data-dir={DATA_DIR}"),
            format!("--topics={topics}"),
        ])
        .with_health_check(
            Healthcheck::cmd([
                "/booblik-broker",
                "health",
                "--broker",
                &format!("127.0.0.1:{BROKER_PORT}"),
            ])
            .with_interval(Duration::from_millis(500))
            .with_timeout(Duration::from_secs(3))
            .with_retries(60),
        )
        .with_startup_timeout(Duration::from_millis(READY_WITHIN_MS))
        .with_host_config_modifier(move |host_config| {
            // Publish on loopback only, on a port the engine picks.
            host_config.publish_all_ports = Some(false);
            host_config.port_bindings = Some(
                [(
                    format!("{BROKER_PORT}/tcp"),
                    Some(vec![testcontainers::bollard::models::PortBinding {
                        host_ip: Some("127.0.0.1".to_owned()),
                        host_port: Some(String::new()),
                    }]),
                )]
                .into_iter()
                .collect(),
            );
        });
    match data_volume {
        Some(volume) => request.with_mount(Mount::volume_mount(volume, DATA_DIR)),
        None => request,
    }
}

/// Starts `request`, failing the test with the reason when the image is missing or unhealthy.
pub async fn start(request: ContainerRequest<GenericImage>) -> ContainerAsync<GenericImage> {
    request.start().await.unwrap_or_else(|error| {
        panic!(
            "cannot start the booblik image ({error}); build it first with \
             samples/compose/build-image.sh"
        )
    })
}

/// `127.0.0.1:<host port>` of the container's broker port (it changes when the container
/// restarts, so ask again after a restart).
pub async fn broker_addr(container: &ContainerAsync<GenericImage>) -> String {
    let port = container
        .get_host_port_ipv4(BROKER_PORT.tcp())
        .await
        .expect("the broker port is published");
    format!("127.0.0.1:{port}")
}

/// A client for the container's broker, once it answers METADATA (after a restart the port is
/// published before the broker has recovered its log).
pub async fn connect_when_ready(container: &ContainerAsync<GenericImage>) -> Client {
    within(
        READY_WITHIN_MS,
        "the broker in the container to answer",
        async {
            loop {
                let addr = broker_addr(container).await;
                let attempt: Result<Client, ClientError> = async {
                    let client = Client::connect(addr, ConnectionConfig::default()).await?;
                    client.metadata(&[]).await?;
                    Ok(client)
                }
                .await;
                match attempt {
                    Ok(client) => return client,
                    Err(_) => tokio::time::sleep(Duration::from_millis(PROBE_EVERY_MS)).await,
                }
            }
        },
    )
    .await
}

/// SIGKILL to the container's main process: no shutdown path runs, exactly like a crash or an
/// OOM kill. Returns when the engine has delivered it.
pub async fn kill(container: &ContainerAsync<GenericImage>) {
    let docker = Docker::connect_with_local_defaults().expect("a Docker engine");
    docker
        .kill_container(
            container.id(),
            Some(KillContainerOptionsBuilder::new().signal("SIGKILL").build()),
        )
        .await
        .expect("the engine kills the container");
    within(STEP_WITHIN_MS, "the killed container to stop", async {
        while container.is_running().await.expect("container state") {
            tokio::time::sleep(Duration::from_millis(PROBE_EVERY_MS)).await;
        }
    })
    .await;
}

/// A named volume for one test, removed when dropped (declare it before the container, so the
/// container is removed first).
#[derive(Debug)]
pub struct TestVolume {
    pub name: String,
}

impl TestVolume {
    /// A name no other run uses (the engine creates the volume on first mount).
    pub fn unique(purpose: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos();
        Self {
            name: format!("booblik-test-{purpose}-{}-{nanos}", std::process::id()),
        }
    }
}

impl Drop for TestVolume {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop cannot await, and may run inside the test's runtime: use a runtime of its own.
        let removal = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                let docker = Docker::connect_with_local_defaults()?;
                docker
                    .remove_volume(&name, Some(RemoveVolumeOptions { force: true }))
                    .await
            })
        });
        if let Ok(Err(error)) = removal.join() {
            eprintln!("could not remove test volume {}: {error}", self.name);
        }
    }
}

/// Awaits `future`, failing the test with `what` after `limit_ms`.
pub async fn within<T>(limit_ms: u64, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_millis(limit_ms), future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {limit_ms} ms waiting for {what}"))
}
