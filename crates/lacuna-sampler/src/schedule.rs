//! The official transfer schedules: how many masked positions each step commits.

/// LLaDA's `get_num_transfer_tokens` and LLaDA2's `_get_num_transfer_tokens` (the same
/// rule): `masks` positions over `steps` steps, `masks / steps` each, the remainder going one
/// each to the first steps. LLaDA passes a block's masks, LLaDA2 the block length (its count
/// per step of every block). `steps` must be at least 1.
pub fn llada_transfer_counts(masks: usize, steps: usize) -> Vec<usize> {
    let base = masks / steps;
    let remainder = masks % steps;
    (0..steps)
        .map(|i| base + usize::from(i < remainder))
        .collect()
}

/// Dream's `timesteps = torch.linspace(1, eps, steps + 1)` in float32, computed as PyTorch's
/// CUDA kernel does (the official code runs on the GPU): `step = (eps - 1) / steps`; the first
/// half `1 + step * i`, the second half `eps - step * (steps - i)`, each a fused multiply-add
/// (nvcc contracts them). `steps` must be at least 1.
pub fn dream_timesteps(steps: usize, eps: f32) -> Vec<f32> {
    let n = steps + 1;
    let (start, end) = (1.0f32, eps);
    let step = (end - start) / steps as f32;
    let halfway = n / 2;
    (0..n)
        .map(|i| {
            if i < halfway {
                step.mul_add(i as f32, start)
            } else {
                (-step).mul_add((n - i - 1) as f32, end)
            }
        })
        .collect()
}

/// Dream's per-step count `int(num_mask * (1 - s / t))` in float32, or all `num_mask`
/// positions on the last step.
pub fn dream_transfer_count(num_mask: usize, t: f32, s: f32, last: bool) -> usize {
    if last {
        num_mask
    } else {
        // Truncation toward zero, as Python's int(); the product is never negative.
        (num_mask as f32 * (1.0 - s / t)) as usize
    }
}

/// Dream `origin`'s per-position transfer probability `1 - s / t` (1 on the last step).
pub fn dream_p_transfer(t: f32, s: f32, last: bool) -> f32 {
    if last { 1.0 } else { 1.0 - s / t }
}

#[cfg(test)]
mod tests;
