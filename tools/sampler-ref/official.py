"""A numpy transcription of the official diffusion-LM samplers, for Lacuna's sampler tests.

Transcribed (not imported: no torch here) from
  * ML-GSAI/LLaDA generate.py: add_gumbel_noise, get_num_transfer_tokens, generate;
  * Dream's generation_utils.py (HF Dream-org/Dream-v0-Instruct-7B, DreamGenerationMixin._sample,
    sample_tokens, top_p_logits, top_k_logits);
  * NVlabs/Fast-dLLM llada/generate.py (generate with threshold / factor: get_transfer_index,
    get_transfer_index_dynamic) and dream/model/generation_utils_block.py (the
    'confidence_threshold' branch, without its KV cache).

The structure follows the official code: the model runs over the whole canvas, masks and
confidences are full-canvas arrays, top-k is taken over the whole canvas with -inf outside the
candidates. What cannot be reproduced (PyTorch's random streams) is replaced by draws from one
list, consumed in the order Lacuna documents, so both sides see the same numbers:

  * randomness comes from `Draws`, uniform in (0, 1), all multiples of 2^-24;
  * LLaDA: per step, at temperature > 0 one draw per token of each candidate row (masked
    positions before the block end, ascending; tokens ascending), then for 'random' remasking
    one draw per candidate row;
  * Dream: per step, 'origin': one draw per masked position, then one per revealed position at
    temperature > 0; otherwise one per masked position at temperature > 0, then one per masked
    position when alg_temp > 0 (exponential keys of multinomial without replacement, the
    algorithm torch.multinomial uses);
  * categorical draws (torch Categorical) use the inverse CDF with one draw;
  * steps that commit nothing consume nothing (the official code runs the model and
    discards the result).

Ties are broken toward the lower index everywhere (stable sorts), since torch.topk leaves tie
order unspecified. Transcendentals use Python's math module (the C library), sums run left to
right, so the Rust side can agree bit for bit.
"""

import math

import numpy as np

MASK64 = (1 << 64) - 1


# ---------------------------------------------------------------------------------------------
# The deterministic toy model both sides implement (see crates/lacuna-sampler/tests/common).


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class ToyModel:
    """Logits that depend on the whole canvas, exactly representable in float32.

    h = fold(mix64(((h ^ token) + golden) mod 2^64)) over the canvas, from `seed`;
    logit[row][tok] = (mix64(h ^ (row+1)*C1 ^ (tok+1)*C2) >> 44) * 2^-16 - 8, plus a bonus of
    (mix64(seed ^ (row+1)*C3) % 9) on the row's preferred token
    mix64(seed ^ (row+1)*C4) % vocab.
    """

    def __init__(self, vocab, seed):
        self.vocab = vocab
        self.seed = seed

    def row(self, canvas_hash, row):
        v = self.vocab
        out = np.empty(v, dtype=np.float32)
        for tok in range(v):
            k = mix64(canvas_hash ^ (((row + 1) * 0xD1B54A32D192ED03) & MASK64)
                      ^ (((tok + 1) * 0xABC98388FB8FAC03) & MASK64)) >> 44
            out[tok] = np.float32(k * 2.0 ** -16 - 8.0)
        bonus = mix64(self.seed ^ (((row + 1) * 0x9E6C63D0676A9A99) & MASK64)) % 9
        pref = mix64(self.seed ^ (((row + 1) * 0xC13FA9A902A6328F) & MASK64)) % v
        out[pref] = np.float32(out[pref] + np.float32(bonus))
        return out

    def hash(self, canvas):
        h = self.seed
        for t in canvas:
            h = mix64(((h ^ int(t)) + 0x9E3779B97F4A7C15) & MASK64)
        return h

    def __call__(self, x):
        """Full-canvas logits [L, V], like model(x).logits for one sequence."""
        h = self.hash(x)
        return np.stack([self.row(h, r) for r in range(len(x))])


class Draws:
    def __init__(self, numerators):
        self.n = list(numerators)
        self.i = 0

    def next(self):
        v = self.n[self.i] * 2.0 ** -24
        self.i += 1
        return v


