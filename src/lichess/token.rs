//! The secret [`Token`]: the bearer token of every Lichess request. It
//! never shows: its `Debug` and `Display` print `Token(***)`, and only
//! the `Authorization` header (marked sensitive) holds it.

use std::fmt;

use reqwest::header::HeaderValue;

/// A Lichess API token. It never shows: `Debug` and `Display` print
/// `Token(***)`.
///
/// ```
/// use kaissa::lichess::Token;
/// let token = Token::new("lip_secret").unwrap();
/// assert_eq!(format!("{token} {token:?}"), "Token(***) Token(***)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a string is not a usable token. Never contains the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is empty")]
    Empty,
    #[error("the token contains characters that cannot appear in an HTTP header")]
    InvalidCharacters,
}

impl Token {
    /// Wraps a token, trimming surrounding whitespace (a token file usually
    /// ends with a newline). It must be non-empty printable ASCII.
    pub fn new(raw: impl Into<String>) -> Result<Token, TokenError> {
        let raw = raw.into();
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(TokenError::Empty);
        }
        if !trimmed.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::InvalidCharacters);
        }
        Ok(Token(trimmed.to_owned()))
    }

    /// The secret itself, for the `Authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    pub(super) fn header(&self) -> HeaderValue {
        // Token::new admits printable ASCII only, which is always a valid
        // header value; fall back to an empty (rejected) header regardless.
        let mut value = HeaderValue::from_str(&format!("Bearer {}", self.expose()))
            .unwrap_or_else(|_| HeaderValue::from_static(""));
        value.set_sensitive(true);
        value
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_trimmed_and_hidden() {
        let token = Token::new("  lip_abc123\n").unwrap();
        assert_eq!(token.expose(), "lip_abc123");
        assert_eq!(format!("{token}"), "Token(***)");
        assert_eq!(format!("{token:?}"), "Token(***)");
        assert_eq!(format!("{:#?}", Some(&token)), "Some(\n    Token(***),\n)");
        assert_eq!(Token::new(" \n"), Err(TokenError::Empty));
        assert_eq!(Token::new("a b"), Err(TokenError::InvalidCharacters));
        assert_eq!(Token::new("tök"), Err(TokenError::InvalidCharacters));
        assert!(token.header().is_sensitive());
    }
}
