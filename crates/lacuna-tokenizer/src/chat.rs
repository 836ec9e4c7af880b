//! Chat templates: `tokenizer.chat_template` (Jinja, as in Hugging Face
//! `tokenizer_config.json`) rendered with minijinja.
//!
//! Supported: what the LLaDA-8B-Instruct, LLaDA-MoE and Dream-Instruct templates use —
//! `messages`, `add_generation_prompt`, `bos_token`, `eos_token`, loops with `loop.*`,
//! `set`, filters such as `trim`, `raise_exception(msg)`, and the Python string methods
//! `strip`/`lstrip`/`rstrip`/`startswith`/`endswith`/`upper`/`lower`/`split`. Anything else
//! (an unknown function, filter, method or tag) is an [`Error::Template`] naming it.

use minijinja::value::Value;
use minijinja::{Environment, ErrorKind, State};
use serde::Serialize;

use crate::{Error, Result, Tokenizer};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message with `role` and `content`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// A compiled chat template with the special-token texts it may reference.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

const NAME: &str = "chat_template";

fn raise_exception(msg: String) -> Result<Value, minijinja::Error> {
    Err(minijinja::Error::new(
        ErrorKind::InvalidOperation,
        format!("template raised: {msg}"),
    ))
}

fn string_method(value: &Value, method: &str, args: &[Value]) -> Result<Value, minijinja::Error> {
    let Some(s) = value.as_str() else {
        return Err(minijinja::Error::new(
            ErrorKind::UnknownMethod,
            format!(
                "method {method}() on a {} value is not supported",
                value.kind()
            ),
        ));
    };
    let arg = |i: usize| args.get(i).and_then(Value::as_str);
    let chars = |i: usize| -> Vec<char> { arg(i).map(|a| a.chars().collect()).unwrap_or_default() };
    Ok(match method {
        "strip" if args.is_empty() => Value::from(s.trim()),
        "lstrip" if args.is_empty() => Value::from(s.trim_start()),
        "rstrip" if args.is_empty() => Value::from(s.trim_end()),
        "strip" => Value::from(s.trim_matches(chars(0).as_slice())),
        "lstrip" => Value::from(s.trim_start_matches(chars(0).as_slice())),
        "rstrip" => Value::from(s.trim_end_matches(chars(0).as_slice())),
        "startswith" => Value::from(arg(0).is_some_and(|p| s.starts_with(p))),
        "endswith" => Value::from(arg(0).is_some_and(|p| s.ends_with(p))),
        "upper" => Value::from(s.to_uppercase()),
        "lower" => Value::from(s.to_lowercase()),
        "split" => match arg(0) {
            Some(sep) => Value::from(s.split(sep).map(Value::from).collect::<Vec<_>>()),
            None => Value::from(s.split_whitespace().map(Value::from).collect::<Vec<_>>()),
        },
        _ => {
            return Err(minijinja::Error::new(
                ErrorKind::UnknownMethod,
                format!("string method {method}() is not supported by Lacuna's chat templates"),
            ));
        }
    })
}

impl ChatTemplate {
    /// Compiles `source`; a syntax error is reported with its line.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self> {
        let mut env = Environment::new();
        env.set_keep_trailing_newline(false);
        env.add_function("raise_exception", raise_exception);
        env.set_unknown_method_callback(
            |_state: &State, value: &Value, method: &str, args: &[Value]| {
                string_method(value, method, args)
            },
        );
        env.add_template_owned(NAME, source.to_owned())?;
        Ok(Self {
            env,
            bos_token: bos_token.to_owned(),
            eos_token: eos_token.to_owned(),
        })
    }

    /// The template of a tokenizer's file, with its BOS/EOS texts.
    pub fn from_tokenizer(tok: &Tokenizer) -> Result<Self> {
        let vocab = tok.vocab();
        let source = vocab.chat_template().ok_or(Error::NoChatTemplate)?;
        let text = |id: Option<u32>| {
            id.and_then(|i| vocab.token_text(i))
                .unwrap_or("")
                .to_owned()
        };
        let special = vocab.special();
        Self::new(source, &text(special.bos), &text(special.eos))
    }

    /// Renders `messages`; with `add_generation_prompt` the template opens an assistant turn.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let tmpl = self.env.get_template(NAME)?;
        let ctx = minijinja::context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token,
            eos_token => self.eos_token,
        };
        Ok(tmpl.render(ctx)?)
    }
}

#[cfg(test)]
mod tests;