# ---------------------------------------------------------------------------------------------
# Shared helpers (each mirrors one official tensor op on one row).


def softmax64(row):
    """F.softmax(row.to(float64)): exp(x - max) / sum, the sum left to right."""
    row = [float(x) for x in row]
    m = max(row)
    e = [math.exp(x - m) if x != -math.inf else 0.0 for x in row]
    s = 0.0
    for v in e:
        s += v
    return [v / s for v in e]


def topk_stable(conf, k):
    """torch.topk(conf, k).indices with ties to the lower index."""
    return list(np.argsort(-np.asarray(conf, dtype=np.float64), kind="stable")[:k])


# ---------------------------------------------------------------------------------------------
# LLaDA (ML-GSAI/LLaDA generate.py) and Fast-dLLM's parallel variants.


def get_num_transfer_tokens(block_mask_index, steps):
    mask_num = int(block_mask_index.sum())
    base = mask_num // steps
    remainder = mask_num % steps
    num_transfer_tokens = np.zeros(steps, dtype=np.int64) + base
    num_transfer_tokens[:remainder] += 1
    return num_transfer_tokens


def llada_predict(model, x, prompt_index, mask_index, end, temperature, cfg_scale, remasking,
                  mask_id, draws):
    """The body of one LLaDA step up to `confidence` (official lines, full canvas)."""
    if cfg_scale > 0.0:
        un_x = x.copy()
        un_x[prompt_index] = mask_id
        logits = model(x)
        un_logits = model(un_x)
        logits = un_logits + np.float32(cfg_scale + 1) * (logits - un_logits)
    else:
        logits = model(x)

    L, V = logits.shape
    cand = [p for p in range(L) if mask_index[p] and p < end]

    # add_gumbel_noise in float64; noise only where it is used (candidate rows).
    if temperature == 0:
        x0 = np.argmax(logits, axis=-1)  # exp is monotone: argmax(exp(l)) == argmax(l)
    else:
        x0 = np.argmax(logits, axis=-1)
        for p in cand:
            best, best_v = 0, -math.inf
            for tok in range(V):
                u = draws.next()
                g = (-math.log(u)) ** temperature
                v = math.exp(float(logits[p, tok])) / g
                if v > best_v:
                    best, best_v = tok, v
            x0[p] = best

    if remasking == "low_confidence":
        x0_p = np.array([softmax64(logits[p])[x0[p]] for p in range(L)])
    elif remasking == "random":
        x0_p = np.zeros(L)
        for p in cand:
            x0_p[p] = draws.next()
    else:
        raise NotImplementedError(remasking)

    x0_p[end:] = -np.inf
    x0 = np.where(mask_index, x0, x)
    confidence = np.where(mask_index, x0_p, -np.inf)
    return x0, confidence


def llada_generate(model, prompt, steps, gen_length, block_length, temperature, cfg_scale,
                   remasking, mask_id, draws, threshold=None, factor=None):
    """LLaDA generate(); with threshold or factor, Fast-dLLM's generate() (no cache).

    Returns the final canvas and, per step, the committed positions (sorted)."""
    P = len(prompt)
    x = np.full(P + gen_length, mask_id, dtype=np.int64)
    x[:P] = prompt
    prompt_index = x != mask_id
    assert gen_length % block_length == 0
    num_blocks = gen_length // block_length
    assert steps % num_blocks == 0
    steps = steps // num_blocks
    history = []
    for num_block in range(num_blocks):
        start = P + num_block * block_length
        end = P + (num_block + 1) * block_length
        if threshold is None and factor is None:
            num_transfer_tokens = get_num_transfer_tokens(x[start:end] == mask_id, steps)
            for i in range(steps):
                k = int(num_transfer_tokens[i])
                if k == 0:
                    continue
                mask_index = x == mask_id
                x0, confidence = llada_predict(model, x, prompt_index, mask_index, end,
                                               temperature, cfg_scale, remasking, mask_id, draws)
                select_index = topk_stable(confidence, k)
                x[select_index] = x0[select_index]
                history.append(sorted(int(p) for p in select_index))
        else:
            while True:
                mask_index = x == mask_id
                mask_index[end:] = False
                x0, confidence = llada_predict(model, x, prompt_index, mask_index, end,
                                               temperature, cfg_scale, remasking, mask_id, draws)
                n = int(mask_index.sum())
                if factor is None:
                    # get_transfer_index with threshold
                    select_index = topk_stable(confidence, n)
                    chosen = [select_index[0]] + [
                        j for j in select_index[1:] if not confidence[j] < threshold]
                else:
                    # get_transfer_index_dynamic
                    ns = list(range(1, n + 1))
                    es = [factor / (m + 1) for m in ns]
                    threshs = [1 - e for e in es]
                    threshs[0] = -1
                    sorted_conf = sorted(confidence[mask_index], reverse=True)
                    assert len(sorted_conf) == len(threshs)
                    for top_i in range(len(threshs)):
                        if sorted_conf[top_i] < threshs[top_i]:
                            break
                    if top_i == 0 or top_i == len(threshs) - 1:
                        top_i += 1
                    chosen = topk_stable(confidence, top_i)
                x[chosen] = x0[chosen]
                history.append(sorted(int(p) for p in chosen))
                if (x[start:end] == mask_id).sum() == 0:
                    break
    return x, history


