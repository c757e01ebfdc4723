//! Integration tests and examples for fusion.
