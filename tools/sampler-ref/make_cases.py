"""Writes the committed sampler test cases: runs the transcription in official.py on the toy
model and stores settings, the draws consumed, the per-step commits and the final canvas.

    pip install numpy
    python3 tools/sampler-ref/make_cases.py           # writes crates/lacuna-sampler/tests/data/*.json
    python3 tools/sampler-ref/make_cases.py --check   # fails if the committed files differ

The Rust test (crates/lacuna-sampler/tests/official_cases.rs) replays each case through
lacuna-sampler with the same toy model and draws and requires identical results.
"""

import json
import os
import sys

import numpy as np

import diffusion_gemma
import official

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "crates", "lacuna-sampler", "tests", "data")

VOCAB = 16
MASK = VOCAB  # outside the vocabulary: the toy model never predicts it
EOS = 2

LLADA = [
    # name, overrides
    ("llada_greedy_one_block", dict(gen_length=12, block_length=12, steps=12)),
    ("llada_greedy_semi_ar", dict(gen_length=16, block_length=4, steps=8)),
    ("llada_uneven_schedule", dict(gen_length=16, block_length=8, steps=6)),
    ("llada_more_steps_than_masks", dict(gen_length=8, block_length=4, steps=16)),
    ("llada_temperature", dict(gen_length=12, block_length=6, steps=6, temperature=0.7)),
    ("llada_temperature_random", dict(gen_length=12, block_length=4, steps=6, temperature=1.0,
                                      remasking="random")),
    ("llada_random_greedy", dict(gen_length=12, block_length=12, steps=5, remasking="random")),
    ("llada_cfg", dict(gen_length=12, block_length=6, steps=4, cfg_scale=1.5)),
    ("llada_cfg_temperature", dict(gen_length=8, block_length=8, steps=4, cfg_scale=0.5,
                                   temperature=0.5)),
    ("llada_prompt_mask", dict(gen_length=8, block_length=4, steps=4, prompt_masks=[1, 3])),
    ("llada_parallel_threshold", dict(gen_length=16, block_length=8, steps=8, threshold=0.9)),
    ("llada_parallel_threshold_low", dict(gen_length=16, block_length=8, steps=8, threshold=0.3,
                                          temperature=0.8)),
    ("llada_parallel_factor", dict(gen_length=16, block_length=8, steps=8, factor=1.0)),
    ("llada_parallel_factor_random", dict(gen_length=12, block_length=4, steps=3, factor=2.0,
                                          remasking="random")),
]

DREAM = [
    ("dream_origin_greedy", dict(gen_length=12, steps=12, alg="origin")),
    ("dream_origin_temperature", dict(gen_length=12, steps=6, alg="origin", temperature=0.9)),
    ("dream_maskgit_plus", dict(gen_length=12, steps=8, alg="maskgit_plus")),
    ("dream_topk_margin", dict(gen_length=12, steps=5, alg="topk_margin")),
    ("dream_entropy", dict(gen_length=12, steps=12, alg="entropy")),
    ("dream_entropy_few_steps", dict(gen_length=16, steps=3, alg="entropy")),
    ("dream_entropy_top_p", dict(gen_length=12, steps=7, alg="entropy", temperature=0.6,
                                 top_p=0.9)),
    ("dream_maskgit_top_k_alg_temp", dict(gen_length=12, steps=6, alg="maskgit_plus",
                                          temperature=1.0, top_k=5, alg_temp=0.5)),
    ("dream_entropy_alg_temp", dict(gen_length=12, steps=6, alg="entropy", alg_temp=0.25)),
    ("dream_margin_top_p_top_k", dict(gen_length=10, steps=10, alg="topk_margin",
                                      temperature=0.8, top_p=0.7, top_k=4)),
    ("dream_empty_prompt", dict(gen_length=8, steps=4, alg="entropy", prompt_len=0)),
    ("dream_prompt_mask", dict(gen_length=8, steps=4, alg="maskgit_plus", prompt_masks=[0, 2])),
    ("dream_parallel_threshold", dict(gen_length=16, steps=16, block_length=4, threshold=0.9)),
    ("dream_parallel_factor", dict(gen_length=12, steps=12, block_length=6, factor=1.0,
                                   temperature=0.5, top_p=0.95)),
]