# ---------------------------------------------------------------------------------------------
# Dream (generation_utils.py) and Fast-dLLM's confidence_threshold branch.

F32_MIN = np.finfo(np.float64).min  # finfo(logits.dtype).min; the rows here are float64


def top_p_logits(logits, top_p):
    """top_p_logits. The official code takes softmax(sorted logits); here the softmax is
    taken in token order and read in sorted order: the same numbers up to the order of the
    normalising sum, which lets Lacuna sort only the top of the ranking."""
    order = list(np.argsort(-logits, kind="stable"))
    probs = softmax64(logits)
    sorted_probs = [probs[i] for i in order]
    cum, cumulative_probs = 0.0, []
    for p in sorted_probs:
        cum += p
        cumulative_probs.append(cum)
    remove = [c > top_p for c in cumulative_probs]
    remove = [False] + remove[:-1]
    out = logits.copy()
    for rank, i in enumerate(order):
        if remove[rank]:
            out[i] = F32_MIN
    return out


def top_k_logits(logits, top_k):
    top_k = min(top_k, logits.shape[-1])
    kth = np.sort(logits)[::-1][top_k - 1]
    out = logits.copy()
    out[logits < kth] = F32_MIN
    return out


def sample_tokens_row(row, draws, temperature=0.0, top_p=None, top_k=None,
                      margin_confidence=False, neg_entropy=False):
    """sample_tokens for one row (the official one is vectorised over rows)."""
    if temperature > 0:
        logits = (row.astype(np.float32) / np.float32(temperature)).astype(np.float64)
    else:
        logits = row.astype(np.float64)
    if top_p is not None and top_p < 1:
        logits = top_p_logits(logits, top_p)
    if top_k is not None:
        logits = top_k_logits(logits, top_k)
    probs = softmax64(logits)
    if temperature > 0:
        u = draws.next()
        cum, x0, last_nonzero = 0.0, None, 0
        for i, p in enumerate(probs):
            if p > 0:
                last_nonzero = i
            cum += p
            if cum > u:
                x0 = i
                break
        if x0 is None:
            x0 = last_nonzero
        confidence = probs[x0]
    else:
        x0 = int(np.argmax(probs))
        confidence = probs[x0]
    if margin_confidence:
        sorted_probs = sorted(probs, reverse=True)
        top1 = sorted_probs[0]
        top2 = sorted_probs[1] if len(sorted_probs) > 1 else 0.0
        confidence = top1 - top2
    if neg_entropy:
        epsilon = 1e-10
        s = 0.0
        for p in probs:
            s += p * math.log(p + epsilon)
        confidence = s
    return confidence, x0


def dream_linspace(start, end, steps):
    """torch.linspace(start, end, steps) in float32 as PyTorch's CUDA kernel computes it
    (two-sided, fused multiply-add; the f64 sums below are exact, so one rounding)."""
    start, end = np.float32(start), np.float32(end)
    step = np.float32((end - start) / np.float32(steps - 1))
    halfway = steps // 2
    out = []
    for i in range(steps):
        if i < halfway:
            out.append(np.float32(float(step) * i + float(start)))
        else:
            out.append(np.float32(float(end) - float(step) * (steps - i - 1)))
    return out


