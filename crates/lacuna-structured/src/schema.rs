//! JSON Schema to a regular language of JSON texts.
//!
//! Every text of the language validates against the schema; the language may be smaller
//! than the schema's (objects are written with their properties in the declared order,
//! only declared properties, one optional space after `:` and `,`, numbers under bounds
//! without exponents and with at most 12 fraction digits, dates with at most 28 days in
//! February). What a regular language cannot express exactly is refused with the keyword
//! named: recursion, `uniqueItems`, `multipleOf`, `not`, conditionals, `pattern` beside
//! length bounds, non-integer number bounds, overlapping `oneOf` alternatives.
//!
//! Supported: `type` (one or a list), `properties`, `required`, `additionalProperties`
//! (`false`, or a schema when there are no properties: a map), `items`, `prefixItems`,
//! `minItems`, `maxItems`, `enum`, `const`, `anyOf`, `oneOf` (disjoint alternatives),
//! `allOf` (one element), `$ref` to `#`, `#/$defs/...` and `#/definitions/...`, string
//! `minLength`, `maxLength`, `pattern`, `format` (`date-time`, `date`, `time`, `uuid`,
//! `email`, `ipv4`), integer and number `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (draft 4's boolean form too). Annotations (`title`, `description`,
//! `default`, `examples`, `$schema`, `$id`, `$comment`, `deprecated`, `readOnly`,
//! `writeOnly`) are ignored. The empty schema is any JSON value, nested at most
//! [`Limits::json_depth`] deep.

use regex_syntax::hir::Hir;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::hir::{
    Bound, alt, cat, chars, digit, int_range, json_number, json_pattern, json_string, lit,
    number_range, opt, rep, ws,
};

/// Keywords that carry no constraint.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$defs",
    "definitions",
];

/// Bounds on how the language is built.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaLimits {
    /// Nesting of a value whose schema says nothing about it (`{}`, `{"type": "object"}`).
    pub(crate) json_depth: usize,
    /// The largest `minItems`/`maxItems`/`minLength`/`maxLength` accepted (each bounded
    /// repetition is that many copies of its item in the automaton).
    pub(crate) max_repeat: u32,
}

/// The language of the JSON texts valid under `schema`.
pub(crate) fn schema_hir(schema: &Value, limits: SchemaLimits) -> Result<Hir> {
    let mut c = Compiler {
        root: schema,
        limits,
        refs: Vec::new(),
    };
    c.schema(schema, "#")
}

/// Any JSON value nested at most `depth` deep (objects and arrays count one level each).
pub(crate) fn any_json(depth: usize) -> Hir {
    let scalar = alt(vec![
        json_string(0, None),
        json_number(),
        lit("true"),
        lit("false"),
        lit("null"),
    ]);
    let mut value = scalar.clone();
    for _ in 0..depth {
        value = alt(vec![
            scalar.clone(),
            object_of(&value),
            array_of(&value, 0, None),
        ]);
    }
    value
}

/// Any JSON object nested at most `depth` deep (the object itself is one level).
pub(crate) fn any_object(depth: usize) -> Hir {
    object_of(&any_json(depth.saturating_sub(1)))
}

/// Objects whose keys are any strings and whose values are `value`.
fn object_of(value: &Hir) -> Hir {
    let pair = cat(vec![json_string(0, None), lit(":"), ws(), value.clone()]);
    alt(vec![
        lit("{}"),
        cat(vec![
            lit("{"),
            pair.clone(),
            rep(cat(vec![lit(","), ws(), pair]), 0, None),
            lit("}"),
        ]),
    ])
}

/// Arrays of `min` to `max` items of `item`.
fn array_of(item: &Hir, min: u32, max: Option<u32>) -> Hir {
    let sep_item = cat(vec![lit(","), ws(), item.clone()]);
    let nonempty = |min: u32, max: Option<u32>| {
        cat(vec![
            lit("["),
            item.clone(),
            rep(sep_item.clone(), min.saturating_sub(1), max.map(|m| m - 1)),
            lit("]"),
        ])
    };
    match (min, max) {
        (_, Some(0)) => lit("[]"),
        (0, max) => alt(vec![lit("[]"), nonempty(1, max)]),
        (min, max) => nonempty(min, max),
    }
}

