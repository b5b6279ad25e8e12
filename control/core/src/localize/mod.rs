//! Localizers (placeholder: being written).
