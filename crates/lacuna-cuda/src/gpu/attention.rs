//! The attention launcher ([`AttnArgs`]: the shape of one launch).

use super::Gpu;
use super::buffers::DevView;
use crate::{Error, Result};

/// Shape of one attention launch (see the `attention` kernel).
#[derive(Debug, Clone, Copy)]
pub struct AttnArgs {
    /// Key rows.
    pub keys: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_head_kv: usize,
    /// Head width (a multiple of 32, at most 256).
    pub head_dim: usize,
    /// Score scale.
    pub scale: f32,
    /// Canvas position of query row 0.
    pub pos0: usize,
    /// Block-causal block length (0: bidirectional).
    pub block: usize,
}

impl AttnArgs {
    /// The head widths the attention kernel takes, for messages.
    pub const HEAD_DIMS: &'static str = "a multiple of 32, at most 256";

    /// Whether the attention kernel takes heads `head_dim` wide ([`AttnArgs::HEAD_DIMS`]).
    pub fn supports_head_dim(head_dim: usize) -> bool {
        head_dim > 0 && head_dim % 32 == 0 && head_dim <= 256
    }
}

impl Gpu {
    /// Attention over the rows `rows` of `q` (all when `None`).
    #[allow(clippy::too_many_arguments)]
    pub fn attention(
        &mut self,
        q: DevView<'_>,
        k: DevView<'_>,
        v: DevView<'_>,
        a: AttnArgs,
        n_rows: usize,
        rows: Option<&[usize]>,
        out: DevView<'_>,
    ) -> Result<()> {
        if !AttnArgs::supports_head_dim(a.head_dim)
            || a.n_head_kv == 0
            || a.n_head % a.n_head_kv != 0
        {
            return Err(Error::Shape(format!(
                "attention head_dim {} ({}), heads {}/{}",
                a.head_dim,
                AttnArgs::HEAD_DIMS,
                a.n_head,
                a.n_head_kv
            )));
        }
        let (qw, kw) = (a.n_head * a.head_dim, a.n_head_kv * a.head_dim);
        let queries = q.len / qw;
        let rows_ok = rows.is_none_or(|r| r.len() == n_rows && r.iter().all(|&i| i < queries));
        if a.keys == 0
            || q.len % qw != 0
            || k.len != a.keys * kw
            || v.len != a.keys * kw
            || out.len != n_rows * qw
            || !rows_ok
            || (rows.is_none() && n_rows != queries)
        {
            return Err(Error::Shape(format!(
                "attention: {} query floats, {} key and {} value floats for {} keys, {} output \
                 floats for {n_rows} rows",
                q.len, k.len, v.len, a.keys, out.len
            )));
        }
        let rp = match rows {
            Some(r) => self.indices(r)?,
            None => 0,
        };
        self.launch(
            "attention",
            (n_rows.div_ceil(16) as u32, a.n_head as u32),
            128,
            &[
                &q.ptr,
                &k.ptr,
                &v.ptr,
                &out.ptr,
                &rp,
                &(n_rows as i32),
                &(a.keys as i32),
                &(a.n_head as i32),
                &(a.n_head_kv as i32),
                &(a.head_dim as i32),
                &a.scale,
                &(a.pos0 as i32),
                &(a.block as i32),
            ],
        )
    }
}