struct Compiler<'a> {
    root: &'a Value,
    limits: SchemaLimits,
    /// The `$ref`s being expanded (a cycle is recursion).
    refs: Vec<String>,
}

impl<'a> Compiler<'a> {
    fn schema(&mut self, s: &'a Value, path: &str) -> Result<Hir> {
        match s {
            Value::Bool(true) => return Ok(any_json(self.limits.json_depth)),
            Value::Bool(false) => return Ok(alt(Vec::new())),
            Value::Object(_) => {}
            _ => return Err(invalid(path, "a schema must be an object or a boolean")),
        }
        let o = s.as_object().expect("an object");
        for key in o.keys() {
            if !KNOWN.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
                return Err(unsupported(
                    key,
                    path,
                    "not supported by structured outputs",
                ));
            }
        }
        if let Some(r) = o.get("$ref") {
            let others = o
                .keys()
                .any(|k| k != "$ref" && !ANNOTATIONS.contains(&k.as_str()));
            if others {
                return Err(unsupported("$ref", path, "beside other keywords"));
            }
            return self.reference(r, path);
        }
        if let Some(v) = o.get("const") {
            return self.with_type_check(o, path, vec![v.clone()]);
        }
        if let Some(v) = o.get("enum") {
            let Value::Array(values) = v else {
                return Err(invalid(path, "`enum` must be an array"));
            };
            return self.with_type_check(o, path, values.clone());
        }
        if let Some(v) = o.get("anyOf") {
            return self.combination(o, v, path, "anyOf", false);
        }
        if let Some(v) = o.get("oneOf") {
            return self.combination(o, v, path, "oneOf", true);
        }
        if let Some(v) = o.get("allOf") {
            let Value::Array(items) = v else {
                return Err(invalid(path, "`allOf` must be an array"));
            };
            if items.len() != 1 {
                return Err(unsupported("allOf", path, "with more than one schema"));
            }
            let others = o
                .keys()
                .any(|k| k != "allOf" && !ANNOTATIONS.contains(&k.as_str()));
            if others {
                return Err(unsupported("allOf", path, "beside other keywords"));
            }
            return self.schema(&items[0], &format!("{path}/allOf/0"));
        }
        let types: Vec<&str> = match o.get("type") {
            None => inferred_types(o),
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts
                .iter()
                .map(|t| {
                    t.as_str()
                        .ok_or_else(|| invalid(path, "`type` must hold strings"))
                })
                .collect::<Result<_>>()?,
            Some(_) => return Err(invalid(path, "`type` must be a string or an array")),
        };
        if types.is_empty() {
            return Ok(any_json(self.limits.json_depth));
        }
        let mut alts = Vec::new();
        for t in types {
            alts.push(match t {
                "object" => self.object(o, path)?,
                "array" => self.array(o, path)?,
                "string" => self.string(o, path)?,
                "integer" => self.integer(o, path)?,
                "number" => self.number(o, path)?,
                "boolean" => alt(vec![lit("true"), lit("false")]),
                "null" => lit("null"),
                other => return Err(invalid(path, &format!("unknown type `{other}`"))),
            });
        }
        Ok(alt(alts))
    }

    /// `const`/`enum` values as JSON texts (compact), each checked against a `type` beside.
    fn with_type_check(
        &mut self,
        o: &Map<String, Value>,
        path: &str,
        values: Vec<Value>,
    ) -> Result<Hir> {
        let types: Option<Vec<&str>> = match o.get("type") {
            None => None,
            Some(Value::String(t)) => Some(vec![t.as_str()]),
            Some(Value::Array(ts)) => Some(ts.iter().filter_map(Value::as_str).collect()),
            Some(_) => return Err(invalid(path, "`type` must be a string or an array")),
        };
        let mut alts = Vec::new();
        for v in values {
            if let Some(ts) = &types
                && !ts.iter().any(|t| type_matches(t, &v))
            {
                continue;
            }
            alts.push(lit(&serde_json::to_string(&v).unwrap_or_default()));
        }
        if alts.is_empty() {
            return Err(invalid(
                path,
                "no `enum`/`const` value has the schema's `type`",
            ));
        }
        Ok(alt(alts))
    }

    fn reference(&mut self, r: &Value, path: &str) -> Result<Hir> {
        let Value::String(r) = r else {
            return Err(invalid(path, "`$ref` must be a string"));
        };
        if self.refs.contains(r) {
            return Err(Error::RecursiveSchema {
                reference: r.clone(),
            });
        }
        let target = resolve(self.root, r).ok_or_else(|| {
            invalid(path, &format!("`$ref` {r} does not resolve (only local refs: #, #/$defs/..., #/definitions/...)"))
        })?;
        self.refs.push(r.clone());
        let h = self.schema(target, r);
        self.refs.pop();
        h
    }

    fn combination(
        &mut self,
        o: &'a Map<String, Value>,
        v: &'a Value,
        path: &str,
        kw: &str,
        disjoint: bool,
    ) -> Result<Hir> {
        let Value::Array(items) = v else {
            return Err(invalid(path, &format!("`{kw}` must be an array")));
        };
        if items.is_empty() {
            return Err(invalid(path, &format!("`{kw}` must not be empty")));
        }
        let others = o
            .keys()
            .any(|k| k != kw && !ANNOTATIONS.contains(&k.as_str()));
        if others {
            return Err(unsupported(
                kw,
                path,
                "beside other keywords (write them into each alternative)",
            ));
        }
        let alts = items
            .iter()
            .enumerate()
            .map(|(i, s)| self.schema(s, &format!("{path}/{kw}/{i}")))
            .collect::<Result<Vec<_>>>()?;
        if disjoint {
            crate::disjoint::check(&alts).map_err(|(a, b)| {
                unsupported(kw, path, &format!(
                    "alternatives {a} and {b} overlap (an answer could match both, which oneOf forbids); use anyOf"
                ))
            })?;
        }
        Ok(alt(alts))
    }

    fn object(&mut self, o: &'a Map<String, Value>, path: &str) -> Result<Hir> {
        let props = match o.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => return Err(invalid(path, "`properties` must be an object")),
        };
        let required: Vec<&str> = match o.get("required") {
            None => Vec::new(),
            Some(Value::Array(r)) => r
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| invalid(path, "`required` must hold strings"))
                })
                .collect::<Result<_>>()?,
            Some(_) => return Err(invalid(path, "`required` must be an array")),
        };
        let additional = o.get("additionalProperties");
        let Some(props) = props.filter(|p| !p.is_empty()) else {
            if let Some(r) = required.first() {
                return Err(invalid(
                    path,
                    &format!("required property `{r}` is not in `properties`"),
                ));
            }
            return Ok(match additional {
                Some(Value::Bool(false)) => lit("{}"),
                Some(s @ Value::Object(_)) => {
                    let v = self.schema(s, &format!("{path}/additionalProperties"))?;
                    object_of(&v)
                }
                _ => any_object(self.limits.json_depth),
            });
        };
        if let Some(r) = required.iter().find(|r| !props.contains_key(**r)) {
            return Err(invalid(
                path,
                &format!("required property `{r}` is not in `properties`"),
            ));
        }
        // Each property as `"name": value`, in the declared order.
        let mut items: Vec<(Hir, bool)> = Vec::new();
        for (name, s) in props {
            let key = lit(&serde_json::to_string(name).unwrap_or_default());
            let value = self.schema(s, &format!("{path}/properties/{}", escape_pointer(name)))?;
            items.push((
                cat(vec![key, lit(":"), ws(), value]),
                required.contains(&name.as_str()),
            ));
        }
        Ok(cat(vec![lit("{"), properties(&items), lit("}")]))
    }

    fn array(&mut self, o: &'a Map<String, Value>, path: &str) -> Result<Hir> {
        if o.get("uniqueItems")
            .is_some_and(|u| u != &Value::Bool(false))
        {
            return Err(unsupported("uniqueItems", path, "not regular"));
        }
        let min = self.count(o, "minItems", path)?.unwrap_or(0);
        let max = self.count(o, "maxItems", path)?;
        if max.is_some_and(|m| m < min) {
            return Err(Error::Empty);
        }
        if let Some(Value::Array(prefix)) = o.get("prefixItems") {
            let n = prefix.len() as u32;
            if o.get("items").is_some_and(|i| i != &Value::Bool(false)) {
                return Err(unsupported(
                    "items",
                    path,
                    "beside prefixItems (only `items: false`)",
                ));
            }
            if min > n || max.is_some_and(|m| m < n) {
                return Err(unsupported(
                    "prefixItems",
                    path,
                    "with minItems/maxItems other than its length",
                ));
            }
            let items = prefix
                .iter()
                .enumerate()
                .map(|(i, s)| self.schema(s, &format!("{path}/prefixItems/{i}")))
                .collect::<Result<Vec<_>>>()?;
            let mut parts = vec![lit("[")];
            for (i, h) in items.into_iter().enumerate() {
                if i > 0 {
                    parts.push(lit(","));
                    parts.push(ws());
                }
                parts.push(h);
            }
            parts.push(lit("]"));
            return Ok(cat(parts));
        }
        let item = match o.get("items") {
            None | Some(Value::Bool(true)) => any_json(self.limits.json_depth.saturating_sub(1)),
            Some(Value::Bool(false)) => {
                return Ok(if min == 0 { lit("[]") } else { alt(Vec::new()) });
            }
            Some(s) => self.schema(s, &format!("{path}/items"))?,
        };
        Ok(array_of(&item, min, max))
    }

    fn string(&mut self, o: &'a Map<String, Value>, path: &str) -> Result<Hir> {
        let min = self.count(o, "minLength", path)?;
        let max = self.count(o, "maxLength", path)?;
        if let (Some(a), Some(b)) = (min, max)
            && a > b
        {
            return Err(Error::Empty);
        }
        let pattern = match o.get("pattern") {
            None => None,
            Some(Value::String(p)) => Some(p),
            Some(_) => return Err(invalid(path, "`pattern` must be a string")),
        };
        let format = match o.get("format") {
            None => None,
            Some(Value::String(f)) => Some(f.as_str()),
            Some(_) => return Err(invalid(path, "`format` must be a string")),
        };
        let bounded = min.is_some() || max.is_some();
        if let Some(p) = pattern {
            if bounded {
                return Err(unsupported(
                    "pattern",
                    path,
                    "together with minLength/maxLength",
                ));
            }
            if format.is_some() {
                return Err(unsupported("pattern", path, "together with format"));
            }
            return Ok(cat(vec![lit("\""), json_pattern(p)?, lit("\"")]));
        }
        if let Some(f) = format {
            if bounded {
                return Err(unsupported(
                    "format",
                    path,
                    "together with minLength/maxLength",
                ));
            }
            return Ok(cat(vec![
                lit("\""),
                format_hir(f).ok_or_else(|| {
                    unsupported(
                        "format",
                        path,
                        &format!("`{f}` (supported: date-time, date, time, uuid, email, ipv4)"),
                    )
                })?,
                lit("\""),
            ]));
        }
        Ok(json_string(min.unwrap_or(0), max))
    }

    fn integer(&mut self, o: &'a Map<String, Value>, path: &str) -> Result<Hir> {
        let (lo, hi) = self.bounds(o, path, true)?;
        let lo = lo.map(|b| if b.inclusive { b.value } else { b.value + 1 });
        let hi = hi.map(|b| if b.inclusive { b.value } else { b.value - 1 });
        int_range(lo, hi).ok_or(Error::Empty)
    }

    fn number(&mut self, o: &'a Map<String, Value>, path: &str) -> Result<Hir> {
        let (lo, hi) = self.bounds(o, path, false)?;
        if lo.is_none() && hi.is_none() {
            return Ok(json_number());
        }
        number_range(lo, hi).ok_or(Error::Empty)
    }

    /// `minimum`/`exclusiveMinimum` and `maximum`/`exclusiveMaximum` (draft 4's boolean
    /// exclusive forms too) as integer bounds, the tighter of each side. An integer schema
    /// rounds fractional bounds inward; a number schema refuses them.
    fn bounds(
        &self,
        o: &Map<String, Value>,
        path: &str,
        integer: bool,
    ) -> Result<(Option<Bound>, Option<Bound>)> {
        if o.contains_key("multipleOf") {
            return Err(unsupported("multipleOf", path, "not supported"));
        }
        let num = |k: &str| -> Result<Option<f64>> {
            match o.get(k) {
                None => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(Value::Bool(_)) if k.starts_with("exclusive") => Ok(None),
                Some(_) => Err(invalid(path, &format!("`{k}` must be a number"))),
            }
        };
        let draft4 = |k: &str| o.get(k) == Some(&Value::Bool(true));
        let side = |incl: Option<f64>,
                    excl: Option<f64>,
                    d4: bool,
                    lower: bool|
         -> Result<Option<Bound>> {
            let mut best: Option<(f64, bool)> = None;
            if let Some(v) = incl {
                best = Some((v, !d4));
            }
            if let Some(v) = excl {
                let tighter = best.is_none_or(|(b, _)| if lower { v >= b } else { v <= b });
                if tighter {
                    best = Some((v, false));
                }
            }
            let Some((v, inclusive)) = best else {
                return Ok(None);
            };
            if !v.is_finite() || v.abs() > 1e30 {
                return Err(invalid(path, "a bound out of range"));
            }
            if v.fract() == 0.0 {
                return Ok(Some(Bound {
                    value: v as i128,
                    inclusive,
                }));
            }
            if !integer {
                return Err(unsupported(
                    if lower { "minimum" } else { "maximum" },
                    path,
                    &format!("{v} on a number (only integer-valued bounds are supported)"),
                ));
            }
            // An integer above 2.5 is at least 3 (inclusive).
            let r = if lower { v.ceil() } else { v.floor() };
            Ok(Some(Bound {
                value: r as i128,
                inclusive: true,
            }))
        };
        let lo = side(
            num("minimum")?,
            num("exclusiveMinimum")?,
            draft4("exclusiveMinimum"),
            true,
        )?;
        let hi = side(
            num("maximum")?,
            num("exclusiveMaximum")?,
            draft4("exclusiveMaximum"),
            false,
        )?;
        Ok((lo, hi))
    }

    fn count(&self, o: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u32>> {
        match o.get(key) {
            None => Ok(None),
            Some(v) => {
                let n = v.as_u64().ok_or_else(|| {
                    invalid(path, &format!("`{key}` must be a non-negative integer"))
                })?;
                if n > self.limits.max_repeat as u64 {
                    return Err(unsupported(
                        key,
                        path,
                        &format!("{n} is over the limit of {}", self.limits.max_repeat),
                    ));
                }
                Ok(Some(n as u32))
            }
        }
    }
}

