//! [`Out`]: the output matrix `y[t][n]` of a matmul, shared by the parallel tasks of every
//! GEMM kernel (repacked and compact), each of which writes only its own panels' columns.

use crate::packed::PANEL;

/// The output matrix, shared by the tasks: each writes only its own panels' columns.
#[derive(Clone, Copy)]
pub(crate) struct Out {
    ptr: *mut f32,
    /// Row stride.
    pub(crate) n: usize,
    /// Rows (tokens).
    pub(crate) t: usize,
    /// Columns from `ptr` on (`n` but for [`Out::panel`]'s views).
    cols: usize,
}

// SAFETY: `Out` is only a pointer into the caller's `y`, which outlives the parallel loop
// (`matmul_on` borrows it mutably throughout); tasks write disjoint columns.
unsafe impl Send for Out {}
// SAFETY: as above.
unsafe impl Sync for Out {}

impl Out {
    /// The whole output `y[t][n]` at `ptr`.
    pub(crate) fn new(ptr: *mut f32, n: usize, t: usize) -> Out {
        Out { ptr, n, t, cols: n }
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
            // SAFETY: column p * 16 is inside row 0 (the caller's contract).
            ptr: unsafe { self.ptr.add(p * PANEL) },
            n: self.n,
            t: self.t,
            cols: self.valid(p),
        }
    }

    /// Pointer to `y[t][p * 16]`.
    ///
    /// # Safety
    /// `t < self.t` and panel `p` exists; writes through it must stay within
    /// [`Out::valid`] columns of a panel the caller owns.
    pub(crate) unsafe fn at(self, t: usize, p: usize) -> *mut f32 {
        // SAFETY: in bounds of `y` (t x n) by the caller's contract.
        unsafe { self.ptr.add(t * self.n + p * PANEL) }
    }
}