def shifted_logits(model, x):
    logits = model(x)
    return np.concatenate([logits[:1], logits[:-1]], axis=0)


def dream_sample(model, prompt, gen_length, steps, eps, alg, alg_temp, temperature, top_p, top_k,
                 mask_token_id, draws):
    """DreamGenerationMixin._sample for one sequence."""
    x = np.concatenate([np.asarray(prompt, dtype=np.int64),
                        np.full(gen_length, mask_token_id, dtype=np.int64)])
    timesteps = dream_linspace(1, eps, steps + 1)
    history = []
    for i in range(steps):
        mask_index = x == mask_token_id
        masked = [p for p in range(len(x)) if mask_index[p]]
        t = timesteps[i]
        s = timesteps[i + 1]
        if alg == "origin":
            p_transfer = np.float32(1) - s / t if i < steps - 1 else 1
            x0 = np.zeros(len(masked), dtype=np.int64) + mask_token_id
            transfer_index_t_s = [draws.next() < p_transfer for _ in masked]
            if not any(transfer_index_t_s):
                continue
            logits = shifted_logits(model, x)
            for j, p in enumerate(masked):
                if transfer_index_t_s[j]:
                    _, x0[j] = sample_tokens_row(logits[p], draws, temperature, top_p, top_k)
            x[mask_index] = x0
            history.append(sorted(p for j, p in enumerate(masked) if transfer_index_t_s[j]))
        else:
            num_mask_token = np.float32(mask_index.sum())
            number_transfer_tokens = (int(num_mask_token * (np.float32(1) - s / t))
                                      if i < steps - 1 else int(num_mask_token))
            if number_transfer_tokens == 0:
                continue
            logits = shifted_logits(model, x)
            kw = {"margin_confidence": alg == "topk_margin", "neg_entropy": alg == "entropy"}
            if alg not in ("maskgit_plus", "topk_margin", "entropy"):
                raise RuntimeError(f"Unknown alg: {alg}")
            confidence, x0 = [], []
            for p in masked:
                c, t0 = sample_tokens_row(logits[p], draws, temperature, top_p, top_k, **kw)
                confidence.append(c)
                x0.append(t0)
            full_confidence = np.full(len(x), -np.inf)
            full_confidence[mask_index] = confidence
            if alg_temp is None or alg_temp == 0:
                transfer_index = topk_stable(full_confidence, number_transfer_tokens)
            else:
                full_confidence = full_confidence / float(alg_temp)
                w = softmax64(full_confidence)
                # torch.multinomial without replacement: top-k of w / Exp(1); one
                # exponential per masked position (the others have weight 0).
                keys = np.zeros(len(x))
                for p in masked:
                    e = -math.log(1.0 - draws.next())
                    keys[p] = w[p] / e
                keys[~mask_index] = -np.inf
                transfer_index = topk_stable(keys, number_transfer_tokens)
            x_ = np.zeros_like(x) + mask_token_id
            x_[mask_index] = x0
            x[transfer_index] = x_[transfer_index]
            history.append(sorted(int(p) for p in transfer_index))
    return x, history


