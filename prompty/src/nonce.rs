//! Fresh random nonces (8 lowercase hex characters) from the operating system's CSPRNG.

/// One nonce: 8 lowercase hex characters.
pub(crate) type Nonce = [u8; 8];

/// Fills `out` with fresh nonces, from one call to the operating system's random source.
pub(crate) fn fresh(out: &mut [Nonce]) -> crate::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = vec![0u8; out.len() * 4];
    getrandom::fill(&mut bytes)
        .map_err(|e| crate::Error::Task(format!("the operating system's random source failed: {e}")))?;
    for (nonce, chunk) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        for (i, b) in chunk.iter().enumerate() {
            nonce[2 * i] = HEX[(b >> 4) as usize];
            nonce[2 * i + 1] = HEX[(b & 0xf) as usize];
        }
    }
    Ok(())
}

/// Fills `out` with fresh nonces of 8 decimal digits (unchanged by case conversions of the text
/// they sit in), from one call to the operating system's random source.
pub(crate) fn fresh_digits(out: &mut [Nonce]) -> crate::Result<()> {
    let mut bytes = vec![0u8; out.len() * 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| crate::Error::Task(format!("the operating system's random source failed: {e}")))?;
    for (nonce, chunk) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        for (d, b) in nonce.iter_mut().zip(chunk) {
            // A slight bias towards low digits is harmless: marks need unpredictability, not uniformity.
            *d = b'0' + (b % 10);
        }
    }
    Ok(())
}

/// The nonce as text.
pub(crate) fn as_str(n: &Nonce) -> &str {
    // Only ASCII hex digits are ever written into a nonce.
    std::str::from_utf8(n).unwrap_or("00000000")
}
