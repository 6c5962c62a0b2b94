//! Random ids for the running agent (the core's tests use counting ids).

use crate::core::{IdKind, IdSource};

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

pub struct RandomIds;

pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    secret_bytes().unwrap_or_else(|_| {
        // Ids need only be unique, not secret: with no platform RNG (never
        // seen on Workers) the clock spreads them.
        let seed = js_sys::Date::now() as u64;
        let mut bytes = [0u8; N];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (seed >> ((i % 8) * 8)) as u8 ^ (i as u8).wrapping_mul(31);
        }
        bytes
    })
}

/// Bytes for a secret (a PKCE verifier, an OAuth state nonce): from the
/// platform RNG or not at all, never from a guessable fallback.
pub(crate) fn secret_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)
        .map_err(|e| format!("no secure random source for a secret: {e}"))?;
    Ok(bytes)
}

/// A random base-62 token of `len` characters (at most 32).
pub fn random_token(len: usize) -> String {
    random_bytes::<32>()
        .iter()
        .take(len)
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect()
}

fn uuid_v4() -> String {
    let mut b = random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

impl IdSource for RandomIds {
    fn new_id(&mut self, kind: IdKind) -> String {
        match kind {
            IdKind::Request => uuid_v4(),
            IdKind::Message | IdKind::Approval => random_token(16),
        }
    }
}
