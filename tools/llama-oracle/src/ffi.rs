//! Thin owning wrappers over the raw llama.cpp C API; every `unsafe` block of the tool.

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::Path;

use anyhow::{Context, Result, bail};
use llama_cpp_sys_2 as sys;

/// The llama.cpp this tool was built against: the `llama-cpp-sys-2` crate version and the
/// llama.cpp commit that crate vendors (see README).
pub(crate) const ORACLE_VERSION: &str = "llama-cpp-sys-2 0.1.161 (crate git e7af607e)";

unsafe extern "C" fn quiet_log(_level: sys::ggml_log_level, _text: *const c_char, _user: *mut c_void) {}

/// Initialises the llama.cpp backends; silences its log unless `verbose`.
pub(crate) fn init(verbose: bool) {
    // SAFETY: plain initialisation calls with no arguments or a valid `extern "C"` callback
    // that ignores its arguments; called once, before any other llama.cpp call.
    unsafe {
        if !verbose {
            sys::llama_log_set(Some(quiet_log), std::ptr::null_mut());
        }
        sys::llama_backend_init();
    }
}

/// `llama_print_system_info()`: which ggml CPU features this build uses.
pub(crate) fn system_info() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string owned by llama.cpp.
    unsafe { CStr::from_ptr(sys::llama_print_system_info()) }.to_string_lossy().into_owned()
}

/// `llama_model_quantize(inp, out, params)` with llama-quantize's defaults and `ftype`.
pub(crate) fn quantize(inp: &Path, out: &Path, ftype: u32, threads: i32) -> Result<()> {
    let cstr = |p: &Path| -> Result<CString> {
        CString::new(p.to_str().context("path is not UTF-8")?).context("path contains NUL")
    };
    let (inp, out) = (cstr(inp)?, cstr(out)?);
    // SAFETY: the default params are plain data (null pointers for imatrix and overrides);
    // both paths are valid NUL-terminated strings that outlive the call.
    let rc = unsafe {
        let mut params = sys::llama_model_quantize_default_params();
        params.nthread = threads;
        params.ftype = ftype as sys::llama_ftype;
        sys::llama_model_quantize(inp.as_ptr(), out.as_ptr(), &params)
    };
    if rc != 0 {
        bail!("llama_model_quantize failed ({rc}); rerun with --verbose for its log");
    }
    Ok(())
}

/// A loaded model (or vocabulary only); freed on drop.
pub(crate) struct Model {
    ptr: *mut sys::llama_model,
}

impl Model {
    /// Loads `path`; with `vocab_only` the tensors are skipped.
    pub(crate) fn load(path: &Path, vocab_only: bool) -> Result<Self> {
        let c_path = CString::new(path.to_str().context("model path is not UTF-8")?)
            .context("model path contains NUL")?;
        // SAFETY: default params are plain data; the path is a valid NUL-terminated string
        // that outlives the call.
        let ptr = unsafe {
            let mut params = sys::llama_model_default_params();
            params.vocab_only = vocab_only;
            params.n_gpu_layers = 0;
            sys::llama_model_load_from_file(c_path.as_ptr(), params)
        };
        if ptr.is_null() {
            bail!("llama.cpp failed to load {} (rerun with --verbose for its log)", path.display());
        }
        Ok(Self { ptr })
    }

    pub(crate) fn vocab(&self) -> Vocab<'_> {
        // SAFETY: `self.ptr` is a live model; the vocab it returns lives as long as the model.
        let ptr = unsafe { sys::llama_model_get_vocab(self.ptr) };
        Vocab { ptr, _model: std::marker::PhantomData }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: `self.ptr` came from llama_model_load_from_file and is freed once.
        unsafe { sys::llama_model_free(self.ptr) }
    }
}

/// A borrowed vocabulary of a [`Model`].
pub(crate) struct Vocab<'m> {
    ptr: *const sys::llama_vocab,
    _model: std::marker::PhantomData<&'m Model>,
}

