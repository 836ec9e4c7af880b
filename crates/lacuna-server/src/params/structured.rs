//! Structured outputs and tools in a request body: OpenAI's `response_format`, `tools`,
//! `tool_choice` and `parallel_tool_calls`; vLLM's `structured_outputs` object and its older
//! `guided_*` fields; llama-server's `json_schema` and `grammar`. Each becomes one
//! [`Spec`] (at most one source per request, a 400 naming the second otherwise) or one
//! [`ToolUse`]; compiling the spec is the engine's, at `prepare`.

use lacuna::structured::Spec;
use lacuna::tools::{Tool, ToolChoice, ToolError, ToolUse};
use serde::Deserialize;
use serde_json::Value;

use super::{Flag, List, ListWhat, Text};
use crate::error::ApiError;

/// `response_format`: `{"type": "text" | "json_object" | "json_schema"}`; `json_schema`
/// carries `{name, description, schema, strict}`. llama-server's `schema` beside `type`
/// (with `json_object` or `json_schema`) is read as the schema too.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct ResponseFormat {
    #[serde(rename = "type")]
    kind: Option<Text>,
    json_schema: Option<JsonSchemaFormat>,
    schema: Option<Value>,
}

/// `response_format.json_schema`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct JsonSchemaFormat {
    /// Checked to be a string; not used.
    #[serde(rename = "name")]
    _name: Option<Text>,
    /// Checked to be a string; not used.
    #[serde(rename = "description")]
    _description: Option<Text>,
    schema: Option<Value>,
    /// Every answer fits the schema exactly whether or not this is set.
    #[serde(rename = "strict")]
    _strict: Option<Flag>,
}

/// vLLM's `structured_outputs`: one of `json`, `regex`, `choice`, `grammar`, `json_object`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct StructuredOutputs {
    json: Option<Value>,
    regex: Option<Text>,
    choice: Option<List<Text, Strings>>,
    grammar: Option<Text>,
    json_object: Option<Flag>,
}

impl StructuredOutputs {
    /// Each constraint given, to `push` with its parameter: `prefix` + the field's name
    /// (`structured_outputs.json`, or vLLM's older `guided_json`).
    fn push_into(self, push: &mut impl FnMut(Spec, &str), prefix: &str) -> Result<(), ApiError> {
        let param = |name: &str| format!("{prefix}{name}");
        if let Some(j) = self.json {
            let p = param("json");
            push(Spec::JsonSchema(schema_value(j, &p)?), &p);
        }
        if let Some(r) = self.regex {
            push(Spec::Regex(r.0), &param("regex"));
        }
        if let Some(c) = self.choice {
            push(choice(c), &param("choice"));
        }
        if let Some(g) = self.grammar {
            push(Spec::Grammar(g.0), &param("grammar"));
        }
        if self.json_object.is_some_and(|f| f.0) {
            push(Spec::JsonObject, &param("json_object"));
        }
        Ok(())
    }
}

/// What a [`List`] of strings is.
#[derive(Debug, Clone)]
pub(crate) enum Strings {}

impl ListWhat for Strings {
    const WHAT: &'static str = "an array of strings";
}

/// The constraint fields of a body, as given.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources {
    pub(crate) response_format: Option<ResponseFormat>,
    pub(crate) structured_outputs: Option<StructuredOutputs>,
    pub(crate) guided_json: Option<Value>,
    pub(crate) guided_regex: Option<Text>,
    pub(crate) guided_choice: Option<List<Text, Strings>>,
    pub(crate) guided_grammar: Option<Text>,
    pub(crate) json_schema: Option<Value>,
    pub(crate) grammar: Option<Text>,
}

/// A constraint and the parameter it came from (the one its errors name).
#[derive(Debug, Clone)]
pub(crate) struct Sourced {
    pub(crate) spec: Spec,
    pub(crate) param: String,
}

/// A JSON Schema given as an object, or (vLLM) as a string holding one.
fn schema_value(v: Value, param: &str) -> Result<Value, ApiError> {
    let v = match v {
        Value::String(s) => serde_json::from_str(&s)
            .map_err(|e| ApiError::invalid(param, format!("`{param}` is not valid JSON: {e}")))?,
        v => v,
    };
    match v {
        Value::Object(_) | Value::Bool(_) => Ok(v),
        _ => Err(ApiError::invalid(
            param,
            format!("`{param}` must be a JSON Schema (an object)"),
        )),
    }
}

fn choice(list: List<Text, Strings>) -> Spec {
    Spec::Choice(list.0.into_iter().map(|t| t.0).collect())
}

