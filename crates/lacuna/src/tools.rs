//! Tool calls (function calling) on any chat template, in a generic format: the tools are
//! described to the model in a system message, and the answer is constrained (structured
//! output) to one JSON object, either the calls — `{"tool_calls": [{"name", "arguments"}]}`,
//! or `{"tool_call": {...}}` when calls may not run in parallel — or, where the model may
//! answer in text, `{"response": "..."}`. Each call's `arguments` is constrained to its
//! tool's `parameters` schema, and its `name` to the tools offered, so a parsed call is
//! always one the caller can run. Earlier turns' calls and results are written back in the
//! same format (as assistant and user messages), so templates without tool roles render
//! them. This is the format llama-server's generic handler uses; templates with their own
//! tool syntax are not read.

use serde_json::{Value, json};

use lacuna_structured::{Limits, Spec, check_schema};
use lacuna_tokenizer::ChatMessage;

/// A function the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Its name (letters, digits, `_` and `-`, at most 64).
    pub name: String,
    /// What it does, for the model.
    pub description: Option<String>,
    /// A JSON Schema of its arguments (an object schema); `None`: no arguments.
    pub parameters: Option<Value>,
}

/// Whether and which tools the model must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// Answer in text; the tools are not offered.
    None,
    /// Call tools or answer in text, as the model chooses.
    Auto,
    /// Call one or more tools.
    Required,
    /// Call this tool.
    Function(String),
}

/// One call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool.
    pub name: String,
    /// Its arguments (valid under the tool's `parameters`).
    pub arguments: Value,
}

/// What a tool-using answer says.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolAnswer {
    /// The calls to run, in order.
    Calls(Vec<ToolCall>),
    /// A text answer.
    Text(String),
}

/// Why a tool request cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// Two tools share a name.
    #[error("two tools are named `{name}`")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A name that is empty, too long or has other characters.
    #[error("tool name `{name}` must be 1 to 64 letters, digits, `_` or `-`")]
    BadName {
        /// The name.
        name: String,
    },
    /// `tool_choice` names a tool that is not offered.
    #[error("`tool_choice` names `{name}`, which is not one of the tools")]
    UnknownTool {
        /// The name.
        name: String,
    },
    /// `tool_choice` asks for calls but no tool is offered.
    #[error("`tool_choice` asks for a tool call but no tools are given")]
    NoTools,
    /// A tool's `parameters` schema the structured-output compiler does not take.
    #[error("tool `{name}`'s parameters: {source}")]
    Parameters {
        /// Index of the tool.
        index: usize,
        /// The tool.
        name: String,
        /// Why.
        source: lacuna_structured::Error,
    },
}

/// A request's tools and how they may be used.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    tools: Vec<Tool>,
    choice: ToolChoice,
    parallel: bool,
}

