//! Exact-match evaluation on problems with known answers: what a decoding mode costs in
//! answers, beside the forwards and time it saves. Problems come as tab-separated lines
//! (`task<TAB>prompt<TAB>answer`, the format of `tools/train-tiny/results/heldout.tsv`);
//! each prompt is generated as raw text (no chat template) and the answer is right when it
//! equals the expected one with surrounding whitespace stripped. Further fields are wrong
//! answers, for multiple choice: [`Engine::choose`] ranks the answer and them by their
//! log-likelihood after the prompt ([`crate::likelihood`]) instead of generating.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use crate::likelihood::Scoring;
use crate::{Engine, Prompt, Result, Settings};

/// One problem: its task's name, the raw prompt and the expected answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The task it belongs to (results are reported per task).
    pub task: String,
    /// The prompt, used as raw text.
    pub prompt: String,
    /// The expected answer.
    pub answer: String,
    /// Wrong answers to rank it against (multiple choice; may be empty).
    pub wrong: Vec<String>,
}

/// A problem file that cannot be read: the 1-based line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemsError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ProblemsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "problem file: {}", self.reason)
        } else {
            write!(f, "problem file, line {}: {}", self.line, self.reason)
        }
    }
}

impl std::error::Error for ProblemsError {}

/// Parses `task<TAB>prompt<TAB>answer` lines (empty lines are skipped).
pub fn parse_problems(text: &str) -> std::result::Result<Vec<Problem>, ProblemsError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let err = |reason: String| ProblemsError {
            line: i + 1,
            reason,
        };
        let [task, prompt, answer, ref wrong @ ..] = fields[..] else {
            return Err(err(format!(
                "expected at least 3 tab-separated fields (task, prompt, answer), found {}",
                fields.len()
            )));
        };
        if task.is_empty() || prompt.is_empty() {
            return Err(err("the task and the prompt must not be empty".into()));
        }
        if wrong.iter().any(|w| w.is_empty()) {
            return Err(err(
                "a wrong answer (a field after the answer) is empty".into()
            ));
        }
        out.push(Problem {
            task: task.to_string(),
            prompt: prompt.to_string(),
            answer: answer.to_string(),
            wrong: wrong.iter().map(|w| w.to_string()).collect(),
        });
    }
    if out.is_empty() {
        return Err(ProblemsError {
            line: 0,
            reason: "no problems".into(),
        });
    }
    Ok(out)
}

/// The first `n` problems of each task, in file order.
pub fn first_per_task(problems: &[Problem], n: usize) -> Vec<Problem> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    problems
        .iter()
        .filter(|p| {
            let c = seen.entry(p.task.as_str()).or_default();
            *c += 1;
            *c <= n
        })
        .cloned()
        .collect()
}

/// Whether `got` answers `want`: equal once surrounding whitespace is stripped.
pub fn answers_match(got: &str, want: &str) -> bool {
    got.trim() == want.trim()
}

/// What one generation answered and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    /// The generated text (end tokens cut).
    pub text: String,
    /// Whether it matches the expected answer.
    pub correct: bool,
    /// Denoiser calls.
    pub forwards: usize,
    /// Canvas tokens committed per denoiser call ([`Output::tokens_per_forward`](crate::Output::tokens_per_forward)).
    pub tokens_per_forward: f64,
    /// Wall time of the generation, in milliseconds.
    pub ms: f64,
}

impl Engine {
    /// Generates `problem`'s prompt as raw text under `settings` and checks the answer.
    pub fn answer(&mut self, problem: &Problem, settings: &Settings) -> Result<Answered> {
        let request = settings.request(Prompt::Text(problem.prompt.clone()), self.arch())?;
        let start = Instant::now();
        let out = self.generate(&request, |_| {})?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(Answered {
            correct: answers_match(&out.text, &problem.answer),
            forwards: out.stats.denoiser_calls,
            tokens_per_forward: out.tokens_per_forward(),
            text: out.text,
            ms,
        })
    }
}

impl Engine {
    /// Ranks `problem`'s answer against its wrong answers by their log-likelihood after the
    /// prompt (raw text, BOS as the vocabulary asks), as lm-evaluation-harness's multiple
    /// choice does: each choice is the tokens of `prompt + choice` past those of `prompt`,
    /// scored with [`Engine::score`]; right when the answer scores highest. `text` is the
    /// choice picked; `forwards` the passes of all the choices.
    pub fn choose(&mut self, problem: &Problem, scoring: &Scoring) -> Result<Answered> {
        let start = Instant::now();
        let tok = self.tokenizer();
        let ctx = tok.encode(&problem.prompt, true, true)?;
        let mut best: Option<(f64, &str)> = None;
        let mut forwards = 0;
        for choice in std::iter::once(&problem.answer).chain(&problem.wrong) {
            let tokens =
                self.tokenizer()
                    .encode(&format!("{}{choice}", problem.prompt), true, true)?;
            // lm-evaluation-harness's split: the joint encoding past the prompt's length.
            let at = ctx.len().min(tokens.len());
            let echo = self.score(&tokens, scoring)?;
            forwards += echo.passes;
            let value: f64 = echo.logprobs[at.max(1)..].iter().flatten().sum();
            if best.is_none_or(|(b, _)| value > b) {
                best = Some((value, choice));
            }
        }
        let text = best.map_or(String::new(), |(_, c)| c.to_string());
        Ok(Answered {
            correct: text == problem.answer,
            text,
            forwards,
            tokens_per_forward: 0.0,
            ms: start.elapsed().as_secs_f64() * 1e3,
        })
    }
}

