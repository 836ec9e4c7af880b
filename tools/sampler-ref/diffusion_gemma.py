"""DiffusionGemma's sampler, transcribed from Hugging Face transformers'
`models/diffusion_gemma/generation_diffusion_gemma.py` (5.25): `DiffusionGemmaGenerationMixin.
generate` / `_denoising_step`, `EntropyBoundSampler.accept_canvas` / `renoise_canvas`,
`LinearTemperatureScheduleLogitsProcessor`, `StableAndConfidentStoppingCriteria`.

Official code, in the order it runs (batch of one):

    encode the prompt; for each of ceil(max_new_tokens / canvas_length) canvases:
      current = randint(vocab, canvas_length); sc = None
      for cur_step in reversed(range(1, max_denoising_steps + 1)):
        logits = decoder(current, cache, self_conditioning_logits=sc)
        processed = logits / (t_min + (t_max - t_min) * cur_step / max_denoising_steps)
        sample = multinomial(softmax(processed)); argmax = processed.argmax(-1)
        entropy = Categorical(logits=processed).entropy()
        sorted, idx = sort(entropy); accepted[idx] = cumsum(sorted) - sorted <= entropy_bound
        current = where(accepted, sample, randint(vocab, canvas_length))
        stop = (argmax equal to each of the last stability_threshold argmaxes)
               and mean(entropy) < confidence_threshold
        sc = processed
        if stop: break
      append argmax to the sequence, encode it (the commit pass); stop at an end token

Lacuna's documented choices for what torch leaves open (lacuna_sampler::diffusion_gemma):
every random number is one draw (initial canvas left to right, floor(u * vocab); per step
the sample of each position by inverse CDF, then a new token for each rejected position
left to right); probabilities, entropies and sums in float64, left to right; ties to the
lower index. The result is cut to gen_length and before the first end token.
"""

import math


def _row(logits, t):
    v = [float(x) / t for x in logits]
    m = max(v)
    best = v.index(m)
    e = [math.exp(x - m) for x in v]
    s = 0.0
    for x in e:
        s += x
    p = [x / s for x in e]
    h = 0.0
    for x in p:
        if x > 0.0:
            h -= x * math.log(x)
    return p, h, best


def _inverse_cdf(p, u):
    acc, last = 0.0, 0
    for i, x in enumerate(p):
        if x > 0.0:
            acc += x
            last = i
            if u < acc:
                return i
    return last


def _uniform(draws, vocab):
    return min(int(draws.next() * vocab), vocab - 1)


def generate(model, prompt, cfg, eos, draws):
    """Returns (prompt + generated tokens, accepted positions of every step, steps per canvas).

    `model(tokens)` gives [len, vocab] logits; the decoder's logits of a canvas over the context
    are its rows of `model(context + canvas)`.
    """
    vocab, c = model.vocab, cfg["canvas_length"]
    n_canvases = -(-cfg["gen_length"] // c)
    context = list(prompt)
    generated, history, per_canvas = [], [], []
    for block in range(n_canvases):
        current = [_uniform(draws, vocab) for _ in range(c)]
        argmax = list(current)
        past = []
        steps = 0
        for s in range(cfg["max_steps"], 0, -1):
            logits = model(context + current)[len(context):]
            steps += 1
            t = cfg["t_min"] + (cfg["t_max"] - cfg["t_min"]) * (s / cfg["max_steps"])
            entropy, sample = [0.0] * c, [0] * c
            for r in range(c):
                p, h, best = _row(logits[r], t)
                entropy[r], argmax[r] = h, best
                sample[r] = _inverse_cdf(p, draws.next())
            order = sorted(range(c), key=lambda i: (entropy[i], i))
            accepted, before = [False] * c, 0.0
            for i in order:
                if before > cfg["entropy_bound"]:
                    break
                accepted[i] = True
                before += entropy[i]
            for r in range(c):
                current[r] = sample[r] if accepted[r] else _uniform(draws, vocab)
            history.append([len(context) + r for r in range(c) if accepted[r]])
            k = cfg["stability_threshold"]
            stable = k == 0 or (len(past) == k and all(h == argmax for h in past))
            if k > 0:
                past = (past + [list(argmax)])[-k:]
            mean = sum(entropy) / c
            if stable and mean < cfg["confidence_threshold"]:
                break
        per_canvas.append(steps)
        context += argmax
        generated += argmax
        hit = [i for i, tok in enumerate(argmax) if tok == eos]
        if hit and block * c + hit[0] < cfg["gen_length"]:
            break
    return list(prompt) + generated[: cfg["gen_length"]], history, per_canvas
