//! USM/DSM meters and HashPipe (placeholder: being written).
