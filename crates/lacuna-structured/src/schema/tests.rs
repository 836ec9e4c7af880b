use serde_json::{Value, json};

use super::*;
use crate::dfa::{ByteDfa, DfaLimits};

const LIMITS: SchemaLimits = SchemaLimits {
    json_depth: 3,
    max_repeat: 256,
};

fn dfa(schema: &Value) -> ByteDfa {
    let h = schema_hir(schema, LIMITS).unwrap();
    let limits = DfaLimits {
        nfa_bytes: 1 << 26,
        dfa_bytes: 1 << 26,
    };
    ByteDfa::build(&h, limits).unwrap()
}

/// Schemas of the kinds applications send (OpenAI's strict subset and beyond).
pub(crate) fn schemas() -> Vec<Value> {
    vec![
        json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150}}, "required": ["name", "age"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"type": "number"}}}),
        json!({"type": "array", "items": {"type": "integer", "exclusiveMinimum": -5, "exclusiveMaximum": 5}, "minItems": 1, "maxItems": 4}),
        json!({"type": "string", "enum": ["red", "green", "blue"]}),
        json!({"enum": [1, "two", null, {"x": [true]}]}),
        json!({"const": "fixed"}),
        json!({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]}),
        json!({"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "object", "properties": {"k": {"const": 1}}, "required": ["k"]}]}),
        json!({"type": "string", "minLength": 2, "maxLength": 5}),
        json!({"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"}),
        json!({"type": "string", "pattern": "ab+"}),
        json!({"type": "string", "format": "date"}),
        json!({"type": "string", "format": "date-time"}),
        json!({"type": "string", "format": "uuid"}),
        json!({"type": "string", "format": "email"}),
        json!({"type": "string", "format": "ipv4"}),
        json!({"type": "number", "minimum": 0, "maximum": 1}),
        json!({"type": "number", "exclusiveMinimum": -2, "maximum": 3}),
        json!({"type": ["string", "null"]}),
        json!({"$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"], "additionalProperties": false}}, "type": "object", "properties": {"from": {"$ref": "#/$defs/P"}, "to": {"$ref": "#/$defs/P"}, "label": {"type": "string"}}, "required": ["from", "to"]}),
        json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
        json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3}, "meta": {"type": "object", "properties": {"v": {"type": "integer"}, "w": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["v"]}}, "required": ["tags"]}),
        json!({}),
        json!({"type": "object"}),
        json!({"allOf": [{"type": "integer", "maximum": 3}]}),
    ]
}

#[test]
fn every_sampled_answer_validates() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for schema in schemas() {
        let d = dfa(&schema);
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap();
        for _ in 0..300 {
            let w = d.sample(&mut seed, 200);
            let text = String::from_utf8(w).unwrap();
            let v: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{schema}: {text:?} is not JSON: {e}"));
            assert!(validator.is_valid(&v), "{schema}: {text} does not validate");
        }
    }
}

#[test]
fn properties_keep_their_order_and_optional_ones_may_be_left_out() {
    let d = dfa(
        &json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["b"]}),
    );
    for (s, ok) in [
        (r#"{"b": 1}"#, true),
        (r#"{"a": 1, "b": 2}"#, true),
        (r#"{"a":1,"b":2,"c":3}"#, true),
        (r#"{"b": 2, "c": 3}"#, true),
        (r#"{"a": 1}"#, false),
        (r#"{"b": 2, "a": 1}"#, false),
        (r#"{}"#, false),
        (r#"{"b": 2,}"#, false),
    ] {
        assert_eq!(d.matches(s.as_bytes()), ok, "{s}");
    }
    let d = dfa(&json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
    assert!(d.matches(b"{}"));
}

#[test]
fn what_a_regular_language_cannot_hold_is_refused_by_name() {
    let kw = |s: Value| match schema_hir(&s, LIMITS) {
        Err(Error::UnsupportedKeyword { keyword, .. }) => keyword,
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(
        kw(json!({"type": "array", "uniqueItems": true})),
        "uniqueItems"
    );
    assert_eq!(kw(json!({"not": {"type": "string"}})), "not");
    assert_eq!(
        kw(json!({"type": "integer", "multipleOf": 3})),
        "multipleOf"
    );
    assert_eq!(kw(json!({"type": "number", "minimum": 0.5})), "minimum");
    assert_eq!(
        kw(json!({"oneOf": [{"type": "integer"}, {"type": "number"}]})),
        "oneOf"
    );
    assert_eq!(kw(json!({"type": "string", "format": "uri"})), "format");
    assert_eq!(
        kw(json!({"type": "string", "pattern": "a", "maxLength": 3})),
        "pattern"
    );
    assert_eq!(kw(json!({"type": "array", "maxItems": 100000})), "maxItems");
    let recursive = json!({"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"});
    assert!(matches!(
        schema_hir(&recursive, LIMITS),
        Err(Error::RecursiveSchema { .. })
    ));
    assert!(matches!(
        schema_hir(&json!({"$ref": "#/$defs/missing"}), LIMITS),
        Err(Error::InvalidSchema { .. })
    ));
    assert!(matches!(
        schema_hir(&json!({"type": "strung"}), LIMITS),
        Err(Error::InvalidSchema { .. })
    ));
    assert!(matches!(
        schema_hir(
            &json!({"type": "object", "properties": {}, "required": ["x"]}),
            LIMITS
        ),
        Err(Error::InvalidSchema { .. })
    ));
    let empty = schema_hir(
        &json!({"type": "integer", "minimum": 5, "maximum": 1}),
        LIMITS,
    );
    assert_eq!(empty.unwrap_err(), Error::Empty);
}

#[test]
fn integer_bounds_round_inward_and_draft4_exclusive_flags_count() {
    let d = dfa(&json!({"type": "integer", "minimum": 2.5, "maximum": 7.9}));
    let got: Vec<i32> = (0..10)
        .filter(|n| d.matches(n.to_string().as_bytes()))
        .collect();
    assert_eq!(got, [3, 4, 5, 6, 7]);
    let d = dfa(&json!({"type": "integer", "minimum": 2, "exclusiveMinimum": true, "maximum": 5}));
    let got: Vec<i32> = (0..10)
        .filter(|n| d.matches(n.to_string().as_bytes()))
        .collect();
    assert_eq!(got, [3, 4, 5]);
}