/// One task's totals.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskScore {
    /// The task.
    pub task: String,
    /// Problems answered.
    pub n: usize,
    /// Right answers.
    pub correct: usize,
    /// Answers equal to the reference decoding's (when one was given).
    pub agree: Option<usize>,
    /// Denoiser calls, summed.
    pub forwards: usize,
    /// Tokens per forward, summed over problems (divide by `n`).
    pub tokens_per_forward_sum: f64,
    /// Milliseconds, summed.
    pub ms: f64,
}

impl TaskScore {
    /// Exact-match accuracy, 0..1.
    pub fn accuracy(&self) -> f64 {
        ratio(self.correct as f64, self.n)
    }
    /// Agreement with the reference decoding, 0..1.
    pub fn agreement(&self) -> Option<f64> {
        self.agree.map(|a| ratio(a as f64, self.n))
    }
    /// Mean denoiser calls per answer.
    pub fn forwards_per_answer(&self) -> f64 {
        ratio(self.forwards as f64, self.n)
    }
    /// Mean tokens committed per denoiser call.
    pub fn tokens_per_forward(&self) -> f64 {
        ratio(self.tokens_per_forward_sum, self.n)
    }
    /// Mean milliseconds per answer.
    pub fn ms_per_answer(&self) -> f64 {
        ratio(self.ms, self.n)
    }
}

fn ratio(x: f64, n: usize) -> f64 {
    if n == 0 { 0.0 } else { x / n as f64 }
}

/// Totals per task (sorted by name) of `answers` to `problems`; `reference` (the texts an
/// exact decoding answered, in the same order) adds the agreement.
pub fn score(
    problems: &[Problem],
    answers: &[Answered],
    reference: Option<&[String]>,
) -> Vec<TaskScore> {
    let mut by: BTreeMap<&str, TaskScore> = BTreeMap::new();
    for (i, (p, a)) in problems.iter().zip(answers).enumerate() {
        let s = by.entry(p.task.as_str()).or_insert_with(|| TaskScore {
            task: p.task.clone(),
            agree: reference.map(|_| 0),
            ..TaskScore::default()
        });
        s.n += 1;
        s.correct += usize::from(a.correct);
        s.forwards += a.forwards;
        s.tokens_per_forward_sum += a.tokens_per_forward;
        s.ms += a.ms;
        if let (Some(agree), Some(r)) = (s.agree.as_mut(), reference.and_then(|r| r.get(i))) {
            *agree += usize::from(r.trim() == a.text.trim());
        }
    }
    by.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_files_parse_and_bad_lines_are_named() {
        let p = parse_problems("add\tadd: 1+2=\t3\n\nrev\trev: ab =\t ba\n").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].answer, " ba");
        let e = parse_problems("add\tadd: 1+2=\t3\nadd\tno answer\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("found 2"), "{e}");
        assert_eq!(parse_problems("\n").unwrap_err().line, 0);
        assert!(parse_problems("\tp\ta").is_err());
        let m = parse_problems("add\tadd: 1+2=\t3\t4\t30\n").unwrap();
        assert_eq!(m[0].wrong, ["4", "30"]);
        assert_eq!(parse_problems("add\tadd: 1+2=\t3\t\n").unwrap_err().line, 1);
    }

    #[test]
    fn scores_count_per_task_and_agreement() {
        let p = parse_problems("a\tx\t1\nb\ty\t2\na\tz\t3\n").unwrap();
        assert_eq!(first_per_task(&p, 1).len(), 2);
        let ans = |t: &str, ok| Answered {
            text: t.into(),
            correct: ok,
            forwards: 4,
            tokens_per_forward: 2.0,
            ms: 10.0,
        };
        let a = [ans("1", true), ans("5", false), ans(" 9", false)];
        let reference = ["1".to_string(), "2".into(), "9".into()];
        let s = score(&p, &a, Some(&reference));
        assert_eq!(s[0].task, "a");
        assert_eq!((s[0].n, s[0].correct, s[0].agree), (2, 1, Some(2)));
        assert_eq!(s[0].accuracy(), 0.5);
        assert_eq!(s[1].agreement(), Some(0.0));
        assert_eq!(s[0].forwards_per_answer(), 4.0);
        assert!(answers_match(" 0 7 ", "0 7"));
        assert!(!answers_match("07", "0 7"));
    }
}
