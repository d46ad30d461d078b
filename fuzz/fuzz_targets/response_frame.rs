//! Fuzz target: the client's response decoder on arbitrary bytes.
//!
//! A response body's layout depends on the request it answers, which the frame does not say, so
//! the body of every complete frame is decoded as each response type. Invariants beyond "does
//! not panic": a decoded body accounts for every byte, and re-encodes to exactly those bytes.
//!
//! It drives `split_response_frame` and `WireMessage::decode_bytes`, the zero-copy decoders the
//! client uses, under the protocol's frame limit.

#![no_main]

use booblik_protocol::{
    Decoded, FetchResponse, MAX_FRAME_BYTES, MetadataResponse, ProduceResponse, WireMessage,
    split_response_frame,
};
use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;

/// Decodes `body` as `M`; on success, checks the bytes used and the re-encoding.
fn check_body<M: WireMessage>(body: &Bytes) {
    if let Ok((message, used)) = M::decode_bytes(body) {
        assert_eq!(used, body.len(), "a decoded body must use every byte");
        assert_eq!(message.encoded_len(), used);
        let mut again = Vec::with_capacity(used);
        message.encode(&mut again);
        assert_eq!(again.as_slice(), &body[..], "re-encoding differs");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    match split_response_frame(&mut buf, MAX_FRAME_BYTES) {
        Err(_) => {}
        Ok(Decoded::Incomplete { need }) => assert!(need >= 1),
        Ok(Decoded::Complete { value, used }) => {
            assert!(used <= data.len());
            assert_eq!(&buf[..], &data[used..], "the split took the wrong bytes");
            check_body::<ProduceResponse>(&value.body);
            check_body::<FetchResponse>(&value.body);
            check_body::<MetadataResponse>(&value.body);
        }
    }
});