LLADA2 = [
    ("llada2_threshold_greedy", dict(gen_length=12, block_length=4, steps=4, threshold=0.5)),
    ("llada2_prompt_tail_in_block", dict(gen_length=10, block_length=4, steps=2, threshold=0.95)),
    ("llada2_uneven_schedule", dict(gen_length=16, block_length=8, steps=3, threshold=0.95)),
    ("llada2_no_threshold", dict(gen_length=8, block_length=8, steps=8, threshold=2.0)),
    ("llada2_temperature", dict(gen_length=12, block_length=4, steps=4, threshold=0.6,
                                temperature=0.8)),
    ("llada2_top_k_top_p", dict(gen_length=12, block_length=6, steps=3, threshold=0.9,
                                temperature=1.0, top_k=5, top_p=0.8)),
    ("llada2_editing", dict(gen_length=12, block_length=4, steps=4, threshold=0.7,
                            editing=dict(threshold=0.5, max_post_steps=3, num_to_transfer=1))),
    ("llada2_editing_temperature", dict(gen_length=8, block_length=4, steps=4, threshold=0.9,
                                        temperature=0.7,
                                        editing=dict(threshold=0.3, max_post_steps=2,
                                                     num_to_transfer=2))),
]


RND1 = [
    ("rnd1_greedy", dict(gen_length=12, steps=12)),
    ("rnd1_few_steps", dict(gen_length=16, steps=5)),
    ("rnd1_more_steps_than_tokens", dict(gen_length=6, steps=10)),
    ("rnd1_greedy_temperature", dict(gen_length=12, steps=6, temperature=0.5)),
    ("rnd1_sampling", dict(gen_length=10, steps=5, temperature=0.8, greedy=False)),
    ("rnd1_sampling_top_k_top_p", dict(gen_length=10, steps=4, temperature=1.0, greedy=False,
                                       top_k=6, top_p=0.8)),
]


# DiffusionGemma (family "diffusion_gemma", written to tests/data/diffusion_gemma/): the toy's
# logits range over ~[-8, 17], so low temperatures and large bounds exercise the acceptance
# and the early stop.
EB_DEFAULT = dict(max_steps=48, t_min=0.4, t_max=0.8, entropy_bound=0.1, stability_threshold=1,
                  confidence_threshold=0.005)
EB = [
    ("eb_official_defaults", dict(gen_length=6, canvas_length=6, max_steps=6)),
    ("eb_two_canvases", dict(gen_length=10, canvas_length=6, max_steps=5, entropy_bound=2.0)),
    ("eb_loose_bound", dict(gen_length=8, canvas_length=8, max_steps=8, entropy_bound=6.0,
                            t_min=0.2, t_max=0.6)),
    ("eb_early_stop", dict(gen_length=8, canvas_length=4, max_steps=12, entropy_bound=50.0,
                           t_min=0.02, t_max=0.05, confidence_threshold=0.5)),
    ("eb_no_stability", dict(gen_length=6, canvas_length=6, max_steps=10, entropy_bound=3.0,
                             t_min=0.05, t_max=0.1, stability_threshold=0,
                             confidence_threshold=0.5)),
    ("eb_stability_two", dict(gen_length=12, canvas_length=4, max_steps=10, entropy_bound=50.0,
                              t_min=0.02, t_max=0.04, stability_threshold=2,
                              confidence_threshold=0.5)),
]


def run_eb_case(name, o, seed):
    rng = np.random.default_rng(seed)
    model = official.ToyModel(VOCAB, 1000 + seed)
    prompt = prompt_for(rng, o.get("prompt_len", 5), [])
    pool = official.Draws(int(v) for v in rng.integers(1, 1 << 24, size=100_000))
    cfg = dict(EB_DEFAULT, **{k: v for k, v in o.items() if k != "prompt_len"})
    x, history, per_canvas = diffusion_gemma.generate(model, prompt, cfg, EOS, pool)
    return {
        "name": name,
        "family": "diffusion_gemma",
        "vocab": VOCAB,
        "model_seed": 1000 + seed,
        "eos_id": EOS,
        "prompt": prompt,
        "config": cfg,
        "draws24": pool.n[: pool.i],
        "steps": history,
        "steps_per_canvas": per_canvas,
        "canvas": [int(t) for t in x],
    }


def prompt_for(rng, n, masks):
    p = [int(t) for t in rng.integers(0, VOCAB, size=n)]
    for i in masks:
        p[i] = MASK
    return p