/// Every keyword a schema may use (besides annotations).
const KNOWN: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The types a schema without `type` means by its keywords (none: any value).
fn inferred_types(o: &Map<String, Value>) -> Vec<&'static str> {
    let has = |ks: &[&str]| ks.iter().any(|k| o.contains_key(*k));
    let mut t = Vec::new();
    if has(&["properties", "required", "additionalProperties"]) {
        t.push("object");
    }
    if has(&["items", "prefixItems", "minItems", "maxItems"]) {
        t.push("array");
    }
    if has(&["minLength", "maxLength", "pattern", "format"]) {
        t.push("string");
    }
    if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
        t.push("number");
    }
    t
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// A comma-separated run of `items` in order, the optional ones (`false`) each present or
/// not: the alternatives of which item comes first, every later one preceded by `,`.
fn properties(items: &[(Hir, bool)]) -> Hir {
    let sep = || cat(vec![lit(","), ws()]);
    // after[i]: the items from i on, each with its separator.
    let mut after: Vec<Hir> = vec![Hir::empty(); items.len() + 1];
    for i in (0..items.len()).rev() {
        let (h, required) = &items[i];
        let one = cat(vec![sep(), h.clone()]);
        after[i] = cat(vec![
            if *required { one } else { opt(one) },
            after[i + 1].clone(),
        ]);
    }
    let mut alts = Vec::new();
    for (i, (h, required)) in items.iter().enumerate() {
        alts.push(cat(vec![h.clone(), after[i + 1].clone()]));
        if *required {
            break; // a required item cannot be skipped, so no later one comes first
        }
    }
    if items.iter().all(|(_, r)| !r) {
        alts.push(Hir::empty());
    }
    alt(alts)
}

