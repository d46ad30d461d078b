//! Big-endian primitives. Reads track their position so errors can say where they happened.

use bytes::BufMut;

use crate::error::WireError;
use crate::topic::TopicName;

/// A cursor over a complete message body. Every read checks the remaining length first.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// What is being decoded, for error messages ("PRODUCE request", "FETCH response", ...).
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'static str) -> Self {
        Self { buf, pos: 0, what }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn take(&mut self, need: usize) -> Result<&'a [u8], WireError> {
        let have = self.remaining();
        if have < need {
            return Err(WireError::UnexpectedEnd {
                what: self.what,
                offset: self.pos,
                need,
                have,
            });
        }
        let bytes = &self.buf[self.pos..self.pos + need];
        self.pos += need;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn i8(&mut self) -> Result<i8, WireError> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    pub(crate) fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, WireError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// `u16 len` + UTF-8, validated as a topic name.
    pub(crate) fn topic(&mut self) -> Result<TopicName, WireError> {
        let len = self.u16()? as usize;
        let bytes = self.take(len)?;
        let name = std::str::from_utf8(bytes).map_err(|_| WireError::TopicNameNotUtf8)?;
        TopicName::new(name).map_err(WireError::InvalidTopicName)
    }

    /// A count that will size an allocation: must be non-negative and every element needs at
    /// least `min_element_bytes`, so a count larger than the remaining bytes allow is refused
    /// before anything is allocated.
    pub(crate) fn count(
        &mut self,
        field: &'static str,
        min_element_bytes: usize,
    ) -> Result<usize, WireError> {
        let count = self.i32()?;
        if count < 0 {
            return Err(WireError::InvalidField {
                field,
                value: i64::from(count),
                reason: "must not be negative",
            });
        }
        let count = count as usize;
        let need = count.saturating_mul(min_element_bytes);
        if need > self.remaining() {
            return Err(WireError::UnexpectedEnd {
                what: self.what,
                offset: self.pos,
                need,
                have: self.remaining(),
            });
        }
        Ok(count)
    }

    /// Fails unless every byte was consumed: the length prefix is authoritative, so extra bytes
    /// mean the sender and we disagree about the layout.
    pub(crate) fn finish(self) -> Result<usize, WireError> {
        if self.remaining() == 0 {
            Ok(self.pos)
        } else {
            Err(WireError::TrailingBytes {
                what: self.what,
                offset: self.pos,
                trailing: self.remaining(),
            })
        }
    }
}

pub(crate) fn put_topic<B: BufMut>(buf: &mut B, topic: &TopicName) {
    let bytes = topic.as_str().as_bytes();
    buf.put_u16(bytes.len() as u16);
    buf.put_slice(bytes);
}

pub(crate) fn topic_len(topic: &TopicName) -> usize {
    2 + topic.as_str().len()
}
