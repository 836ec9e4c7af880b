//! Unit tests of the model.
