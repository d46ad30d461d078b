//! Fuzz target: the broker's request decoder on arbitrary bytes.
//!
//! Invariants beyond "does not panic":
//! * `Incomplete` asks for at least one byte;
//! * a complete frame never claims more bytes than the input holds;
//! * a decoded request re-encodes to exactly the frame's bytes, and `encoded_len` agrees (the
//!   encoding is canonical: one request, one byte sequence);
//! * a refusal of a whole frame never closes the connection (only the length prefix may);
//! * the frame is split off the buffer exactly (`used` bytes gone, the rest untouched).
//!
//! It drives `split_request_frame`, the zero-copy decoder the broker's sessions use.

#![no_main]

use booblik_protocol::{Decoded, split_request_frame};
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    let decoded = split_request_frame(&mut buf);
    if let Ok(Decoded::Complete { used, .. }) = &decoded {
        assert_eq!(&buf[..], &data[*used..], "the split took the wrong bytes");
    } else {
        assert_eq!(&buf[..], data, "a failed split changed the buffer");
    }
    match decoded {
        Err(err) => assert!(err.closes_connection(), "only framing errors escape: {err}"),
        Ok(Decoded::Incomplete { need }) => assert!(need >= 1),
        Ok(Decoded::Complete { value, used }) => {
            assert!(used <= data.len());
            match value {
                Ok(request) => {
                    let mut again = Vec::with_capacity(used);
                    request.encode(&mut again);
                    assert_eq!(again.as_slice(), &data[..used], "re-encoding differs");
                    assert_eq!(request.encoded_len(), used);
                }
                Err(refusal) => assert!(!refusal.error.closes_connection()),
            }
        }
    }
});
