//! Structured outputs on a diffusion canvas: the generated region of a canvas is kept a word
//! of a regular language whichever positions a step commits, so that a JSON schema's answer
//! always parses and validates.
//!
//! A [`Spec`] (a JSON Schema, any JSON object, a regex, a choice among strings, a regular
//! GBNF grammar) is compiled once per vocabulary ([`compile`]): to `regex-syntax` HIR (this
//! crate's [`schema`](crate::schema) and GBNF translations; the regex and HIR parser of the
//! `regex` crate), then to a minimized byte DFA (`regex-automata`), then to a token
//! automaton over the vocabulary's byte strings ([`tokens`](crate::tokens)). The result, a
//! [`Compiled`], is a [`lacuna_sampler::Constraint`]: each generation gets a state that
//! tracks, across the canvas, which automaton states every boundary between positions can
//! be in given the committed tokens and the masks, forward and backward, and from it the
//! tokens each masked position may take and whether a step's commits can stand together
//! (see [`lacuna_sampler::constraint`] for how samplers apply it). [`ConstraintCache`] keeps
//! compiled constraints by spec, within a byte budget.
//!
//! ```
//! use lacuna_structured::{Limits, Spec, Vocabulary, compile};
//! // A vocabulary of single characters and one end token (id 3).
//! let vocab = Vocabulary::new(
//!     vec![Some(b"a".to_vec()), Some(b"b".to_vec()), Some(b"c".to_vec()), None],
//!     vec![3],
//! );
//! let c = compile(&Spec::Regex("a(b|c)+".into()), &vocab, &Limits::default())?;
//! assert_eq!(c.min_tokens(), 2);
//! # Ok::<(), lacuna_structured::Error>(())
//! ```

mod canvas;
mod dfa;
mod disjoint;
mod error;
mod gbnf;
mod hir;
mod schema;
mod tokens;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lacuna_sampler::{Constraint, ConstraintState};

pub use error::{Error, Result};
pub use tokens::Vocabulary;

use crate::dfa::{ByteDfa, DfaLimits};
use crate::schema::SchemaLimits;
use crate::tokens::{TokenAutomaton, TokenLimits};

/// What the answer must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// JSON valid under this JSON Schema (see [`schema`](crate::schema) for the keywords).
    JsonSchema(serde_json::Value),
    /// Any JSON object (OpenAI's `json_object`), nested at most [`Limits::json_depth`] deep.
    JsonObject,
    /// Text the regex matches whole.
    Regex(String),
    /// Exactly one of these strings.
    Choice(Vec<String>),
    /// Text of a GBNF grammar's `root` rule (grammars without recursion only).
    Grammar(String),
}

impl Spec {
    /// A canonical text of the spec (the cache's key).
    pub fn key(&self) -> String {
        match self {
            Spec::JsonSchema(v) => format!("json_schema:{v}"),
            Spec::JsonObject => "json_object".to_string(),
            Spec::Regex(r) => format!("regex:{r}"),
            Spec::Choice(c) => format!("choice:{}", serde_json::Value::from(c.clone())),
            Spec::Grammar(g) => format!("grammar:{g}"),
        }
    }

    /// A short name for logs and errors (`json_schema`, `regex`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Spec::JsonSchema(_) => "json_schema",
            Spec::JsonObject => "json_object",
            Spec::Regex(_) => "regex",
            Spec::Choice(_) => "choice",
            Spec::Grammar(_) => "grammar",
        }
    }
}

/// The compile budget: a constraint over it is an [`Error::TooLarge`], never a hang or a
/// huge allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Nesting of JSON whose schema does not describe it (`json_object`, `{}`).
    pub json_depth: usize,
    /// The largest bounded repetition in a schema (`maxItems`, `maxLength`, ...).
    pub max_repeat: u32,
    /// Bytes of the byte automaton (and of building it).
    pub dfa_bytes: usize,
    /// States of the token automaton.
    pub states: usize,
    /// Work of lifting the automaton to tokens (trie nodes visited).
    pub steps: u64,
    /// Wall-clock milliseconds of the token automaton's build.
    pub millis: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            json_depth: 3,
            max_repeat: 256,
            dfa_bytes: 64 << 20,
            states: 50_000,
            steps: 2_000_000_000,
            millis: 20_000,
        }
    }
}

/// A constraint compiled for one vocabulary.
#[derive(Debug)]
pub struct Compiled {
    auto: Arc<TokenAutomaton>,
    kind: &'static str,
    compile_ms: f64,
}

impl Compiled {
    /// Tokens of the shortest answer.
    pub fn min_tokens(&self) -> usize {
        self.auto.dist[self.auto.start as usize] as usize
    }

