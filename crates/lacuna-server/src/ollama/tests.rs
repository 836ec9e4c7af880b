use std::time::{Duration, UNIX_EPOCH};

use super::model::{human_number, tagged};
use super::reply::rfc3339;
use super::{field, message};
use crate::error::ApiError;

#[test]
fn timestamps_are_rfc3339_in_utc() {
    let at = |secs: u64, nanos: u32| rfc3339(UNIX_EPOCH + Duration::new(secs, nanos));
    assert_eq!(at(0, 0), "1970-01-01T00:00:00Z");
    // Ollama's documented example, 2023-08-04T19:22:45.499127Z.
    assert_eq!(
        at(1_691_176_965, 499_127_000),
        "2023-08-04T19:22:45.499127Z"
    );
    // A leap day, and the last second of a century year that is a leap year.
    assert_eq!(at(1_709_164_800, 1), "2024-02-29T00:00:00.000000001Z");
    assert_eq!(at(978_307_199, 0), "2000-12-31T23:59:59Z");
}

#[test]
fn parameter_sizes_read_as_ollama_writes_them() {
    assert_eq!(human_number(7_615_616_512), "7.6B");
    assert_eq!(human_number(8_000_000_000), "8B");
    assert_eq!(human_number(494_032_768), "494.03M");
    assert_eq!(human_number(5_000_000), "5M");
    assert_eq!(human_number(12_345), "12K");
    assert_eq!(human_number(999), "999");
}

#[test]
fn names_take_the_default_tag() {
    assert_eq!(tagged("lacuna-demo"), "lacuna-demo:latest");
    assert_eq!(tagged("llada:8b"), "llada:8b");
    assert_eq!(tagged("library/llada"), "library/llada:latest");
    assert_eq!(tagged("host:5000/llada"), "host:5000/llada:latest");
}

#[test]
fn errors_name_ollama_fields() {
    assert_eq!(field("max_tokens"), "options.num_predict");
    assert_eq!(field("diffusion.steps"), "options.diffusion.steps");
    assert_eq!(field("top_k"), "options.top_k");
    assert_eq!(field("response_format.json_schema.schema"), "format");
    assert_eq!(field("messages"), "messages");
    let e = ApiError::invalid(
        "diffusion.steps",
        "`max_tokens` (64) needs `diffusion.steps` to be a multiple of 2",
    );
    assert_eq!(
        message(&e),
        "`options.num_predict` (64) needs `options.diffusion.steps` to be a multiple of 2"
    );
    let e = ApiError::invalid("top_p", "top_p is not a setting of the llada sampler")
        .with_code("unsupported_parameter");
    assert_eq!(
        message(&e),
        "`options.top_p`: top_p is not a setting of the llada sampler"
    );
    let e = ApiError::invalid("options.foo", "unknown field `options.foo` (expected ...)")
        .with_code("unsupported_parameter");
    assert!(message(&e).starts_with("unknown option `options.foo`"));
    let e = ApiError::bad_request("an unmatched ` stays");
    assert_eq!(message(&e), "an unmatched ` stays");
}