impl Sources {
    /// The one constraint these fields ask for, if any; two sources are a 400 naming the
    /// second.
    pub(crate) fn constraint(self) -> Result<Option<Sourced>, ApiError> {
        let mut found: Vec<Sourced> = Vec::new();
        let mut push = |spec: Spec, param: &str| {
            found.push(Sourced {
                spec,
                param: param.to_string(),
            });
        };
        if let Some(rf) = self.response_format {
            let kind = rf.kind.as_ref().map(|t| t.0.as_str());
            let given_schema = rf.json_schema.and_then(|j| j.schema);
            match kind {
                Some("text") => {}
                Some("json_object") => match rf.schema {
                    Some(s) => push(
                        Spec::JsonSchema(schema_value(s, "response_format.schema")?),
                        "response_format.schema",
                    ),
                    None => push(Spec::JsonObject, "response_format"),
                },
                Some("json_schema") => match (given_schema, rf.schema) {
                    (Some(s), _) => push(
                        Spec::JsonSchema(schema_value(s, "response_format.json_schema.schema")?),
                        "response_format.json_schema.schema",
                    ),
                    (None, Some(s)) => push(
                        Spec::JsonSchema(schema_value(s, "response_format.schema")?),
                        "response_format.schema",
                    ),
                    // OpenAI: a json_schema format without a schema is any JSON object.
                    (None, None) => push(Spec::JsonObject, "response_format.json_schema"),
                },
                Some(other) => {
                    return Err(ApiError::invalid(
                        "response_format.type",
                        format!(
                            "`response_format.type` must be `text`, `json_object` or \
                             `json_schema`, got `{other}`"
                        ),
                    ));
                }
                None => {
                    return Err(ApiError::invalid(
                        "response_format.type",
                        "`response_format.type` is required",
                    ));
                }
            }
        }
        if let Some(so) = self.structured_outputs {
            so.push_into(&mut push, "structured_outputs.")?;
        }
        StructuredOutputs {
            json: self.guided_json,
            regex: self.guided_regex,
            choice: self.guided_choice,
            grammar: self.guided_grammar,
            json_object: None,
        }
        .push_into(&mut push, "guided_")?;
        if let Some(j) = self.json_schema {
            push(
                Spec::JsonSchema(schema_value(j, "json_schema")?),
                "json_schema",
            );
        }
        if let Some(g) = self.grammar {
            push(Spec::Grammar(g.0), "grammar");
        }
        if found.len() > 1 {
            return Err(ApiError::invalid(
                found[1].param.clone(),
                format!(
                    "`{}` and `{}` both constrain the answer: give one",
                    found[0].param, found[1].param
                ),
            ));
        }
        Ok(found.pop())
    }
}

/// One entry of `tools`: `{"type": "function", "function": {...}}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct ToolDef {
    #[serde(rename = "type")]
    kind: Option<Text>,
    function: Option<FunctionDef>,
}

/// `tools[i].function`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct FunctionDef {
    name: Option<Text>,
    description: Option<Text>,
    parameters: Option<Value>,
    /// The arguments fit `parameters` exactly whether or not this is set.
    #[serde(rename = "strict")]
    _strict: Option<Flag>,
}

/// What a [`List`] of tools is.
#[derive(Debug, Clone)]
pub(crate) enum Tools {}

impl ListWhat for Tools {
    const WHAT: &'static str = "an array of tools";
}

/// `tools`, `tool_choice` and `parallel_tool_calls` as one checked [`ToolUse`]; `None`
/// when no tools are given and no choice asks for one.
pub(crate) fn tool_use(
    tools: Option<List<ToolDef, Tools>>,
    choice: Option<&Value>,
    parallel: Option<Flag>,
) -> Result<Option<ToolUse>, ApiError> {
    let defs = tools.map(|l| l.0).unwrap_or_default();
    let mut list = Vec::with_capacity(defs.len());
    for (i, d) in defs.into_iter().enumerate() {
        let param = format!("tools[{i}]");
        match d.kind.as_ref().map(|t| t.0.as_str()) {
            Some("function") => {}
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("{param}.type"),
                    format!("tools of type `{other}` are not supported (function only)"),
                )
                .with_code("unsupported_parameter"));
            }
            None => {
                return Err(ApiError::invalid(
                    format!("{param}.type"),
                    format!("`{param}.type` is required (`function`)"),
                ));
            }
        }
        let Some(f) = d.function else {
            return Err(ApiError::invalid(
                format!("{param}.function"),
                format!("`{param}.function` is required"),
            ));
        };
        let Some(name) = f.name else {
            return Err(ApiError::invalid(
                format!("{param}.function.name"),
                format!("`{param}.function.name` is required"),
            ));
        };
        list.push(Tool {
            name: name.0,
            description: f.description.map(|t| t.0),
            parameters: f.parameters,
        });
    }
    let choice = match choice {
        None | Some(Value::Null) if list.is_empty() => return Ok(None),
        None | Some(Value::Null) => ToolChoice::Auto,
        Some(Value::String(s)) => match s.as_str() {
            "none" => ToolChoice::None,
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            other => {
                return Err(ApiError::invalid(
                    "tool_choice",
                    format!(
                        "`tool_choice` must be `none`, `auto`, `required` or \
                         {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}, got `{other}`"
                    ),
                ));
            }
        },
        Some(v) => {
            let name = v
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .filter(|_| v.get("type").and_then(Value::as_str) == Some("function"));
            match name {
                Some(n) => ToolChoice::Function(n.to_string()),
                None => {
                    return Err(ApiError::invalid(
                        "tool_choice",
                        "`tool_choice` as an object must be \
                         {\"type\": \"function\", \"function\": {\"name\": ...}}",
                    ));
                }
            }
        }
    };
    let parallel = parallel.is_none_or(|f| f.0);
    ToolUse::new(list, choice, parallel)
        .map(Some)
        .map_err(|e| tool_error(&e))
}

/// A [`ToolError`] as the 400 naming its field.
fn tool_error(e: &ToolError) -> ApiError {
    let param = match e {
        ToolError::Parameters { index, .. } => format!("tools[{index}].function.parameters"),
        ToolError::UnknownTool { .. } | ToolError::NoTools => "tool_choice".to_string(),
        _ => "tools".to_string(),
    };
    let e = ApiError::invalid(param, e.to_string());
    match e.param.as_deref() {
        Some(p) if p.ends_with(".parameters") => e.with_code("unsupported_schema"),
        _ => e,
    }
}
