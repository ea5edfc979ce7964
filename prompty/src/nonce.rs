//! Fresh random nonces from a cryptographically secure generator: `rand`'s thread-local ChaCha
//! generator, seeded (and periodically reseeded) from the operating system. Drawing from it costs
//! nanoseconds, where a system call per render cost a fifth of a small prompt's `prepare`.

use rand::Rng as _;

/// One nonce: 8 lowercase hex characters.
pub(crate) type Nonce = [u8; 8];

/// Fills `out` with fresh nonces of 8 lowercase hex characters.
pub(crate) fn fresh(out: &mut [Nonce]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = vec![0u8; out.len() * 4];
    rand::rng().fill_bytes(&mut bytes);
    for (nonce, chunk) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        for (i, b) in chunk.iter().enumerate() {
            nonce[2 * i] = HEX[(b >> 4) as usize];
            nonce[2 * i + 1] = HEX[(b & 0xf) as usize];
        }
    }
}

/// Fills `out` with fresh nonces of 8 decimal digits (unchanged by case conversions of the text
/// they sit in).
pub(crate) fn fresh_digits(out: &mut [Nonce]) {
    let mut bytes = vec![0u8; out.len() * 8];
    rand::rng().fill_bytes(&mut bytes);
    for (nonce, chunk) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        for (d, b) in nonce.iter_mut().zip(chunk) {
            // A slight bias towards low digits is harmless: marks need unpredictability, not uniformity.
            *d = b'0' + (b % 10);
        }
    }
}

/// The nonce as text.
pub(crate) fn as_str(n: &Nonce) -> &str {
    // Only ASCII hex digits are ever written into a nonce.
    std::str::from_utf8(n).unwrap_or("00000000")
}
