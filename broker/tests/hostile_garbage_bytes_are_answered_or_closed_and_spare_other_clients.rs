//! A client that sends random bytes gets well-formed error answers or a closed connection —
//! never a hang, a garbled frame or a panic — and every other client is served meanwhile.
//!
//! The garbage comes in three shapes, because pure noise almost always dies at the first check
//! (a length prefix out of `1..=MAX_FRAME_BYTES`) and never reaches the decoders behind it:
//!
//! * pure noise;
//! * a plausible length prefix around noise, so the header and body decoders see it;
//! * a real request with some of its bytes flipped, so decoding gets deep before failing.
//!
//! After sending, each attacker half-closes its socket: the broker must answer whatever whole
//! frames it received and then close, whatever the bytes were.

mod support;

mod hostile_support;

use std::time::Duration;

use booblik_protocol::{AckPolicy, MetadataRequest, Request, RequestBody};
use hostile_support::{
    Bystander, Ending, assert_no_panics, assert_serves, drain_until_close, watch_panics,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::{TestBroker, fetch_request, produce_request};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Garbage inputs tried (each on its own connection).
const INPUTS: u64 = 3_000;
/// Connections attacking at the same time.
const CONCURRENT_ATTACKERS: usize = 24;
/// Longest garbage input.
const MAX_GARBAGE_BYTES: usize = 2048;
/// Longer than any answer or close may take: no timeout of the test config is near it.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// A valid request of a random kind, to be mangled.
fn valid_request(rng: &mut StdRng) -> Vec<u8> {
    let id = rng.random::<i32>();
    // No long poll: a mangled wait would be a legitimate wait of up to 60 s (long polls have
    // their own test).
    let request = match rng.random_range(0..3) {
        0 => produce_request(id, "events", 1, AckPolicy::Written, &[b"abc", b"de"]),
        1 => fetch_request(id, "solo", 0, 0, 4096, None),
        _ => Request {
            correlation_id: id,
            body: RequestBody::Metadata(MetadataRequest::default()),
        },
    };
    let mut out = Vec::new();
    request.encode(&mut out);
    out
}

/// One garbage input; `seed` picks its shape and bytes.
fn garbage(seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    let len = rng.random_range(1..=MAX_GARBAGE_BYTES);
    let mut noise = vec![0u8; len];
    rng.fill(noise.as_mut_slice());
    match seed % 3 {
        0 => noise,
        1 => {
            // A length that fits what follows, or slightly more (a frame cut by the close).
            let body = rng.random_range(0..=noise.len());
            let declared = body + rng.random_range(0..=2);
            let mut out = (declared as i32).to_be_bytes().to_vec();
            out.extend_from_slice(&noise[..body]);
            out
        }
        _ => {
            let mut out = valid_request(&mut rng);
            for _ in 0..rng.random_range(1..=4) {
                let at = rng.random_range(0..out.len());
                out[at] ^= rng.random_range(1..=u8::MAX);
            }
            out
        }
    }
}

/// Sends one garbage input, half-closes, and waits for the broker to close. Returns how many
/// response frames came back (each checked to be well formed).
async fn attack(addr: std::net::SocketAddr, seed: u64) -> usize {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let bytes = garbage(seed);
    // The broker may close before reading everything (a bad length): a failed write is fine.
    if stream.write_all(&bytes).await.is_ok() {
        let _ = stream.shutdown().await;
    }
    let (answers, ending) = drain_until_close(&mut stream, CLOSE_WAIT).await;
    assert_eq!(
        ending,
        Ending::Closed,
        "input {seed} ({} bytes, starting {:02x?}) left the connection open",
        bytes.len(),
        &bytes[..bytes.len().min(16)]
    );
    answers.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_garbage_is_answered_or_closed_while_other_clients_are_served() {
    watch_panics();
    let broker = TestBroker::start_with(|config| {
        // Far above CLOSE_WAIT's reach would hide a hang; far below it proves nothing. The
        // half-close is what must end every attack, not this timer.
        config.frame_read_timeout_ms = 60_000;
        config.idle_timeout_ms = 60_000;
    })
    .await;
    let addr = broker.broker.local_addr();
    let bystander = Bystander::start(addr).await;

    // Per shape (seed % 3): inputs that got at least one answer.
    let mut answered_inputs = [0u64; 3];
    let mut answers = 0usize;
    let seeds: Vec<u64> = (0..INPUTS).collect();
    for wave in seeds.chunks(CONCURRENT_ATTACKERS) {
        let attackers: Vec<_> = wave
            .iter()
            .map(|&seed| tokio::spawn(attack(addr, seed)))
            .collect();
        for (attacker, seed) in attackers.into_iter().zip(wave) {
            let n = attacker.await.expect("the attack's checks held");
            answers += n;
            answered_inputs[(seed % 3) as usize] += u64::from(n > 0);
        }
    }

    let report = bystander.finish().await;
    eprintln!(
        "{INPUTS} garbage inputs, every connection closed; answered (noise, length-prefixed \
         noise, mangled requests): {answered_inputs:?}, {answers} frames in all; bystander: {} \
         round trips, slowest {:?}",
        report.round_trips, report.slowest
    );
    // Length-prefixed noise and mangled requests reach the decoders behind the length check,
    // so some of each must have been answered.
    assert!(
        answered_inputs[1] > 0 && answered_inputs[2] > 0,
        "garbage never got past the length check: {answered_inputs:?}"
    );
    assert_serves(&broker).await;
    assert_no_panics();
    broker.broker.shutdown().await.unwrap();
}
