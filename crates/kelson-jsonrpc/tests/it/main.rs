//! Property tests of the two-phase decode.
mod decode_props;
