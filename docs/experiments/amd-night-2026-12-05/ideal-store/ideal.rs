//! The ideal broker: N loopback TCP senders of 1 MiB chunks; each receiver stores what it reads
//! into a new file's page cache (`pwrite` or straight into a mapping) or discards it (`tcp`).
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::time::Instant;

fn cpu_s() -> f64 {
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(r.ru_utime) + t(r.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args[1].clone();
    let conns: usize = args[2].parse().unwrap();
    let mib: u64 = args[3].parse().unwrap();
    let per_conn = (mib << 20) / conns as u64;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let dir = std::path::PathBuf::from("/work/ideal-data");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let c0 = cpu_s();
    let started = Instant::now();
    let mut receivers = Vec::new();
    let mut senders = Vec::new();
    for i in 0..conns {
        senders.push(std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_nodelay(true).unwrap();
            let chunk = vec![1u8; 1 << 20];
            let mut sent = 0u64;
            while sent < per_conn {
                s.write_all(&chunk).unwrap();
                sent += chunk.len() as u64;
            }
        }));
        let (mut s, _) = listener.accept().unwrap();
        let mode = mode.clone();
        let path = dir.join(format!("seg-{i}"));
        receivers.push(std::thread::spawn(move || {
            let file = std::fs::OpenOptions::new().read(true).write(true).create(true).open(&path).unwrap();
            let mut got = 0u64;
            match mode.as_str() {
                "tcp" | "pwrite" | "pwrite-falloc" => {
                    if mode == "pwrite-falloc" {
                        unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&file), 0, 0, per_conn as i64) };
                    }
                    let mut buf = vec![0u8; 1 << 20];
                    loop {
                        let n = s.read(&mut buf).unwrap();
                        if n == 0 { break; }
                        if mode != "tcp" { file.write_all_at(&buf[..n], got).unwrap(); }
                        got += n as u64;
                    }
                }
                "mmap-copy" | "mmap-direct" => {
                    unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&file), 0, 0, per_conn as i64) };
                    let mut map = unsafe { memmap2::MmapMut::map_mut(&file).unwrap() };
                    let mut buf = vec![0u8; 1 << 20];
                    loop {
                        let n = if mode == "mmap-direct" {
                            let end = (got as usize + (1 << 20)).min(map.len());
                            if end == got as usize { 0 } else { s.read(&mut map[got as usize..end]).unwrap() }
                        } else {
                            let n = s.read(&mut buf).unwrap();
                            map[got as usize..got as usize + n].copy_from_slice(&buf[..n]);
                            n
                        };
                        if n == 0 { break; }
                        got += n as u64;
                    }
                }
                _ => panic!("mode"),
            }
            got
        }));
    }
    for s in senders { s.join().unwrap(); }
    let got: u64 = receivers.into_iter().map(|r| r.join().unwrap()).sum();
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_s() - c0;
    println!("{mode:14} conns {conns}: {:6.0} MB/s, {:.2} cores, {:.3} CPU s/GB", got as f64 / secs / 1e6, cpu / secs, cpu / (got as f64 / 1e9));
    let _ = std::fs::remove_dir_all(&dir);
}
