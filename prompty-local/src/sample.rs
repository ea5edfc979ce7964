//! Choosing the next token from the logits: greedy, or temperature + top-k + top-p sampling with a
//! small seeded generator (xoshiro256** seeded through SplitMix64), so a seed gives the same text.

/// A seeded pseudo-random generator (xoshiro256**).
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator from `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// A seed nobody chose: from the process's random hasher keys and the clock.
    pub fn random_seed() -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        h.write_u128(now);
        h.finish()
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A float in `[0, 1)`.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// The index of the largest logit (the first of equals); `None` when every logit is −∞ or NaN.
pub(crate) fn argmax(logits: &[f32]) -> Option<usize> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l.is_nan() || l == f32::NEG_INFINITY {
            continue;
        }
        if best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.map(|(i, _)| i)
}

/// Samples a token: logits divided by `temperature`, restricted to the `top_k` most likely and
/// then to the smallest set whose probabilities reach `top_p`. `temperature <= 0` is greedy.
pub(crate) fn sample(
    logits: &[f32],
    temperature: f32,
    top_k: Option<usize>,
    top_p: f32,
    rng: &mut Rng,
) -> Option<usize> {
    if temperature.is_nan() || temperature <= 0.0 {
        return argmax(logits);
    }
    let mut cands: Vec<(usize, f32)> =
        logits.iter().enumerate().filter(|(_, l)| l.is_finite()).map(|(i, &l)| (i, l / temperature)).collect();
    if cands.is_empty() {
        return None;
    }
    let k = top_k.unwrap_or(cands.len()).clamp(1, cands.len());
    if k < cands.len() {
        cands.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        cands.truncate(k);
    }
    cands.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let max = cands[0].1;
    let mut probs: Vec<f32> = cands.iter().map(|(_, l)| (l - max).exp()).collect();
    let total: f32 = probs.iter().sum();
    for p in probs.iter_mut() {
        *p /= total;
    }
    if top_p < 1.0 {
        let mut acc = 0.0;
        let mut keep = probs.len();
        for (i, p) in probs.iter().enumerate() {
            acc += p;
            if acc >= top_p {
                keep = i + 1;
                break;
            }
        }
        probs.truncate(keep.max(1));
    }
    let total: f32 = probs.iter().sum();
    let mut r = rng.next_f32() * total;
    for (i, p) in probs.iter().enumerate() {
        if r < *p {
            return Some(cands[i].0);
        }
        r -= p;
    }
    Some(cands[probs.len() - 1].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_first_maximum() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, f32::NEG_INFINITY]), Some(1));
        assert_eq!(argmax(&[f32::NEG_INFINITY; 3]), None);
    }

    #[test]
    fn same_seed_same_draws() {
        let logits: Vec<f32> = (0..100).map(|i| (i % 7) as f32).collect();
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..20).map(|_| sample(&logits, 1.0, None, 0.9, &mut rng).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }

    #[test]
    fn top_k_one_is_greedy() {
        let mut rng = Rng::new(5);
        for _ in 0..10 {
            assert_eq!(sample(&[0.0, 2.0, 1.0], 1.5, Some(1), 1.0, &mut rng), Some(1));
        }
    }

    #[test]
    fn disallowed_tokens_are_never_drawn() {
        let mut rng = Rng::new(9);
        for _ in 0..100 {
            assert_eq!(sample(&[f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY], 1.0, None, 1.0, &mut rng), Some(1));
        }
    }
}
