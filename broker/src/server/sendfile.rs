//! `sendfile(2)` from a segment file to a non-blocking tokio socket.
//!
//! The payload of a FETCH never enters user space: the kernel copies from the page cache to the
//! socket. `sendfile` may send less than asked (a full socket buffer), so we loop, waiting for
//! writability between rounds.
#![allow(unsafe_code)] // sendfile(2) has no safe wrapper in std or tokio.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

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
            let mut offset = libc::off_t::try_from(position)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset overflow"))?;
            // SAFETY: both descriptors belong to objects borrowed for the whole call (the socket
            // by `stream`, the segment by `file`, which the caller keeps pinned), and `offset`
            // is a valid pointer to a local the kernel updates.
            let n = unsafe {
                libc::sendfile(stream.as_raw_fd(), file.as_raw_fd(), &raw mut offset, len)
            };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
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
