//! `lacuna eval`: exact-match accuracy of a decoding mode on problems with known answers
//! (`task<TAB>prompt<TAB>answer` lines), with the forwards and time each answer cost; the
//! quality half of the fast modes' trade-off.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use lacuna::eval::{self, Answered, Problem, TaskScore};

use crate::run::{ModelArgs, SamplingArgs, flag_name};

/// Arguments of `lacuna eval`.
#[derive(clap::Args, Debug)]
pub(crate) struct EvalArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Problems, one per line: task, prompt and answer separated by tabs (the prompt is used
    /// as raw text; an answer is right when it equals the expected one, whitespace-trimmed).
    #[arg(long)]
    problems: PathBuf,
    /// Only the first N problems of each task.
    #[arg(long)]
    per_task: Option<usize>,
    /// Answers of a reference decoding (an earlier run's --answers file) to report the
    /// agreement with.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Write every answer here: task, prompt, generated text, right (1/0), forwards, ms.
    #[arg(long)]
    answers: Option<PathBuf>,
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Print the totals as JSON.
    #[arg(long)]
    json: bool,
    /// Multiple choice: rank each answer against the wrong answers in the problem's further
    /// fields by log-likelihood after the prompt, instead of generating (seeded by --seed).
    #[arg(long)]
    choices: bool,
    /// With --choices: mask sets per likelihood estimate (exact where there are no more
    /// sets than this).
    #[arg(long, default_value_t = lacuna::likelihood::DEFAULT_SAMPLES)]
    likelihood_samples: usize,
}

/// The generated texts of an `--answers` file, in order, checked against the problems.
fn read_reference(path: &PathBuf, problems: &[Problem]) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 6 {
            bail!(
                "{}, line {}: not an --answers line (6 tab-separated fields)",
                path.display(),
                i + 1
            );
        }
        out.push(f[2].to_string());
    }
    if out.len() != problems.len()
        || !text
            .lines()
            .zip(problems)
            .all(|(l, p)| l.split('\t').nth(1) == Some(p.prompt.as_str()))
    {
        bail!(
            "{} answers other problems than these ({} lines for {} problems)",
            path.display(),
            out.len(),
            problems.len()
        );
    }
    Ok(out)
}

/// Tabs and newlines of a generated text, escaped so that an answers line stays one line.
fn one_line(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
}

fn score_json(s: &TaskScore) -> serde_json::Value {
    serde_json::json!({
        "task": s.task,
        "problems": s.n,
        "correct": s.correct,
        "accuracy": s.accuracy(),
        "agreement": s.agreement(),
        "tokens_per_forward": s.tokens_per_forward(),
        "forwards_per_answer": s.forwards_per_answer(),
        "ms_per_answer": s.ms_per_answer(),
    })
}

/// Runs every problem and prints the totals per task.
pub(crate) fn run(a: EvalArgs) -> Result<()> {
    let text = std::fs::read_to_string(&a.problems)
        .with_context(|| format!("reading {}", a.problems.display()))?;
    let mut problems = eval::parse_problems(&text)?;
    if let Some(n) = a.per_task {
        problems = eval::first_per_task(&problems, n);
    }
    let reference = a
        .reference
        .as_ref()
        .map(|r| read_reference(r, &problems))
        .transpose()?;
    let settings = a.model.settings(a.sampling.settings());
    let mut engine = a.model.load().context("loading the model")?;
    // Settings errors surface before the first problem, in the CLI's spelling.
    settings
        .request(lacuna::Prompt::Text(String::new()), engine.arch())
        .map_err(|e| anyhow::anyhow!(e.message(&flag_name)))?;
    let mut answers: Vec<Answered> = Vec::with_capacity(problems.len());
    let mut file = a
        .answers
        .as_ref()
        .map(|p| std::fs::File::create(p).with_context(|| format!("creating {}", p.display())))
        .transpose()?
        .map(std::io::BufWriter::new);
    if a.choices {
        if let Some(p) = problems.iter().find(|p| p.wrong.is_empty()) {
            bail!(
                "--choices needs wrong answers after the answer on every line; {:?} has none",
                p.prompt
            );
        }
    }
    let scoring = lacuna::likelihood::Scoring {
        samples: a.likelihood_samples,
        seed: settings.seed.unwrap_or(0),
        top: 0,
    };
    for p in &problems {
        let ans = if a.choices {
            engine.choose(p, &scoring)
        } else {
            engine.answer(p, &settings)
        }
        .map_err(crate::run::flat)?;
        if let Some(f) = file.as_mut() {
            writeln!(
                f,
                "{}\t{}\t{}\t{}\t{}\t{:.2}",
                p.task,
                p.prompt,
                one_line(&ans.text),
                u8::from(ans.correct),
                ans.forwards,
                ans.ms
            )?;
        }
        answers.push(ans);
    }
    if let Some(mut f) = file {
        f.flush()?;
    }
    let scores = eval::score(&problems, &answers, reference.as_deref());
    if a.json {
        let doc = serde_json::json!({
            "model": engine.name(),
            "threads": engine.threads(),
            "problems": a.problems.display().to_string(),
            "tasks": scores.iter().map(score_json).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("task   problems  accuracy  agreement  tokens/fwd  fwd/answer  ms/answer");
        for s in &scores {
            let agree = s
                .agreement()
                .map_or("-".to_string(), |g| format!("{:.1}%", 100.0 * g));
            println!(
                "{:<6} {:>8}  {:>7.1}%  {:>9}  {:>10.2}  {:>10.1}  {:>9.2}",
                s.task,
                s.n,
                100.0 * s.accuracy(),
                agree,
                s.tokens_per_forward(),
                s.forwards_per_answer(),
                s.ms_per_answer()
            );
        }
    }
    Ok(())
}
