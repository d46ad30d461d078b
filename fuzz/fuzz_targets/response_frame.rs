//! Fuzz target: the client's response decoder on arbitrary bytes.
//!
//! A response body's layout depends on the request it answers, which the frame does not say, so
//! the body of every complete frame is decoded as each response type. Invariants beyond "does
//! not panic": a decoded body accounts for every byte, and re-encodes to exactly those bytes.

#![no_main]

use booblik_protocol::{
    Decoded, FetchResponse, MetadataResponse, ProduceResponse, WireMessage, decode_response_frame,
};
use libfuzzer_sys::fuzz_target;

/// Decodes `body` as `M`; on success, checks the bytes used and the re-encoding.
fn check_body<M: WireMessage>(body: &[u8]) {
    if let Ok((message, used)) = M::decode(body) {
        assert_eq!(used, body.len(), "a decoded body must use every byte");
        assert_eq!(message.encoded_len(), used);
        let mut again = Vec::with_capacity(used);
        message.encode(&mut again);
        assert_eq!(again.as_slice(), body, "re-encoding differs");
    }
}

fuzz_target!(|data: &[u8]| {
    match decode_response_frame(data) {
        Err(_) => {}
        Ok(Decoded::Incomplete { need }) => assert!(need >= 1),
        Ok(Decoded::Complete { value, used }) => {
            assert!(used <= data.len());
            check_body::<ProduceResponse>(value.body);
            check_body::<FetchResponse>(value.body);
            check_body::<MetadataResponse>(value.body);
        }
    }
});