def dream_parallel(model, prompt, gen_length, block_length, temperature, top_p, top_k,
                   mask_token_id, draws, threshold=None, factor=None):
    """Fast-dLLM's Dream 'confidence_threshold' loop per block, without the KV cache (so
    without the cache refresh's forced first commit); factor uses the LLaDA factor rule."""
    P = len(prompt)
    x = np.concatenate([np.asarray(prompt, dtype=np.int64),
                        np.full(gen_length, mask_token_id, dtype=np.int64)])
    num_blocks = gen_length // block_length
    history = []
    for num_block in range(num_blocks):
        start = P + num_block * block_length
        end = start + block_length
        while (x[start:end] == mask_token_id).sum() > 0:
            logits = shifted_logits(model, x)
            mask_index = np.zeros(len(x), dtype=bool)
            mask_index[start:end] = x[start:end] == mask_token_id
            masked = [p for p in range(len(x)) if mask_index[p]]
            full_confidence = np.full(len(x), -np.inf)
            x_ = np.zeros_like(x) + mask_token_id
            for p in masked:
                c, t0 = sample_tokens_row(logits[p], draws, temperature, top_p, top_k)
                full_confidence[p] = c
                x_[p] = t0
            n = len(masked)
            select_index = topk_stable(full_confidence, n)
            if factor is None:
                chosen = [select_index[0]] + [
                    j for j in select_index[1:] if not full_confidence[j] < threshold]
            else:
                threshs = [1 - factor / (m + 1) for m in range(1, n + 1)]
                threshs[0] = -1
                sorted_conf = [full_confidence[j] for j in select_index]
                for top_i in range(n):
                    if sorted_conf[top_i] < threshs[top_i]:
                        break
                if top_i == 0 or top_i == n - 1:
                    top_i += 1
                chosen = select_index[:top_i]
            x[chosen] = x_[chosen]
            history.append(sorted(int(p) for p in chosen))
    return x, history


# ---------------------------------------------------------------------------------------------
# LLaDA2 (inclusionAI LLaDA2.0-mini modeling_llada2_moe.py: generate, _get_num_transfer_tokens,
# _sample_with_temperature_topk_topp; LLaDA2.1-mini: the token-to-token editing loop).
#
# The model sees x[:, :current_window_end] (block-causal attention is the model's business; the
# toy model ignores masks). Draw order (Lacuna's): at temperature > 0 one draw per requested row
# in position order; rows are the block's masked positions (2.0) or every non-prompt position of
# the block (2.1: the official code samples every block row; prompt rows are never used).


def llada2_num_transfer(block_length, steps):
    base, rem = block_length // steps, block_length % steps
    n = [base] * steps
    for i in range(rem):
        n[i] += 1
    return n


def llada2_sample(row, draws, temperature, top_k, top_p):
    """_sample_with_temperature_topk_topp on one row, with the LLaDA2.1 greedy fix: divide by
    the temperature, top_k_logits, top_p_logits, softmax, argmax or a categorical draw; the
    confidence is the chosen token's probability."""
    row = row.astype(np.float32).copy()
    if top_k is not None:
        kth = np.sort(row)[::-1][min(top_k, len(row)) - 1]
        row[row < kth] = -np.inf
    conf, x0 = sample_tokens_row(row, draws, temperature=temperature, top_p=top_p)
    return int(x0), conf


def llada2_generate(model, prompt, gen_length, block_length, steps, threshold, temperature,
                    top_k, top_p, mask_id, eos_id, draws, editing=None, stop_at_eos=True):
    """Returns (final canvas [prompt + gen_length], per-step committed positions).

    stop_at_eos=False leaves out the official break after a block that holds an end token
    (it only drops the later blocks: the cases run without it, and the Rust test checks that
    stopping gives the full run cut at the first end token)."""
    prompt_length = len(prompt)
    num_blocks = (prompt_length + gen_length + block_length - 1) // block_length
    total_length = num_blocks * block_length
    x = np.full(total_length, mask_id, dtype=np.int64)
    x[:prompt_length] = prompt
    prefill_blocks = prompt_length // block_length
    schedule = llada2_num_transfer(block_length, steps)
    history = []
    for num_block in range(prefill_blocks, num_blocks):
        start, end = num_block * block_length, (num_block + 1) * block_length
        post_steps = 0
        step = 0
        while True:
            block = x[start:end]
            active = [start + i for i in range(block_length) if block[i] == mask_id]
            if editing is None:
                if len(active) == 0 or step >= steps:
                    break
                num_to_transfer = schedule[step]
            else:
                if len(active) == 0:
                    post_steps += 1
                if post_steps > editing["max_post_steps"]:
                    break
                num_to_transfer = editing["num_to_transfer"]
            rows = active if editing is None else list(range(max(start, prompt_length), end))
            h = model.hash(x[:end])
            pred = {}
            for r in rows:
                pred[r] = llada2_sample(model.row(h, r), draws, temperature, top_k, top_p)
            confidence = [pred[p][1] for p in active]
            high = [i for i, c in enumerate(confidence) if c > threshold]
            if len(high) >= num_to_transfer:
                chosen = high
            else:
                chosen = topk_stable(np.array(confidence), min(num_to_transfer, len(active)))
            committed = [active[i] for i in chosen]
            if editing is not None:
                for r in rows:
                    tok, c = pred[r]
                    if x[r] != mask_id and c > editing["threshold"] and tok != x[r]:
                        committed.append(r)
            for p in committed:
                x[p] = pred[p][0]
            history.append(sorted(committed))
            step += 1
            if editing is not None and len(active) == 0 and len(committed) == 0:
                break
        if not stop_at_eos:
            continue
        generated = x[prompt_length:min(end, prompt_length + gen_length)]
        has_eos = bool((generated == eos_id).any())
        if editing is None and has_eos:
            break
        if editing is not None and has_eos and not (generated == mask_id).any():
            break
    return x[:prompt_length + gen_length], history


