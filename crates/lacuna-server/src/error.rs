//! The one error type of the HTTP API, rendered as OpenAI's error object
//! `{"error": {"message", "type", "param", "code"}}` with the matching status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An API error: an HTTP status and OpenAI's error fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for people.
    pub message: String,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, `not_found_error`,
    /// `rate_limit_error` (queue full), `server_error`, `service_unavailable`.
    pub kind: &'static str,
    /// The request parameter at fault, when there is one.
    pub param: Option<String>,
    /// A machine-readable code (`context_length_exceeded`, `model_not_found`, ...).
    pub code: Option<&'static str>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            kind,
            param: None,
            code: None,
        }
    }

    /// 400: a bad request, naming the parameter.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message);
        e.param = Some(param.into());
        e
    }

    /// 400 with no single parameter at fault (bad JSON, ...).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// 401: missing or wrong API key.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "Incorrect or missing API key: send `Authorization: Bearer <key>` with the key given \
             to `lacuna serve --api-key`",
        )
        .with_code("invalid_api_key")
    }

    /// 404: an unknown route.
    pub fn unknown_route(method: &str, path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("Unknown request URL: {method} {path}"),
        )
        .with_code("unknown_url")
    }

    /// 405: a known route with another method.
    pub fn method_not_allowed(method: &str, path: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request_error",
            format!("{method} is not allowed on {path}"),
        )
        .with_code("method_not_allowed")
    }

    /// 404: a model this server does not serve.
    pub fn unknown_model(model: &str, served: &str) -> Self {
        let mut e = Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("The model `{model}` does not exist; this server serves `{served}`"),
        )
        .with_code("model_not_found");
        e.param = Some("model".into());
        e
    }

    /// 413: the body is over the limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("The request body is larger than the server's limit of {limit} bytes"),
        )
        .with_code("request_too_large")
    }

    /// 429: the queue is full.
    pub fn queue_full(active: usize, queued: usize) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            format!(
                "The server is busy ({active} generations running, {queued} waiting, the queue \
                 is full); retry later"
            ),
        )
        .with_code("queue_full")
    }

    /// 503: the server is shutting down.
    pub fn shutting_down() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "The server is shutting down",
        )
        .with_code("shutting_down")
    }

    /// 500: the engine failed on a request that was valid (a model error, not bad input).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    /// The same error with `code`.
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The JSON body, `{"error": {...}}`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
    }

    /// A request error of the engine (all of them are bad input: the prompt, the context, the
    /// settings) as a 400 naming the parameter where one is at fault.
    pub fn from_prepare(e: &lacuna::Error, prompt_param: &str, constraint_param: &str) -> Self {
        use lacuna::Error as E;
        use lacuna::structured::Error as C;
        let msg = e.to_string();
        match e {
            E::Constraint(C::TooShort { .. }) => {
                Self::invalid("max_tokens", msg).with_code("constraint_too_long")
            }
            E::Constraint(C::TooLarge { .. }) => {
                Self::invalid(constraint_param, msg).with_code("constraint_too_large")
            }
            E::Constraint(
                C::UnsupportedKeyword { .. }
                | C::RecursiveSchema { .. }
                | C::RegexFeature { .. }
                | C::NotRegular { .. },
            ) => Self::invalid(constraint_param, msg).with_code("unsupported_constraint"),
            E::Constraint(_) => {
                Self::invalid(constraint_param, msg).with_code("invalid_constraint")
            }
            E::ContextOverflow { .. } => {
                Self::invalid(prompt_param, msg).with_code("context_length_exceeded")
            }
            E::InfillContextOverflow { .. } => {
                Self::invalid(prompt_param, msg).with_code("context_length_exceeded")
            }
            E::InfillUnsupported { .. } => {
                Self::invalid("suffix", msg).with_code("infill_unsupported")
            }
            E::InfillLengthsWithoutSuffix | E::TooManyInfillLengths { .. } => {
                Self::invalid("diffusion.infill_lengths", msg)
            }
            E::UnsupportedSetting { setting, .. } => {
                Self::invalid(setting_param(setting), msg).with_code("unsupported_parameter")
            }
            E::PromptToken { .. } | E::EmptyChat | E::Tokenizer(_) => {
                Self::invalid(prompt_param, msg)
            }
            E::LikelihoodEmpty => Self::invalid(prompt_param, msg),
            E::LikelihoodTooCostly { .. } => {
                Self::invalid(prompt_param, msg).with_code("scoring_too_costly")
            }
            E::LikelihoodSamples { .. } => Self::invalid("diffusion.likelihood_samples", msg),
            E::LikelihoodUnsupported { .. } => {
                Self::invalid("echo", msg).with_code("unsupported_parameter")
            }
            E::Config(_) => Self::bad_request(format!("impossible settings: {msg}"))
                .with_code("invalid_settings"),
            _ => Self::internal(msg),
        }
    }
}

/// Where a sampler setting lives in a request body.
fn setting_param(setting: &str) -> String {
    match setting {
        "top_p" | "top_k" => setting.to_string(),
        other => format!("diffusion.{other}"),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}
