//! registry