# ---------------------------------------------------------------------------------------------
# RND1 (Radical Numerics rnd/sampling.py: diffusion_sample, apply_top_k_filtering,
# apply_top_p_filtering). Lacuna's draw order: in sampling mode one draw per computed row
# (the rows before the masked positions, ascending) per forward. Entropy counts 0*log(0) as 0
# (the official code gets NaN once a filter removed a token); a greedy step that committed
# nothing does not rerun the model (the same canvas gives the same predictions).


def rnd1_score(row, temperature, greedy, top_k, top_p, draws):
    t = np.float32(max(temperature, 1e-8))
    l = [float(np.float32(x) / t) for x in row]
    if top_k is not None:
        keep = set(topk_stable(np.array(l), min(top_k, len(l))))
        l = [v if i in keep else -math.inf for i, v in enumerate(l)]
    if top_p is not None and top_p < 1.0:
        # apply_top_p_filtering is Dream's top_p_logits rule.
        l = [float(v) for v in top_p_logits(np.array(l, dtype=np.float64), top_p)]
    mx = max(l)
    s = 0.0
    for x in l:
        s += math.exp(x - mx)
    lse = mx + math.log(s)
    ent = 0.0
    for x in l:
        if x > -math.inf:
            lp = x - lse
            ent -= math.exp(lp) * lp
    if greedy:
        pred = int(np.argmax(np.array(l)))
    else:
        u = draws.next()
        cum, pred, last_nonzero = 0.0, None, 0
        for i, x in enumerate(l):
            p = math.exp(x - lse)
            if p > 0:
                last_nonzero = i
            cum += p
            if cum > u:
                pred = i
                break
        if pred is None:
            pred = last_nonzero
    return pred, ent


def rnd1_generate(model, prompt, gen_length, num_steps, temperature, greedy, top_k, top_p,
                  mask_id, draws):
    """Returns (final canvas, per-step committed positions)."""
    n0 = len(prompt)
    x = list(prompt) + [mask_id] * gen_length
    maskable = [i >= n0 for i in range(len(x))]
    pred = {}

    def forward():
        h = model.hash(x)
        for r in range(n0 - 1, len(x) - 1):
            if maskable[r + 1]:
                pred[r + 1] = rnd1_score(model.row(h, r), temperature, greedy, top_k, top_p,
                                         draws)

    forward()
    total = gen_length
    history = []
    for step in range(num_steps - 1, 0, -1):
        cutoff = int(np.float32(total) * np.float32(step / num_steps))
        open_ = [p for p in range(len(x)) if maskable[p]]
        keep = set(topk_stable(np.array([pred[p][1] for p in open_]), cutoff)) if open_ else set()
        committed = []
        for i, p in enumerate(open_):
            if i not in keep:
                x[p] = pred[p][0]
                maskable[p] = False
                committed.append(p)
        history.append(sorted(committed))
        if any(maskable) and (committed or not greedy):
            forward()
    rest = [p for p in range(len(x)) if maskable[p]]
    if rest:
        for p in rest:
            x[p] = pred[p][0]
        history.append(rest)
    return x, history
