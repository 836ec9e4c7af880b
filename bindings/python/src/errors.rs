//! The package's exceptions: `LacunaError` for everything the engine reports, and
//! `SettingsError` (a `LacunaError` and a `ValueError`) for a request or an option that
//! cannot work. Each carries the Rust error's message unchanged, the text the CLI and the
//! server give.

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

pyo3::create_exception!(
    lacuna,
    LacunaError,
    PyException,
    "An error the Lacuna engine reports: a model that cannot be loaded, a request that cannot \
     run, a generation that failed. The message is the Rust error's, as the CLI and the server \
     print it."
);

/// `lacuna.SettingsError`, made at module init (it has two bases, which
/// `create_exception!` cannot give).
static SETTINGS_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

const SETTINGS_DOC: &str = "A request or option that cannot work: a setting's value or a \
combination of settings (`steps=0`, a block length that does not divide `gen_length`, a \
setting the model's sampler does not have), a prompt over the context, an unknown device, \
weight layout or demo name. A LacunaError and a ValueError.";

/// `class SettingsError(LacunaError, ValueError)`.
pub(crate) fn settings_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    SETTINGS_ERROR
        .get_or_try_init(py, || {
            let bases = PyTuple::new(
                py,
                [
                    py.get_type::<LacunaError>().into_any(),
                    py.get_type::<PyValueError>().into_any(),
                ],
            )?;
            let dict = PyDict::new(py);
            dict.set_item("__doc__", SETTINGS_DOC)?;
            dict.set_item("__module__", "lacuna")?;
            let ty = py
                .get_type::<PyType>()
                .call1(("SettingsError", bases, dict))?
                .cast_into::<PyType>()?;
            Ok(ty.unbind())
        })
        .map(|t| t.bind(py))
}

/// A `SettingsError` with `message`, its `setting` attribute the setting at fault (a
/// `lacuna::Settings` field name) or `None`.
pub(crate) fn settings(py: Python<'_>, message: String, setting: Option<&str>) -> PyErr {
    let ty = match settings_error_type(py) {
        Ok(ty) => ty.clone(),
        Err(e) => return e,
    };
    let err = PyErr::from_type(ty, message);
    if let Err(e) = err.value(py).setattr("setting", setting) {
        return e;
    }
    err
}

/// A `LacunaError` with `message` (and `setting = None`).
pub(crate) fn lacuna(py: Python<'_>, message: String) -> PyErr {
    let err = LacunaError::new_err(message);
    if let Err(e) = err.value(py).setattr("setting", None::<&str>) {
        return e;
    }
    err
}

/// A `TypeError`: a value of the wrong type, or an unknown keyword.
pub(crate) fn type_error(message: String) -> PyErr {
    PyTypeError::new_err(message)
}

/// A [`lacuna::SettingsError`] as a `SettingsError`, its message the Display one (each
/// setting written as its field name in backquotes, `` `steps` must be at least 1 ``).
pub(crate) fn from_settings(py: Python<'_>, e: &lacuna::SettingsError) -> PyErr {
    settings(py, e.to_string(), e.setting())
}

/// A [`lacuna::Error`] as a Python exception: `SettingsError` for a request that cannot
/// work (bad settings, prompt, context, scoring input), `LacunaError` for the rest (the
/// model file, the model, a failed or cancelled generation). The message is `e`'s Display.
pub(crate) fn from_lacuna(py: Python<'_>, e: &lacuna::Error) -> PyErr {
    use lacuna::Error as E;
    let message = e.to_string();
    match e {
        E::Settings(s) => settings(py, message, s.setting()),
        E::UnsupportedSetting { setting, .. } => settings(py, message, Some(setting)),
        E::Config(_)
        | E::Constraint(_)
        | E::ContextOverflow { .. }
        | E::InfillContextOverflow { .. }
        | E::InfillUnsupported { .. }
        | E::InfillLengthsWithoutSuffix
        | E::TooManyInfillLengths { .. }
        | E::PromptToken { .. }
        | E::EmptyChat
        | E::ZeroThreads
        | E::LikelihoodUnsupported { .. }
        | E::LikelihoodSamples { .. }
        | E::LikelihoodTooCostly { .. }
        | E::LikelihoodEmpty
        | E::Tokenizer(lacuna::tokenizer::Error::NoChatTemplate) => settings(py, message, None),
        _ => lacuna(py, message),
    }
}
