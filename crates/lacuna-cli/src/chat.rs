//! `lacuna chat`: an interactive multi-turn conversation through the chat template.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context, Result, bail};
use lacuna::{ChatMessage, Prompt};

use crate::run::{ModelArgs, SamplingArgs, generate_shown};

/// Arguments of `lacuna chat`.
#[derive(clap::Args, Debug)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// A system message opening the conversation.
    #[arg(long)]
    system: Option<String>,
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Redraw the canvas in the terminal after every step.
    #[arg(long)]
    visual: bool,
}

const HELP: &str = "type a message and press Enter; /reset forgets the conversation, /exit (or end of input) quits";

/// Reads user turns from stdin until end of input or `/exit`, answering each.
pub(crate) fn run(a: ChatArgs) -> Result<()> {
    if a.sampling.logprobs.is_some() {
        bail!("--logprobs is reported by `lacuna run --json` only");
    }
    let mut engine = a.model.load().context("loading the model")?;
    if !engine.has_chat_template() {
        bail!("the model has no chat template (tokenizer.chat_template); use `lacuna run --raw`");
    }
    if a.model.demo == Some(lacuna::Demo::Kjv) {
        eprintln!("demo model: a tiny LLaDA trained on the King James Bible; it answers in verses");
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!("{HELP}");
    }
    let opening: Vec<ChatMessage> = a
        .system
        .iter()
        .map(|s| ChatMessage::new("system", s.as_str()))
        .collect();
    let mut history = opening.clone();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("> ");
            std::io::stderr().flush().ok();
        }
        let Some(line) = lines.next() else { break };
        let line = line.context("reading stdin")?;
        let text = line.trim();
        match text {
            "" => continue,
            "/exit" | "/quit" => break,
            "/reset" => {
                history = opening.clone();
                eprintln!("(conversation reset)");
                continue;
            }
            _ => {}
        }
        history.push(ChatMessage::new("user", text));
        let request = a
            .sampling
            .request(&a.model, Prompt::Chat(history.clone()), engine.arch())?;
        let out = match generate_shown(&mut engine, &request, a.visual) {
            Ok(out) => out,
            Err(e) => {
                history.pop();
                return Err(e);
            }
        };
        println!("{}", out.text.trim());
        std::io::stdout().flush().ok();
        tracing::info!(
            tokens = out.tokens.len(),
            total_s = out.timings.total_s,
            "turn done"
        );
        history.push(ChatMessage::new("assistant", out.text.trim()));
    }
    Ok(())
}
