//! [`Out`]: the output matrix `y[t][n]` of a matmul, shared by the parallel tasks of every
//! GEMM kernel (repacked and compact), each of which writes only its own panels' columns.

use crate::packed::PANEL;

/// The output matrix, shared by the tasks: each writes only its own panels' columns.
/// Row `t` starts at `base + t * n`, or, for a scattered output ([`Out::rows`]), at the
/// `t`-th pointer of a table (a batch's LM head writes each canvas's rows into that
/// canvas's own buffer).
#[derive(Clone, Copy)]
pub(crate) struct Out {
    base: *mut f32,
    /// Null, or `t` row pointers (each row `n` long).
    table: *const *mut f32,
    /// Row stride.
    pub(crate) n: usize,
    /// Rows (tokens).
    pub(crate) t: usize,
    /// First column of this view ([`Out::panel`]).
    col0: usize,
    /// Columns from `col0` on (`n` but for [`Out::panel`]'s views).
    cols: usize,
}

// SAFETY: `Out` is only pointers into the caller's output rows, which outlive the parallel
// loop (`matmul_on`/`matmul_rows_on` borrow them mutably throughout); tasks write disjoint
// columns.
unsafe impl Send for Out {}
// SAFETY: as above.
unsafe impl Sync for Out {}

impl Out {
    /// The whole output `y[t][n]` at `ptr`.
    pub(crate) fn new(ptr: *mut f32, n: usize, t: usize) -> Out {
        Out {
            base: ptr,
            table: std::ptr::null(),
            n,
            t,
            col0: 0,
            cols: n,
        }
    }

    /// An output whose row `i` starts at `table[i]` (`t` entries, each row `n` long).
    pub(crate) fn rows(table: &[*mut f32], n: usize) -> Out {
        Out {
            base: std::ptr::null_mut(),
            table: table.as_ptr(),
            n,
            t: table.len(),
            col0: 0,
            cols: n,
        }
    }

    /// Columns of panel `p` that exist (1..=16).
    pub(crate) fn valid(self, p: usize) -> usize {
        (self.cols - p * PANEL).min(PANEL)
    }

    /// Panel `p` alone, as panel 0 of a view (for a kernel run over a one-panel weight).
    ///
    /// # Safety
    /// Panel `p` exists.
    pub(crate) unsafe fn panel(self, p: usize) -> Out {
        Out {
            col0: self.col0 + p * PANEL,
            cols: self.valid(p),
            ..self
        }
    }

    /// Panels from `p` on, as panels from 0 of a view (for a kernel run over weights that
    /// hold only those panels).
    ///
    /// # Safety
    /// Panel `p` exists.
    pub(crate) unsafe fn panels_from(self, p: usize) -> Out {
        Out {
            col0: self.col0 + p * PANEL,
            cols: self.cols - p * PANEL,
            ..self
        }
    }

    /// Pointer to `y[t][p * 16]`.
    ///
    /// # Safety
    /// `t < self.t` and panel `p` exists; writes through it must stay within
    /// [`Out::valid`] columns of a panel the caller owns.
    #[inline(always)]
    pub(crate) unsafe fn at(self, t: usize, p: usize) -> *mut f32 {
        let col = self.col0 + p * PANEL;
        if self.table.is_null() {
            // SAFETY: in bounds of `y` (t x n) by the caller's contract.
            unsafe { self.base.add(t * self.n + col) }
        } else {
            // SAFETY: the table holds `self.t` row pointers, each to `n` floats, and
            // `t < self.t`, `col < n` by the caller's contract.
            unsafe { (*self.table.add(t)).add(col) }
        }
    }
}