    /// [`Error::TooShort`] when no answer fits in `max_tokens`.
    pub fn check_length(&self, max_tokens: usize) -> Result<()> {
        let min_tokens = self.min_tokens();
        if min_tokens > max_tokens {
            return Err(Error::TooShort {
                min_tokens,
                max_tokens,
            });
        }
        Ok(())
    }

    /// States of the token automaton.
    pub fn states(&self) -> usize {
        self.auto.len()
    }

    /// Token classes (tokens that act alike in every state).
    pub fn classes(&self) -> usize {
        self.auto.n_classes
    }

    /// Bytes the compiled constraint holds.
    pub fn bytes(&self) -> usize {
        self.auto.bytes()
    }

    /// Milliseconds the compilation took.
    pub fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    /// What kind of spec it was compiled from.
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

impl Constraint for Compiled {
    fn start(&self, len: usize, free: u32) -> Box<dyn ConstraintState> {
        Box::new(canvas::RegionState::new(Arc::clone(&self.auto), len, free))
    }
}

/// Checks that `schema` is one this compiler takes (its keywords, `$ref`s and bounds),
/// without building its automaton: cheap, for errors that name a part of a request.
pub fn check_schema(schema: &serde_json::Value, limits: &Limits) -> Result<()> {
    let schema_limits = SchemaLimits {
        json_depth: limits.json_depth,
        max_repeat: limits.max_repeat,
    };
    schema::schema_hir(schema, schema_limits).map(|_| ())
}

/// Compiles `spec` for `vocab`.
pub fn compile(spec: &Spec, vocab: &Vocabulary, limits: &Limits) -> Result<Compiled> {
    let began = Instant::now();
    let schema_limits = SchemaLimits {
        json_depth: limits.json_depth,
        max_repeat: limits.max_repeat,
    };
    let hir = match spec {
        Spec::JsonSchema(s) => schema::schema_hir(s, schema_limits)?,
        Spec::JsonObject => schema::any_object(limits.json_depth),
        Spec::Regex(r) => hir::full_regex(r)?,
        Spec::Choice(c) => {
            if c.is_empty() {
                return Err(Error::EmptyChoice);
            }
            hir::alt(c.iter().map(|s| hir::lit(s)).collect())
        }
        Spec::Grammar(g) => gbnf::grammar_hir(g)?,
    };
    let dfa = ByteDfa::build(
        &hir,
        DfaLimits {
            nfa_bytes: limits.dfa_bytes,
            dfa_bytes: limits.dfa_bytes,
        },
    )?;
    let auto = TokenAutomaton::build(
        &dfa,
        vocab,
        TokenLimits {
            states: limits.states,
            steps: limits.steps,
            millis: limits.millis,
        },
    )?;
    Ok(Compiled {
        auto: Arc::new(auto),
        kind: spec.kind(),
        compile_ms: began.elapsed().as_secs_f64() * 1e3,
    })
}

/// Compiled constraints by spec, least recently used first out when over a byte budget.
/// One cache serves one vocabulary.
#[derive(Debug)]
pub struct ConstraintCache {
    budget: usize,
    limits: Limits,
    entries: Mutex<Vec<Entry>>,
}

#[derive(Debug)]
struct Entry {
    hash: u64,
    key: String,
    compiled: Arc<Compiled>,
    used: u64,
}

impl ConstraintCache {
    /// A cache holding at most `budget` bytes of compiled constraints.
    pub fn new(budget: usize, limits: Limits) -> Self {
        ConstraintCache {
            budget,
            limits,
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The compiled `spec` for `vocab`: from the cache, or compiled now (on the calling
    /// thread, outside the cache's lock) and kept. Returns it and whether it was cached.
    pub fn get(&self, spec: &Spec, vocab: &Vocabulary) -> Result<(Arc<Compiled>, bool)> {
        let key = spec.key();
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let hash = h.finish();
        {
            let mut entries = self.lock();
            let tick = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
            if let Some(e) = entries.iter_mut().find(|e| e.hash == hash && e.key == key) {
                e.used = tick;
                return Ok((Arc::clone(&e.compiled), true));
            }
        }
        let compiled = Arc::new(compile(spec, vocab, &self.limits)?);
        let mut entries = self.lock();
        let tick = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
        entries.push(Entry {
            hash,
            key,
            compiled: Arc::clone(&compiled),
            used: tick,
        });
        while entries.len() > 1
            && entries.iter().map(|e| e.compiled.bytes()).sum::<usize>() > self.budget
        {
            let oldest = (0..entries.len())
                .min_by_key(|&i| entries[i].used)
                .expect("entries");
            entries.remove(oldest);
        }
        Ok((compiled, false))
    }

    /// Constraints held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}
