//! Fresh random nonces from a cryptographically secure generator: `rand`'s thread-local ChaCha
//! generator, seeded (and periodically reseeded) from the operating system. Drawing from it costs
//! nanoseconds, where a system call per render cost a fifth of a small prompt's `prepare`.

use crate::registry::marks::{MarkNonce, MARK_NONCE_LEN};
use rand::Rng as _;

/// One rich-input nonce of [`crate::render`]: 8 lowercase hex characters (the token format the
/// conformance vectors show).
pub(crate) type Nonce = [u8; 8];

/// One rich-input nonce of [`crate::prepare`]: 16 lowercase hex characters, 64 random bits, so an
/// input value cannot guess a token and splice a thread in.
pub(crate) type LongNonce = [u8; 16];

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Fills `out` (at most 32 bytes) with random lowercase hex characters.
fn fill_hex(out: &mut [u8]) {
    let mut buf = [0u8; 16];
    let bytes = &mut buf[..out.len().div_ceil(2).min(16)];
    rand::rng().fill_bytes(bytes);
    for (pair, b) in out.chunks_mut(2).zip(bytes.iter()) {
        pair[0] = HEX[(b >> 4) as usize];
        if let Some(lo) = pair.get_mut(1) {
            *lo = HEX[(b & 0xf) as usize];
        }
    }
}

/// Fills `out` with fresh nonces of 8 lowercase hex characters.
pub(crate) fn fresh(out: &mut [Nonce]) {
    out.iter_mut().for_each(|n| fill_hex(n));
}

/// Fills `out` with fresh nonces of 16 lowercase hex characters.
pub(crate) fn fresh_long(out: &mut [LongNonce]) {
    out.iter_mut().for_each(|n| fill_hex(n));
}

/// A fresh mark nonce: two uniform 64-bit numbers, each reduced modulo 10^10 (bias below 2^-30 per
/// half) and written as 10 decimal digits: 20 digits, over 66 bits.
pub(crate) fn fresh_mark() -> MarkNonce {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    let mut out = [b'0'; MARK_NONCE_LEN];
    for (half, chunk) in out.chunks_mut(MARK_NONCE_LEN / 2).zip(bytes.chunks_exact(8)) {
        let mut n = u64::from_le_bytes(chunk.try_into().unwrap_or_default()) % 10_000_000_000;
        for d in half.iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
    }
    out
}

/// The nonce as text.
pub(crate) fn as_str(n: &[u8]) -> &str {
    // Only ASCII hex digits are ever written into a nonce.
    std::str::from_utf8(n).unwrap_or("00000000")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_have_their_shape_and_differ() {
        let a = fresh_mark();
        assert!(a.iter().all(u8::is_ascii_digit));
        assert_ne!(a, fresh_mark());
        let mut l = [[0u8; 16]; 2];
        fresh_long(&mut l);
        assert!(l[0].iter().all(|b| HEX.contains(b)));
        assert_ne!(l[0], l[1]);
    }
}