/// A string format's text (inside the quotes), where it is regular.
fn format_hir(f: &str) -> Option<Hir> {
    let d = digit;
    let n = |k: u32| rep(digit(), k, Some(k));
    let hex = || chars(&[('0', '9'), ('a', 'f'), ('A', 'F')]);
    let hexn = |k: u32| rep(hex(), k, Some(k));
    let date = || {
        let year = cat(vec![chars(&[('1', '9')]), n(3)]);
        let days31 = alt(vec![
            cat(vec![lit("0"), chars(&[('1', '9')])]),
            cat(vec![chars(&[('1', '2')]), d()]),
            lit("30"),
            lit("31"),
        ]);
        let days30 = alt(vec![
            cat(vec![lit("0"), chars(&[('1', '9')])]),
            cat(vec![chars(&[('1', '2')]), d()]),
            lit("30"),
        ]);
        let days28 = alt(vec![
            cat(vec![lit("0"), chars(&[('1', '9')])]),
            cat(vec![lit("1"), d()]),
            cat(vec![lit("2"), chars(&[('0', '8')])]),
        ]);
        let m31 = alt(["01", "03", "05", "07", "08", "10", "12"].map(lit).to_vec());
        let m30 = alt(["04", "06", "09", "11"].map(lit).to_vec());
        cat(vec![
            year,
            lit("-"),
            alt(vec![
                cat(vec![m31, lit("-"), days31]),
                cat(vec![m30, lit("-"), days30]),
                cat(vec![lit("02-"), days28]),
            ]),
        ])
    };
    let time = || {
        let hh = alt(vec![
            cat(vec![chars(&[('0', '1')]), d()]),
            cat(vec![lit("2"), chars(&[('0', '3')])]),
        ]);
        let mm = || cat(vec![chars(&[('0', '5')]), d()]);
        let offset = alt(vec![
            lit("Z"),
            cat(vec![
                chars(&[('+', '+'), ('-', '-')]),
                hh.clone(),
                lit(":"),
                mm(),
            ]),
        ]);
        cat(vec![
            hh,
            lit(":"),
            mm(),
            lit(":"),
            mm(),
            opt(cat(vec![lit("."), rep(d(), 1, Some(9))])),
            offset,
        ])
    };
    Some(match f {
        "date" => date(),
        "time" => time(),
        "date-time" => cat(vec![date(), lit("T"), time()]),
        "uuid" => cat(vec![
            hexn(8),
            lit("-"),
            hexn(4),
            lit("-"),
            hexn(4),
            lit("-"),
            hexn(4),
            lit("-"),
            hexn(12),
        ]),
        "email" => {
            // A conservative dot-atom: what strict validators (RFC 5321/5322 hostnames) accept.
            let atom = || {
                rep(
                    chars(&[
                        ('a', 'z'),
                        ('A', 'Z'),
                        ('0', '9'),
                        ('_', '_'),
                        ('%', '%'),
                        ('+', '+'),
                        ('-', '-'),
                    ]),
                    1,
                    Some(20),
                )
            };
            let alnum = || chars(&[('a', 'z'), ('A', 'Z'), ('0', '9')]);
            // Letters and digits with single hyphens between them.
            let label = cat(vec![
                alnum(),
                rep(cat(vec![opt(lit("-")), alnum()]), 0, Some(20)),
            ]);
            let tld = rep(chars(&[('a', 'z'), ('A', 'Z')]), 2, Some(10));
            cat(vec![
                atom(),
                rep(cat(vec![lit("."), atom()]), 0, Some(3)),
                lit("@"),
                rep(cat(vec![label, lit(".")]), 1, Some(3)),
                tld,
            ])
        }
        "ipv4" => {
            let octet = alt(vec![
                cat(vec![lit("25"), chars(&[('0', '5')])]),
                cat(vec![lit("2"), chars(&[('0', '4')]), d()]),
                cat(vec![lit("1"), d(), d()]),
                cat(vec![chars(&[('1', '9')]), d()]),
                d(),
            ]);
            cat(vec![
                octet.clone(),
                rep(cat(vec![lit("."), octet]), 3, Some(3)),
            ])
        }
        _ => return None,
    })
}

/// The schema at the local reference `r` (`#`, `#/a/b` with `~0`/`~1` escapes).
fn resolve<'v>(root: &'v Value, r: &str) -> Option<&'v Value> {
    let pointer = r.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn invalid(path: &str, message: &str) -> Error {
    Error::InvalidSchema {
        path: path.to_string(),
        message: message.to_string(),
    }
}

fn unsupported(keyword: &str, path: &str, why: &str) -> Error {
    Error::UnsupportedKeyword {
        keyword: keyword.to_string(),
        path: path.to_string(),
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests;
