// Group commit with K concurrent fdatasync callers and N clients, each with one 1 280-byte
// append in flight and a think time standing in for the answer's and next request's trip.
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct State { written: u64, durable: u64, claimed: u64, batches: u64, fsyncs: u64, lat_us: Vec<u64> }

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (k, n, think_us) = (args[0], args[1], args[2]);
    let path = format!("/tmp/gc-probe-{}", std::process::id());
    let file = Arc::new(OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap());
    let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
    let stop = Instant::now() + Duration::from_secs(3);
    let mut threads = Vec::new();
    for _ in 0..n {
        let (file, shared) = (file.clone(), shared.clone());
        threads.push(std::thread::spawn(move || {
            let buf = vec![7u8; 1280];
            while Instant::now() < stop {
                let start = Instant::now();
                let (lock, cv) = &*shared;
                let mut s = lock.lock().unwrap();
                let at = s.written;
                file.write_at(&buf, at).unwrap();
                s.written += 1280;
                let end = s.written;
                cv.notify_all();
                while s.durable < end && Instant::now() < stop {
                    s = cv.wait_timeout(s, Duration::from_millis(10)).unwrap().0;
                }
                s.batches += 1;
                s.lat_us.push(start.elapsed().as_micros() as u64);
                drop(s);
                let t = Instant::now();
                while t.elapsed() < Duration::from_micros(think_us) { std::hint::spin_loop(); }
            }
        }));
    }
    for _ in 0..k {
        let (file, shared) = (file.clone(), shared.clone());
        threads.push(std::thread::spawn(move || {
            let (lock, cv) = &*shared;
            while Instant::now() < stop {
                let upto = {
                    let mut s = lock.lock().unwrap();
                    while s.written <= s.claimed && Instant::now() < stop {
                        s = cv.wait_timeout(s, Duration::from_millis(10)).unwrap().0;
                    }
                    s.claimed = s.written;
                    s.written
                };
                file.sync_data().unwrap();
                let mut s = lock.lock().unwrap();
                s.fsyncs += 1;
                if upto > s.durable { s.durable = upto; }
                cv.notify_all();
            }
        }));
    }
    for t in threads { t.join().unwrap(); }
    let (lock, _) = &*shared;
    let mut s = lock.lock().unwrap();
    s.lat_us.sort_unstable();
    let p = |q: f64| s.lat_us[((s.lat_us.len() - 1) as f64 * q) as usize];
    println!("K={k} N={n} think={think_us}us batches/s {:.0} fsyncs/s {:.0} batches/fsync {:.1} latency p50 {} p99 {} us",
        s.batches as f64 / 3.0, s.fsyncs as f64 / 3.0, s.batches as f64 / s.fsyncs.max(1) as f64, p(0.5), p(0.99));
    std::fs::remove_file(&path).unwrap();
}
