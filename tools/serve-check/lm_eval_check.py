"""lm-evaluation-harness against `lacuna serve`, with the harness's own `local-completions`
model at its defaults (remote tokenizer auto-detected through /tokenizer_info and /tokenize,
token-id prompts, 4 concurrent requests): a generate_until task and a multiple-choice task
built from the task model's held-out problems. Their scores must equal what `lacuna eval`
gives for the same problems (generating, and `--choices` ranking by log-likelihood).

    python3 tools/serve-check/lm_eval_check.py target/debug/lacuna

Needs `lm_eval[api]` (tools/serve-check/requirements.txt); no torch, no network.
"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lacuna_server import LacunaServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "tools/train-tiny/results/tasks/heldout.tsv"
CHOICES = ROOT / "tools/train-tiny/results/tasks/choices.tsv"
MODEL = "lacuna-demo-tasks"
PER_TASK = 20
SAMPLES = 16  # mask sets per likelihood estimate, on both sides
SEED = 1234  # lm-evaluation-harness's default seed

# LLaDA's exact schedule on the task canvas, as tests/task_model.rs uses it.
GEN = {"gen_length": 32, "steps": 32, "block_length": 8}


def problems(task, n):
    out = []
    for line in HELDOUT.read_text().splitlines():
        t, prompt, answer = line.split("\t")
        if t == task and len(out) < n:
            out.append((prompt, answer))
    return out


def write_tasks(d):
    gen = problems("add", PER_TASK) + problems("rev", PER_TASK)
    with open(d / "gen.jsonl", "w") as f:
        for prompt, answer in gen:
            f.write(json.dumps({"prompt": prompt, "answer": answer}) + "\n")
    with open(d / "gen.tsv", "w") as f:
        for (prompt, answer), task in zip(gen, ["add"] * PER_TASK + ["rev"] * PER_TASK):
            f.write(f"{task}\t{prompt}\t{answer}\n")
    # The multiple-choice problems: the committed file `lacuna eval --choices` reads (the
    # right sum, then four wrong ones, each ending with the end token).
    mc = [line.split("\t")[1:] for line in CHOICES.read_text().splitlines()]
    with open(d / "mc.jsonl", "w") as f:
        for prompt, *choices in mc:
            f.write(json.dumps({"prompt": prompt, "choices": choices}) + "\n")
    diffusion = {"steps": GEN["steps"], "block_length": GEN["block_length"]}
    (d / "lacuna_gen.yaml").write_text(f"""task: lacuna_tasks_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {d / 'gen.jsonl'}
test_split: test
output_type: generate_until
doc_to_text: prompt
doc_to_target: answer
target_delimiter: ""
generation_kwargs:
  until: []
  max_gen_toks: {GEN['gen_length']}
  do_sample: false
  temperature: 0
  diffusion: {json.dumps(diffusion)}
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    regexes_to_ignore: ["^\\\\s+", "\\\\s+$"]
""")
    (d / "lacuna_mc.yaml").write_text(f"""task: lacuna_add_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {d / 'mc.jsonl'}
test_split: test
output_type: multiple_choice
doc_to_text: prompt
doc_to_choice: choices
doc_to_target: 0
target_delimiter: ""
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
""")
    return len(gen), len(mc)


def lacuna_eval(binary, problems_file, *extra):
    cmd = [binary, "eval", "--demo", "tasks", "--problems", str(problems_file), "--json", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    tasks = json.loads(out)["tasks"]
    correct = sum(t["correct"] for t in tasks)
    return correct / sum(t["problems"] for t in tasks)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/debug/lacuna"
    import lm_eval  # noqa: F401  (fail early, before the server starts)
    from importlib.metadata import version
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        n_gen, n_mc = write_tasks(d)
        want_gen = lacuna_eval(binary, d / "gen.tsv", "--gen-length", str(GEN["gen_length"]),
                               "--steps", str(GEN["steps"]), "--block-length",
                               str(GEN["block_length"]))
        want_mc = lacuna_eval(binary, CHOICES, "--choices", "--likelihood-samples",
                              str(SAMPLES), "--seed", str(SEED))
        print(f"lacuna eval: generate {want_gen:.3f} over {n_gen}, choices {want_mc:.3f} "
              f"over {n_mc}")
        args = ["--demo", "tasks", "--likelihood-samples", str(SAMPLES)]
        with LacunaServer(binary, args) as s:
            model_args = (f"model={MODEL},base_url={s.base_url}/v1/completions,"
                          f"num_concurrent=4")
            cmd = [sys.executable, "-m", "lm_eval", "--model", "local-completions",
                   "--model_args", model_args, "--tasks", "lacuna_tasks_gen,lacuna_add_choice",
                   "--include_path", str(d), "--output_path", str(d / "out")]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"FAIL lm_eval exited {run.returncode}:\n{run.stdout[-3000:]}\n"
                         f"{run.stderr[-6000:]}\nserver log:\n{s.log()[-3000:]}")
            log = run.stderr
        if "remote tokenizer" not in log.lower():
            sys.exit(f"FAIL lm_eval did not pick the server's tokenizer:\n{log[-4000:]}")
        results = json.loads(next((d / "out").rglob("results*.json")).read_text())["results"]
        got_gen = results["lacuna_tasks_gen"]["exact_match,none"]
        got_mc = results["lacuna_add_choice"]["acc,none"]
    print(f"lm_eval {version('lm_eval')} local-completions: generate {got_gen:.3f}, "
          f"choices {got_mc:.3f}")
    ok = True
    for name, got, want in [("generate_until", got_gen, want_gen),
                            ("multiple_choice", got_mc, want_mc)]:
        same = abs(got - want) < 1e-9
        ok &= same
        print(f"{'ok  ' if same else 'FAIL'} {name}: lm_eval {got:.3f}, lacuna eval {want:.3f}")
    if want_gen < 0.8 or want_mc < 0.8:
        print(f"FAIL the task model scores below 0.8 ({want_gen:.3f}, {want_mc:.3f})")
        ok = False
    print(f"{'all lm_eval checks passed' if ok else 'lm_eval checks FAILED'} in "
          f"{time.monotonic() - t0:.1f} s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