impl Vocab<'_> {
    pub(crate) fn n_tokens(&self) -> i32 {
        // SAFETY: live vocab pointer (borrow of the model).
        unsafe { sys::llama_vocab_n_tokens(self.ptr) }
    }
    pub(crate) fn vocab_type(&self) -> u32 {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_type(self.ptr) as u32 }
    }
    pub(crate) fn bos(&self) -> i32 {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_bos(self.ptr) }
    }
    pub(crate) fn eos(&self) -> i32 {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_eos(self.ptr) }
    }
    pub(crate) fn eot(&self) -> i32 {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_eot(self.ptr) }
    }
    pub(crate) fn pad(&self) -> i32 {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_pad(self.ptr) }
    }
    pub(crate) fn mask(&self) -> i32 {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_mask(self.ptr) }
    }
    pub(crate) fn add_bos(&self) -> bool {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_get_add_bos(self.ptr) }
    }
    pub(crate) fn add_eos(&self) -> bool {
        // SAFETY: live vocab pointer.
        unsafe { sys::llama_vocab_get_add_eos(self.ptr) }
    }
    pub(crate) fn attr(&self, id: i32) -> u32 {
        // SAFETY: live vocab pointer; callers pass 0 <= id < n_tokens.
        unsafe { sys::llama_vocab_get_attr(self.ptr, id) as u32 }
    }

    /// `llama_token_to_piece(id, lstrip = 0, special)`.
    pub(crate) fn piece(&self, id: i32, special: bool) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        loop {
            // SAFETY: `buf` is writable for `buf.len()` bytes; llama.cpp writes at most that
            // many and returns the negative needed size when it is too small.
            let n = unsafe {
                sys::llama_token_to_piece(
                    self.ptr,
                    id,
                    buf.as_mut_ptr().cast(),
                    buf.len() as i32,
                    0,
                    special,
                )
            };
            if n < 0 {
                buf.resize((-n) as usize, 0);
                continue;
            }
            buf.truncate(n as usize);
            return buf;
        }
    }

    /// `llama_tokenize(text, add_special, parse_special)`.
    pub(crate) fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> Result<Vec<i32>> {
        let len = i32::try_from(text.len()).context("text too long")?;
        let mut ids = vec![0i32; text.len() + 8];
        loop {
            // SAFETY: `text` is valid for `len` bytes (no NUL needed, length given); `ids` is
            // writable for `ids.len()` tokens.
            let n = unsafe {
                sys::llama_tokenize(
                    self.ptr,
                    text.as_ptr().cast(),
                    len,
                    ids.as_mut_ptr(),
                    ids.len() as i32,
                    add_special,
                    parse_special,
                )
            };
            if n == i32::MIN {
                bail!("llama_tokenize overflowed");
            }
            if n < 0 {
                ids.resize((-n) as usize, 0);
                continue;
            }
            ids.truncate(n as usize);
            return Ok(ids);
        }
    }

    /// `llama_detokenize(ids, remove_special, unparse_special)` as raw bytes.
    pub(crate) fn detokenize(&self, ids: &[i32], remove_special: bool, unparse_special: bool) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; ids.len() * 8 + 16];
        loop {
            // SAFETY: `ids` is readable for its length, `buf` writable for its length.
            let n = unsafe {
                sys::llama_detokenize(
                    self.ptr,
                    ids.as_ptr(),
                    ids.len() as i32,
                    buf.as_mut_ptr().cast(),
                    buf.len() as i32,
                    remove_special,
                    unparse_special,
                )
            };
            if n < 0 {
                buf.resize((-n) as usize, 0);
                continue;
            }
            buf.truncate(n as usize);
            return Ok(buf);
        }
    }
}

/// A context sized for exactly one batch of `n_tokens`, flash attention off.
pub(crate) struct Session<'m> {
    ctx: *mut sys::llama_context,
    batch: sys::llama_batch,
    n_tokens: usize,
    n_vocab: usize,
    _model: std::marker::PhantomData<&'m Model>,
}

impl<'m> Session<'m> {
    pub(crate) fn new(model: &'m Model, n_tokens: usize, threads: i32, causal: bool) -> Result<Self> {
        let n = u32::try_from(n_tokens).context("too many tokens")?;
        if n == 0 {
            bail!("no tokens given");
        }
        // SAFETY: default params are plain data; `model.ptr` is a live model.
        let ctx = unsafe {
            let mut p = sys::llama_context_default_params();
            p.n_ctx = n.max(256);
            p.n_batch = n;
            p.n_ubatch = n;
            p.n_seq_max = 1;
            p.n_threads = threads;
            p.n_threads_batch = threads;
            p.flash_attn_type = sys::LLAMA_FLASH_ATTN_TYPE_DISABLED;
            // A causal graph (bailingmoe2) stores K and V in the cache; F32 keeps them
            // unrounded (the default F16 moves logits by ~1e-4).
            p.type_k = sys::GGML_TYPE_F32;
            p.type_v = sys::GGML_TYPE_F32;
            p.embeddings = false;
            sys::llama_init_from_model(model.ptr, p)
        };
        if ctx.is_null() {
            bail!("llama.cpp failed to create a context (rerun with --verbose)");
        }
        // SAFETY: live context; plain setters. The batch is freed in Drop.
        let batch = unsafe {
            sys::llama_set_causal_attn(ctx, causal);
            sys::llama_batch_init(n as i32, 0, 1)
        };
        let n_vocab = model.vocab().n_tokens() as usize;
        Ok(Self { ctx, batch, n_tokens, n_vocab, _model: std::marker::PhantomData })
    }

    /// Runs one forward pass over `tokens` (positions 0..n) and returns all logits,
    /// row-major [n_tokens x n_vocab].
    pub(crate) fn forward(&mut self, tokens: &[i32]) -> Result<Vec<f32>> {
        if tokens.len() != self.n_tokens {
            bail!("session was sized for {} tokens, got {}", self.n_tokens, tokens.len());
        }
        // SAFETY: the batch was allocated by llama_batch_init for n_tokens tokens with one
        // sequence id each, so every index below is in bounds; the context is live.
        unsafe {
            let mem = sys::llama_get_memory(self.ctx);
            if !mem.is_null() {
                sys::llama_memory_clear(mem, true);
            }
            self.batch.n_tokens = tokens.len() as i32;
            for (i, &t) in tokens.iter().enumerate() {
                *self.batch.token.add(i) = t;
                *self.batch.pos.add(i) = i as i32;
                *self.batch.n_seq_id.add(i) = 1;
                *(*self.batch.seq_id.add(i)).add(0) = 0;
                *self.batch.logits.add(i) = 1;
            }
            let rc = sys::llama_decode(self.ctx, self.batch);
            if rc != 0 {
                bail!("llama_decode returned {rc}");
            }
            sys::llama_synchronize(self.ctx);
            let mut out = Vec::with_capacity(self.n_tokens * self.n_vocab);
            for i in 0..self.n_tokens {
                let row = sys::llama_get_logits_ith(self.ctx, i as i32);
                if row.is_null() {
                    bail!("no logits for position {i}");
                }
                out.extend_from_slice(std::slice::from_raw_parts(row, self.n_vocab));
            }
            Ok(out)
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        // SAFETY: batch and context were created in `new` and are freed exactly once.
        unsafe {
            sys::llama_batch_free(self.batch);
            sys::llama_free(self.ctx);
        }
    }
}
