//! Name and metadata validation.
