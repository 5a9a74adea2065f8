//! Label and field selectors (filled in below).
