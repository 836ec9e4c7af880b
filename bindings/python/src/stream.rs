//! `lacuna.Stream`: the iterator `Engine.stream` returns. The generation runs on its own
//! Rust thread and sends each step's [`Canvas`] through a channel (unbounded: a slow reader
//! never holds the generation back, at one canvas copy per step); `__next__` waits on it with
//! the GIL released. Dropping the stream cancels the generation.

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, PoisonError};

use lacuna::{CancelToken, SharedEngine};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::engine::{Event, wait};
use crate::errors;
use crate::output::Output;

/// An iterator over one generation: a `Canvas` after every denoising step, then the
/// `Output`; also `result` once it is done. `close()`, `cancel()`, leaving a `with` block
/// or dropping the stream (a `break` out of a `for` loop over it) cancels the generation
/// before its next forward pass.
#[pyclass(frozen, module = "lacuna")]
pub(crate) struct Stream {
    state: Mutex<State>,
    cancel: CancelToken,
    shared: Arc<SharedEngine>,
    result: Mutex<Option<Py<Output>>>,
}

/// Where the iteration stands.
enum State {
    /// Waiting for a `__next__`.
    Ready(Receiver<Event>),
    /// A `__next__` is waiting for the next event (the receiver is with it).
    Busy,
    /// The result, an error or the cancellation has been returned.
    Done,
}

impl Stream {
    fn set(&self, state: State) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    pub(crate) fn new(rx: Receiver<Event>, cancel: CancelToken, shared: Arc<SharedEngine>) -> Self {
        Self {
            state: Mutex::new(State::Ready(rx)),
            cancel,
            shared,
            result: Mutex::new(None),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[pymethods]
impl Stream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next step's `Canvas`, then the `Output`; then `StopIteration`. A failed
    /// generation raises its error (once). After `cancel()`, the iteration just stops.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.cancel.is_cancelled() {
            self.set(State::Done);
            return Ok(None);
        }
        // The lock is never held while waiting: a thread that waits for the GIL while
        // holding it would block the waiting one when it takes the GIL back.
        let rx = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match std::mem::replace(&mut *state, State::Busy) {
                State::Ready(rx) => rx,
                State::Busy => {
                    return Err(PyValueError::new_err(
                        "the stream is being read by another thread",
                    ));
                }
                State::Done => {
                    *state = State::Done;
                    return Ok(None);
                }
            }
        };
        let rx = Mutex::new(rx);
        let event = match wait(py, &rx, &self.cancel) {
            Ok(event) => event,
            Err(e) => {
                self.set(State::Done);
                return Err(e);
            }
        };
        match event {
            Event::Step(canvas) => {
                self.set(State::Ready(
                    rx.into_inner().unwrap_or_else(PoisonError::into_inner),
                ));
                Ok(Some(Py::new(py, canvas)?.into_any()))
            }
            Event::Done(out) => {
                self.set(State::Done);
                match out {
                    Ok(out) => {
                        let out = Py::new(py, Output::of(py, self.shared.tokenizer(), &out)?)?;
                        *self.result.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(out.clone_ref(py));
                        Ok(Some(out.into_any()))
                    }
                    Err(lacuna::Error::Cancelled) if self.cancel.is_cancelled() => Ok(None),
                    Err(e) => Err(errors::from_lacuna(py, &e)),
                }
            }
        }
    }

    /// The `Output` once the iteration has returned it, else None.
    #[getter]
    fn result(&self, py: Python<'_>) -> Option<Py<Output>> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|o| o.clone_ref(py))
    }

    /// Whether the generation was cancelled.
    #[getter]
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Cancels the generation: it stops before its next forward pass, and the iteration
    /// ends (no `Output`).
    fn cancel(&self) {
        self.cancel.cancel();
    }

    /// `cancel()`, as for a generator.
    fn close(&self) {
        self.cancel.cancel();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.cancel.cancel();
        false
    }
}
