//! Unit tests of config.
