//! A bounds-checked little-endian reader over the file's bytes. Every read checks the
//! remaining length first and reports the byte offset on failure; nothing here panics.

use crate::{Error, Result};

pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// The current byte offset.
    pub(crate) fn offset(&self) -> u64 {
        self.pos as u64
    }

    /// Bytes left after the current position.
    pub(crate) fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    /// The next `n` bytes, or [`Error::Truncated`].
    pub(crate) fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let available = self.remaining();
        if n > available {
            return Err(Error::Truncated {
                offset: self.offset(),
                what,
                needed: n,
                available,
            });
        }
        // `n <= remaining`, which fits in usize.
        let n = n as usize;
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let bytes = self.take(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A u64 count of elements that take at least `min_size` bytes each, checked to fit in
    /// what is left of the file, so that allocating `count` elements is bounded by the
    /// file's size.
    pub(crate) fn count(&mut self, what: &'static str, min_size: usize) -> Result<usize> {
        let offset = self.offset();
        let count = self.u64(what)?;
        let available = self.remaining();
        if count > available / min_size.max(1) as u64 {
            return Err(Error::CountTooLarge {
                offset,
                what,
                count,
                available,
            });
        }
        // `count <= remaining`, which fits in usize.
        Ok(count as usize)
    }

    /// A GGUF string: u64 byte length, then UTF-8 bytes.
    pub(crate) fn string(&mut self, what: &'static str) -> Result<String> {
        let len = self.count(what, 1)?;
        let offset = self.offset();
        let bytes = self.take(len as u64, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(Error::InvalidUtf8 { offset }),
        }
    }

    /// Skips to the next multiple of `alignment` (a power of two), or to the end.
    pub(crate) fn position_aligned(&self, alignment: u64) -> u64 {
        self.offset().next_multiple_of(alignment)
    }
}