impl ToolUse {
    /// Checks the tools (names, parameter schemas) and the choice.
    pub fn new(tools: Vec<Tool>, choice: ToolChoice, parallel: bool) -> Result<Self, ToolError> {
        for (i, t) in tools.iter().enumerate() {
            let ok = !t.name.is_empty()
                && t.name.len() <= 64
                && t.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(ToolError::BadName {
                    name: t.name.clone(),
                });
            }
            if tools[..i].iter().any(|u| u.name == t.name) {
                return Err(ToolError::DuplicateName {
                    name: t.name.clone(),
                });
            }
            check_schema(&parameters(t), &Limits::default()).map_err(|source| {
                ToolError::Parameters {
                    index: i,
                    name: t.name.clone(),
                    source,
                }
            })?;
        }
        match &choice {
            ToolChoice::Function(name) if !tools.iter().any(|t| &t.name == name) => {
                return Err(ToolError::UnknownTool { name: name.clone() });
            }
            ToolChoice::Required | ToolChoice::Function(_) if tools.is_empty() => {
                return Err(ToolError::NoTools);
            }
            _ => {}
        }
        Ok(ToolUse {
            tools,
            choice,
            parallel,
        })
    }

    /// Whether the answer is constrained to the tool format (not with `none` or no tools).
    pub fn active(&self) -> bool {
        self.choice != ToolChoice::None && !self.tools.is_empty()
    }

    /// The tools the model may call under the choice.
    fn offered(&self) -> Vec<&Tool> {
        match &self.choice {
            ToolChoice::Function(name) => self.tools.iter().filter(|t| &t.name == name).collect(),
            _ => self.tools.iter().collect(),
        }
    }

    /// Whether several calls may come in one answer (never for a named function).
    fn many(&self) -> bool {
        self.parallel && !matches!(self.choice, ToolChoice::Function(_))
    }

    /// The chat messages with the tools described in the system message (a system message
    /// first, merged into the first one if there is one). Unchanged when not [`active`].
    ///
    /// [`active`]: ToolUse::active
    pub fn messages(&self, mut messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
        if !self.active() {
            return messages;
        }
        let described: Vec<Value> = self
            .offered()
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": parameters(t)}))
            .collect();
        let list: Vec<String> = described.iter().map(Value::to_string).collect();
        let call = r#"{"name": "<tool name>", "arguments": {<its arguments>}}"#;
        let calls = if self.many() {
            format!(r#"{{"tool_calls": [{call}, ...]}}"#)
        } else {
            format!(r#"{{"tool_call": {call}}}"#)
        };
        let answer = match self.choice {
            ToolChoice::Auto => format!(
                "To call a tool, answer with {calls}. To reply to the user instead, answer \
                 with {{\"response\": \"<your reply>\"}}."
            ),
            _ => format!("Answer with {calls}."),
        };
        let prompt = format!(
            "You can call these tools (each line: a tool's name, what it does, and the JSON \
             Schema of its arguments):\n{}\n\n{answer} Answer with the JSON object only.",
            list.join("\n")
        );
        match messages.first_mut() {
            Some(m) if m.role == "system" => {
                m.content = format!("{}\n\n{prompt}", m.content);
            }
            _ => messages.insert(0, ChatMessage::new("system", prompt)),
        }
        messages
    }

    /// The structured-output constraint of the answer; `None` when not [`active`].
    ///
    /// [`active`]: ToolUse::active
    pub fn constraint(&self) -> Option<Spec> {
        if !self.active() {
            return None;
        }
        let call_schemas: Vec<Value> = self
            .offered()
            .iter()
            .map(|t| {
                json!({
                    "type": "object",
                    "properties": {"name": {"const": t.name}, "arguments": parameters(t)},
                    "required": ["name", "arguments"],
                    "additionalProperties": false,
                })
            })
            .collect();
        let call = if call_schemas.len() == 1 {
            call_schemas.into_iter().next().expect("one")
        } else {
            json!({"anyOf": call_schemas})
        };
        let calls = if self.many() {
            json!({
                "type": "object",
                "properties": {"tool_calls": {"type": "array", "items": call, "minItems": 1}},
                "required": ["tool_calls"],
                "additionalProperties": false,
            })
        } else {
            json!({
                "type": "object",
                "properties": {"tool_call": call},
                "required": ["tool_call"],
                "additionalProperties": false,
            })
        };
        Some(Spec::JsonSchema(match self.choice {
            ToolChoice::Auto => json!({"anyOf": [calls, {
                "type": "object",
                "properties": {"response": {"type": "string"}},
                "required": ["response"],
                "additionalProperties": false,
            }]}),
            _ => calls,
        }))
    }

    /// The answer a constrained generation's text says (a text that is not in the format,
    /// which a constrained answer never is, is returned as text).
    pub fn parse(&self, text: &str) -> ToolAnswer {
        let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(text) else {
            return ToolAnswer::Text(text.to_string());
        };
        let to_call = |v: Value| -> Option<ToolCall> {
            let Value::Object(mut c) = v else { return None };
            Some(ToolCall {
                name: c.remove("name")?.as_str()?.to_string(),
                arguments: c.remove("arguments").unwrap_or(json!({})),
            })
        };
        if let Some(Value::Array(calls)) = o.remove("tool_calls") {
            return ToolAnswer::Calls(calls.into_iter().filter_map(to_call).collect());
        }
        if let Some(call) = o.remove("tool_call").and_then(to_call) {
            return ToolAnswer::Calls(vec![call]);
        }
        match o.remove("response") {
            Some(Value::String(s)) => ToolAnswer::Text(s),
            _ => ToolAnswer::Text(text.to_string()),
        }
    }
}

/// A tool's parameters schema; no arguments when it has none.
fn parameters(t: &Tool) -> Value {
    t.parameters.clone().unwrap_or_else(
        || json!({"type": "object", "properties": {}, "additionalProperties": false}),
    )
}

/// An earlier assistant turn that called tools, in the format the model answers in.
pub fn calls_message(content: Option<&str>, calls: &[ToolCall]) -> ChatMessage {
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| json!({"name": c.name, "arguments": c.arguments}))
        .collect();
    let mut text = json!({"tool_calls": calls}).to_string();
    if let Some(c) = content.filter(|c| !c.is_empty()) {
        text = format!("{c}\n{text}");
    }
    ChatMessage::new("assistant", text)
}

/// A tool's result, as a user message the model reads (any template has the user role).
pub fn result_message(tool_call_id: &str, name: Option<&str>, content: &str) -> ChatMessage {
    let mut r = json!({"tool_call_id": tool_call_id, "content": content});
    if let Some(n) = name {
        r["name"] = json!(n);
    }
    ChatMessage::new("user", json!({"tool_response": r}).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> Tool {
        Tool {
            name: "get_weather".into(),
            description: Some("The weather in a city".into()),
            parameters: Some(
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
        }
    }

    #[test]
    fn choices_are_checked_against_the_tools() {
        let t = || vec![weather()];
        assert!(ToolUse::new(t(), ToolChoice::Auto, true).is_ok());
        assert_eq!(
            ToolUse::new(t(), ToolChoice::Function("nope".into()), true).unwrap_err(),
            ToolError::UnknownTool {
                name: "nope".into()
            }
        );
        assert_eq!(
            ToolUse::new(vec![], ToolChoice::Required, true).unwrap_err(),
            ToolError::NoTools
        );
        let two = vec![weather(), weather()];
        assert!(matches!(
            ToolUse::new(two, ToolChoice::Auto, true),
            Err(ToolError::DuplicateName { .. })
        ));
        let bad = Tool {
            parameters: Some(json!({"type": "object", "not": {}})),
            ..weather()
        };
        assert!(matches!(
            ToolUse::new(vec![bad], ToolChoice::Auto, true),
            Err(ToolError::Parameters { index: 0, .. })
        ));
        let none = ToolUse::new(t(), ToolChoice::None, true).unwrap();
        assert!(!none.active() && none.constraint().is_none());
    }

    #[test]
    fn answers_parse_into_calls_or_text() {
        let u = ToolUse::new(vec![weather()], ToolChoice::Auto, true).unwrap();
        assert_eq!(
            u.parse(r#"{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}"#),
            ToolAnswer::Calls(vec![ToolCall {
                name: "get_weather".into(),
                arguments: json!({"city": "Paris"})
            }])
        );
        assert_eq!(
            u.parse(r#"{"response": "hello"}"#),
            ToolAnswer::Text("hello".into())
        );
        let m = u.messages(vec![ChatMessage::new("user", "hi")]);
        assert_eq!(m[0].role, "system");
        assert!(m[0].content.contains("get_weather"));
    }
}
