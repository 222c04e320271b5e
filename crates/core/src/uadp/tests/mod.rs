//! Tests of the UADP codec.
