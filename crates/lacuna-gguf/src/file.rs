//! [`GgufFile`]: a parsed header plus the file's bytes, memory-mapped or owned.

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use memmap2::{Mmap, UncheckedAdvice};

use crate::{Error, Header, Metadata, Result, TensorInfo};

/// The bytes a [`GgufFile`] reads from.
#[derive(Debug)]
enum Storage {
    /// A read-only memory map of the whole file.
    Mmap(Mmap),
    /// Owned bytes, kept in `u64` words so typed views of up to 8-byte elements align.
    Owned { words: Vec<u64>, len: usize },
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mmap(m) => m,
            Storage::Owned { words, len } => &bytemuck::cast_slice(words)[..*len],
        }
    }
}

impl AsRef<[u8]> for Storage {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

/// Bytes of a [`GgufFile`] that outlive it: a handle on the file's storage (the memory map,
/// or the owned bytes) and the range of them meant. Deref gives the bytes.
#[derive(Clone)]
pub struct SharedBytes {
    owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
    range: Range<usize>,
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // The range was checked against the storage when the handle was made.
        &(*self.owner).as_ref()[self.range.clone()]
    }
}

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBytes")
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// A validated GGUF file: header, metadata and tensor table parsed at open time, tensor
/// data borrowed from the mapping without copying.
#[derive(Debug)]
pub struct GgufFile {
    storage: Arc<Storage>,
    header: Header,
}

impl GgufFile {
    /// Memory-maps and validates the file at `path`. Opening reads only the header pages,
    /// so it takes about the same time for a 5 GB file as for a 5 KB one.
    ///
    /// The map is read-only and private to this process. Like every memory-mapped reader
    /// (ripgrep, llama.cpp), it assumes nobody truncates or rewrites the file while it is
    /// open: a concurrent truncation shows up as a `SIGBUS` on access, and concurrent
    /// writes as changing bytes. GGUF models are written once and then only read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len == 0 {
            // Mapping an empty file fails on some platforms; an empty file is no GGUF.
            return Self::from_vec(Vec::new());
        }
        // SAFETY: the map is read-only and we only ever create shared references into it.
        // The remaining hazard, another process truncating or modifying the file while it
        // is mapped, is documented on this function as a precondition of its use (see
        // memmap2's `Mmap::map`); the header is validated against the length at open time.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        let header = Header::parse(&map)?;
        Ok(Self {
            storage: Arc::new(Storage::Mmap(map)),
            header,
        })
    }

    /// Validates a GGUF file held in memory (tests, fuzzing, files from elsewhere).
    pub fn from_vec(bytes: Vec<u8>) -> Result<Self> {
        let header = Header::parse(&bytes)?;
        let len = bytes.len();
        let mut words = vec![0u64; len.div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..len].copy_from_slice(&bytes);
        Ok(Self {
            storage: Arc::new(Storage::Owned { words, len }),
            header,
        })
    }

    /// Tells the OS that the caller is done with `data`, a slice of this file (a tensor it
    /// has repacked, say): on a memory-mapped file the pages holding it are dropped from
    /// this process's resident set, so the process does not hold both the file and its
    /// repacked copy. The bytes stay readable: touched again, they are read back from the
    /// file. A hint only: nothing happens for owned storage, for a slice from elsewhere, or
    /// when the OS declines.
    pub fn release(&self, data: &[u8]) {
        let Some((map, at)) = self.mapped(data) else {
            return;
        };
        // SAFETY: MADV_DONTNEED on this read-only, shared, file-backed mapping only
        // discards page-table entries: a later access faults the same bytes back in from
        // the file (the page cache), so every `&[u8]` into the map stays valid and
        // unchanged. (It would zero memory only for private anonymous or written pages,
        // which this mapping never has.)
        let _ = unsafe { map.unchecked_advise_range(UncheckedAdvice::DontNeed, at, data.len()) };
    }

    /// The memory map and `data`'s offset in it, when `data` is a non-empty slice of this
    /// file's map (not of owned bytes, not from elsewhere).
    fn mapped(&self, data: &[u8]) -> Option<(&Mmap, usize)> {
        let Storage::Mmap(map) = &*self.storage else {
            return None;
        };
        let at = (data.as_ptr() as usize).checked_sub(map.as_ptr() as usize)?;
        (!data.is_empty() && at + data.len() <= map.len()).then_some((map, at))
    }

    /// `data`, a slice of this file (a tensor's bytes from [`GgufFile::info_data`]), as
    /// [`SharedBytes`] that keep the file's storage alive: a backend can hold a tensor in
    /// place instead of copying it. `None` for a slice from elsewhere.
    pub fn share(&self, data: &[u8]) -> Option<SharedBytes> {
        let all = self.storage.bytes();
        let base = all.as_ptr() as usize;
        let start = (data.as_ptr() as usize).checked_sub(base)?;
        let range = start..start.checked_add(data.len())?;
        (range.end <= all.len()).then(|| SharedBytes {
            owner: self.storage.clone(),
            range,
        })
    }

    /// Asks the OS to read `data`, a slice of this file, into the page cache ahead of its
    /// use (a hint; nothing happens for owned bytes or a slice from elsewhere): a tensor
    /// held in place is then read in the background instead of page by page at first use.
    pub fn prefetch(&self, data: &[u8]) {
        if let Some((map, at)) = self.mapped(data) {
            let _ = map.advise_range(memmap2::Advice::WillNeed, at, data.len());
        }
    }

    /// The whole file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// The parsed header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The GGUF version (2 or 3).
    pub fn version(&self) -> u32 {
        self.header.version()
    }

    /// The alignment of tensor data.
    pub fn alignment(&self) -> u64 {
        self.header.alignment()
    }

    /// Offset of the data section from the start of the file.
    pub fn data_offset(&self) -> u64 {
        self.header.data_offset()
    }

    /// The metadata table, with typed getters.
    pub fn metadata(&self) -> &Metadata {
        self.header.metadata()
    }

    /// The tensor table, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        self.header.tensors()
    }

    /// The tensor called `name`, or [`Error::MissingTensor`].
    pub fn tensor(&self, name: &str) -> Result<&TensorInfo> {
        self.header.tensor(name)
    }

    /// The raw bytes of the tensor called `name`, borrowed from the file.
    pub fn tensor_data(&self, name: &str) -> Result<&[u8]> {
        Ok(self.info_data(self.tensor(name)?))
    }

    /// The raw bytes of a tensor from [`GgufFile::tensors`].
    pub fn info_data(&self, info: &TensorInfo) -> &[u8] {
        // The range was validated against the file's length when the header was parsed.
        &self.bytes()[self.header.tensor_range(info)]
    }

    /// The tensor called `name` viewed as a slice of `T` (`f32`, `half::f16`, a block
    /// struct such as a Q4_K block), borrowed from the file. Fails with
    /// [`Error::TensorView`] when the byte length is not a multiple of `T`'s size or the
    /// data is not aligned for `T`. The caller chooses a `T` that matches the tensor's
    /// ggml type; no conversion happens.
    pub fn tensor_view<T: bytemuck::Pod>(&self, name: &str) -> Result<&[T]> {
        let info = self.tensor(name)?;
        bytemuck::try_cast_slice(self.info_data(info)).map_err(|reason| Error::TensorView {
            name: name.to_string(),
            ty: info.ty,
            target: std::any::type_name::<T>(),
            reason,
        })
    }
}