def run_case(name, family, o, seed):
    rng = np.random.default_rng(seed)
    model = official.ToyModel(VOCAB, 1000 + seed)
    prompt = prompt_for(rng, o.get("prompt_len", 5), o.get("prompt_masks", []))
    pool = official.Draws(int(v) for v in rng.integers(1, 1 << 24, size=400_000))
    if family == "rnd1":
        cfg = dict(gen_length=o["gen_length"], steps=o["steps"],
                   temperature=o.get("temperature", 1.0), greedy=o.get("greedy", True),
                   top_k=o.get("top_k"), top_p=o.get("top_p"))
        x, history = official.rnd1_generate(
            model, prompt, cfg["gen_length"], cfg["steps"], cfg["temperature"], cfg["greedy"],
            cfg["top_k"], cfg["top_p"], MASK, pool)
    elif family == "llada2":
        cfg = dict(gen_length=o["gen_length"], block_length=o["block_length"], steps=o["steps"],
                   threshold=o["threshold"], temperature=o.get("temperature", 0.0),
                   top_k=o.get("top_k"), top_p=o.get("top_p"), editing=o.get("editing"))
        x, history = official.llada2_generate(
            model, prompt, cfg["gen_length"], cfg["block_length"], cfg["steps"],
            cfg["threshold"], cfg["temperature"], cfg["top_k"], cfg["top_p"], MASK, EOS, pool,
            editing=cfg["editing"], stop_at_eos=False)
    elif family == "llada":
        cfg = dict(gen_length=o["gen_length"], block_length=o["block_length"], steps=o["steps"],
                   temperature=o.get("temperature", 0.0), cfg_scale=o.get("cfg_scale", 0.0),
                   remasking=o.get("remasking", "low_confidence"),
                   threshold=o.get("threshold"), factor=o.get("factor"))
        x, history = official.llada_generate(
            model, prompt, cfg["steps"], cfg["gen_length"], cfg["block_length"],
            cfg["temperature"], cfg["cfg_scale"], cfg["remasking"], MASK, pool,
            threshold=cfg["threshold"], factor=cfg["factor"])
    else:
        cfg = dict(gen_length=o["gen_length"], steps=o["steps"], eps=1e-3,
                   alg=o.get("alg", "origin"), alg_temp=o.get("alg_temp", 0.0),
                   temperature=o.get("temperature", 0.0), top_p=o.get("top_p"),
                   top_k=o.get("top_k"), block_length=o.get("block_length"),
                   threshold=o.get("threshold"), factor=o.get("factor"))
        if cfg["threshold"] is None and cfg["factor"] is None:
            x, history = official.dream_sample(
                model, prompt, cfg["gen_length"], cfg["steps"], cfg["eps"], cfg["alg"],
                cfg["alg_temp"], cfg["temperature"], cfg["top_p"], cfg["top_k"], MASK, pool)
        else:
            x, history = official.dream_parallel(
                model, prompt, cfg["gen_length"], cfg["block_length"], cfg["temperature"],
                cfg["top_p"], cfg["top_k"], MASK, pool, threshold=cfg["threshold"],
                factor=cfg["factor"])
    return {
        "name": name,
        "family": family,
        "vocab": VOCAB,
        "model_seed": 1000 + seed,
        "mask_id": MASK,
        "eos_id": EOS,
        "prompt": prompt,
        "config": cfg,
        "draws24": pool.n[: pool.i],
        "steps": [[int(p) for p in h] for h in history],
        "canvas": [int(t) for t in x],
    }


def main():
    check = "--check" in sys.argv[1:]
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for seed, (name, o) in enumerate(LLADA):
        cases.append(run_case(name, "llada", o, seed))
    for seed, (name, o) in enumerate(DREAM):
        cases.append(run_case(name, "dream", o, 100 + seed))
    for seed, (name, o) in enumerate(LLADA2):
        cases.append(run_case(name, "llada2", o, 200 + seed))
    for seed, (name, o) in enumerate(RND1):
        cases.append(run_case(name, "rnd1", o, 300 + seed))
    for seed, (name, o) in enumerate(EB):
        cases.append(run_eb_case(name, o, 400 + seed))
    stale = []
    for c in cases:
        sub = "diffusion_gemma" if c["family"] == "diffusion_gemma" else ""
        os.makedirs(os.path.join(OUT, sub), exist_ok=True)
        path = os.path.join(OUT, sub, c["name"] + ".json")
        text = json.dumps(c, separators=(",", ":")) + "\n"
        if check:
            old = open(path).read() if os.path.exists(path) else None
            if old != text:
                stale.append(path)
            continue
        with open(path, "w") as f:
            f.write(text)
        eos = EOS in c["canvas"][len(c["prompt"]):]
        print(f'{c["name"]}: {len(c["steps"])} steps, {len(c["draws24"])} draws, eos={eos}')
    if stale:
        sys.exit("stale cases (run tools/sampler-ref/make_cases.py and commit): " + ", ".join(stale))


if __name__ == "__main__":
    main()
