//! `sendfile(2)` from a segment file to a non-blocking tokio socket.
//!
//! The payload of a FETCH never enters user space: the kernel copies from the page cache to the
//! socket. `sendfile` may send less than asked (a full socket buffer), so we loop, waiting for
//! writability between rounds. `rustix` wraps the system call safely: both descriptors are
//! borrowed for the call, and the file offset is a `&mut u64` the kernel advances.

use std::fs::File;
use std::io;

use tokio::io::Interest;
use tokio::net::TcpStream;

/// Sends exactly `len` bytes of `file` starting at `position` to `stream`.
pub(crate) async fn send_file(
    stream: &TcpStream,
    file: &File,
    mut position: u64,
    mut len: usize,
) -> io::Result<()> {
    while len > 0 {
        stream.writable().await?;
        let sent = stream.try_io(Interest::WRITABLE, || {
            let mut offset = position;
            rustix::fs::sendfile(stream, file, Some(&mut offset), len).map_err(io::Error::from)
        });
        match sent {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "segment file ended before the promised payload was sent",
                ));
            }
            Ok(n) => {
                position += n as u64;
                len -= n;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
