//! The bootstrap's random stream: xoshiro256** seeded through splitmix64,
//! and uniform indices drawn from it. Reproducible across platforms; not for
//! anything that needs unpredictability.

/// xoshiro256** seeded through splitmix64: tiny, fast, and reproducible across platforms,
/// which is all the bootstrap needs (not cryptographic).
pub(super) struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    pub(super) fn new(seed: u64) -> Self {
        // splitmix64 spreads any seed, including 0, into a state that is never all-zero.
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Xoshiro256 {
            s: [next(), next(), next(), next()],
        }
    }

    pub(super) fn next_u64(&mut self) -> u64 {
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

    /// Uniform integer in [0, n) for n > 0, by Lemire's multiply-and-reject: a plain modulo
    /// would favour small indices.
    pub(super) fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as usize;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Xoshiro256::new(0);
        let mut seen = [0usize; 7];
        for _ in 0..7000 {
            seen[rng.below(7)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }
}
