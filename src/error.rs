//! The one error type of the library, and the codes the C API maps it to.

use std::fmt;

/// What went wrong, coarsely; each kind has a stable negative code in the C API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A NULL pointer, a wrong length, an out-of-range id, bad options.
    InvalidArgument,
    /// The grammar, schema or regex text could not be parsed.
    Parse,
    /// The input is well formed but uses something cgram does not support.
    Unsupported,
    /// A configured limit was reached (size, depth, time).
    Limit,
    /// A file could not be read or has the wrong format.
    Io,
    /// `accept` was given a token the grammar does not allow here.
    TokenRejected,
    /// The matcher has terminated (EOS accepted) and takes no more tokens.
    Terminated,
    /// A bug inside cgram (a caught panic).
    Internal,
}

impl ErrorKind {
    /// The C API code (`CG_ERR_*`), always negative.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::InvalidArgument => -1,
            ErrorKind::Parse => -2,
            ErrorKind::Unsupported => -3,
            ErrorKind::Limit => -4,
            ErrorKind::Io => -5,
            ErrorKind::TokenRejected => -6,
            ErrorKind::Terminated => -7,
            ErrorKind::Internal => -8,
        }
    }
}

/// An error with a message meant for people (it names positions, keywords
/// and limits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub fn parse(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Parse, message)
    }

    pub fn unsupported(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Unsupported, message)
    }

    pub fn limit(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Limit, message)
    }

    pub fn io(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Io, message)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with `context: ` put in front of its message.
    pub fn context(self, context: impl fmt::Display) -> Error {
        Error {
            kind: self.kind,
            message: format!("{context}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `Result` with cgram's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
