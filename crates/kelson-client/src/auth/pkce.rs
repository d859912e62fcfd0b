//! PKCE (RFC 7636) with S256, and the random values of an authorization request.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};

/// A fresh random value: 32 bytes from the operating system, base64url without padding (43
/// characters, within PKCE's 43 to 128 and its alphabet).
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    B64.encode(bytes)
}

/// One authorization request's PKCE pair.
#[derive(Clone)]
pub(crate) struct Pkce {
    /// Kept by the client until the token request.
    pub(crate) verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent with `code_challenge_method=S256`.
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn new() -> Self {
        let verifier = random_token();
        let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_rfc_7636_s256_of_the_verifier() {
        // RFC 7636 Appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            B64.encode(Sha256::digest(verifier.as_bytes())),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let pkce = Pkce::new();
        assert_eq!(pkce.verifier.len(), 43);
        assert_ne!(pkce.verifier, Pkce::new().verifier);
        assert!(
            pkce.verifier
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
